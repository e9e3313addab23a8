#!/usr/bin/env python3
"""gen_doc.py — the man page and the bash completion of `tinygpt`, made at
build time from what the built binary says about itself (helptext.py), so
neither can drift from --help and the option tables:

  gen_doc.py man TINYGPT TEMPLATE OUT   tinygpt.1: TEMPLATE (the prose) with
                                        @VERSION@ and @COMMANDS@ (a section per
                                        command from its --help) filled in
  gen_doc.py bash TINYGPT OUT           the completion: commands, each one's
                                        options, ISA and dtype names, files
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helptext as ht  # noqa: E402


def roff(s):
    """Text for a roff line: backslashes, dashes, and a leading . or '."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + s if s[:1] in (".", "'") else s


def man_commands(exe):
    out = []
    for name, desc in ht.commands(exe):
        _, h = ht.command_help(exe, name)
        out += ['.SS "%s"' % roff("tinygpt " + name), roff(desc[:1].upper() + desc[1:] + "."),
                ".PP", ".nf"]
        out += [roff(u.replace("usage: ", "", 1)) for u in h.usage]
        out += [".fi"]
        para, item = [], [False]  # a paragraph, and whether it is an indented item

        def flush():
            if para:
                out.extend([".IP \"\" 4" if item[0] else ".PP", roff(" ".join(p.strip() for p in para))])
                para.clear()
        for kind, v in h.blocks:
            indent = len(v) - len(v.lstrip()) if kind == "text" else 0
            if kind == "row":
                flush()
                names, meta, desc = h.rows[v]
                head = ", ".join("\\fB%s\\fR" % roff(n) for n in names)
                if meta:
                    head += " \\fI%s\\fR" % roff(meta)
                out += [".TP", head, roff(desc)]
            elif not v.strip():
                flush()
            elif 1 <= indent <= 3 or (indent == 0 and item[0]):  # a new item, or prose after items
                flush()
                item[0] = indent > 0
                para.append(v)
            else:  # prose, or the continuation of an item
                para.append(v)
        flush()
    return "\n".join(out)


def man(exe, template, dest):
    _, ver, _ = ht.run(exe, "--version")
    version = ver.split()[1] if ver.split() else "unknown"
    text = open(template, encoding="utf-8").read()
    text = text.replace("@VERSION@", version).replace("@COMMANDS@", man_commands(exe))
    with open(dest, "w", encoding="utf-8") as f:
        f.write(text)


BASH = r'''# bash completion for tinygpt; made by docs/gen_doc.py from `tinygpt help`,
# each command's --help and --list-options: do not edit.
_tinygpt_commands="@COMMANDS@"
@TABLES@
_tinygpt() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    COMPREPLY=()
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "help --help --version $_tinygpt_commands" -- "$cur"))
        return
    fi
    local cmd=${COMP_WORDS[1]}
    if [[ $cmd == help ]]; then
        [[ $COMP_CWORD -eq 2 ]] && COMPREPLY=($(compgen -W "$_tinygpt_commands" -- "$cur"))
        return
    fi
    [[ " $_tinygpt_commands " == *" $cmd "* ]] || return
    local opts_var=_tinygpt_opts_$cmd vals_var=_tinygpt_vals_$cmd
    if [[ $COMP_CWORD -ge 3 && " ${!vals_var} " == *" $prev "* ]]; then
        case $prev in
            --isa) COMPREPLY=($(compgen -W "scalar avx2 avx512 neon" -- "$cur")) ;;
            --dtype|--type|--keep-output) COMPREPLY=($(compgen -W "f32 f16 bf16 q8_0 q4_0" -- "$cur")) ;;
            *) COMPREPLY=($(compgen -f -- "$cur")) ;;
        esac
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "${!opts_var}" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -o filenames -o bashdefault -F _tinygpt tinygpt
'''


def bash(exe, dest):
    cmds = [c for c, _ in ht.commands(exe)]
    tables = []
    for c in cmds:
        _, opts = ht.list_options(exe, c)
        names = sorted(opts)
        vals = sorted(n for n, k in opts.items() if k != "flag")
        tables.append('_tinygpt_opts_%s="%s"' % (c, " ".join(names)))
        tables.append('_tinygpt_vals_%s="%s"' % (c, " ".join(vals)))
    text = BASH.replace("@COMMANDS@", " ".join(cmds)).replace("@TABLES@", "\n".join(tables))
    with open(dest, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    if sys.argv[1] == "man":
        man(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "bash":
        bash(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: gen_doc.py man TINYGPT TEMPLATE OUT | bash TINYGPT OUT")
