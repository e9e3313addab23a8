#!/usr/bin/python3
"""cli_conventions.py — the command-line conventions of every `tinygpt`
command, and the man page and bash completion against them:

  * help: every command takes -h and --help (exit 0, the same text as
    `tinygpt help CMD`); `tinygpt help` lists every command and says the
    exit codes and the environment variables; every option of the command's
    table (--list-options) has a row in --help and every row is an option;
    every option in the usage lines has a row; a row of an integer or
    number option gives its range [lo, hi] and its default (or says it is
    required), a list option its range, every row a description;
  * the parser: --opt=value, a flag given a value, -- ending the options,
    unknown options, the message naming the flag as typed;
  * --version: version, git revision (that of the source tree when it is a
    git checkout), compiler, the ISAs compiled in and supported;
  * the man page (docs/tinygpt.1, made at build time) has a section per
    command, and in it exactly the options --help lists; the completion,
    run in bash, offers exactly the commands and each command's options;
  * meson install --destdir: the man page, the completion and the models
    land where they belong, and the installed binary's default model is
    the one in its own data dir, the build tree's binary's the source
    tree's (TINYGPT_MODEL overrides both).

usage: cli_conventions.py TINYGPT BUILD_DIR SOURCE_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "docs"))
import helptext as ht  # noqa: E402

# a range: [lo, hi], [lo, hi) or (lo, hi] with a number for lo
RANGE = re.compile(r"\[[^\]\)]*,[^\]\)]*[\]\)]|\(\s*[-+]?[0-9][0-9.e+-]*\s*,[^\]\)]*\]")


class Checks:
    def __init__(self):
        self.n, self.failures = 0, []

    def check(self, ok, what):
        self.n += 1
        if not ok:
            self.failures.append(what)
        return ok


def env_without(*names):
    e = dict(os.environ)
    for n in names:
        e.pop(n, None)
    return e


def run(exe, *args, env=None):
    return subprocess.run([exe] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=120, env=env or env_without("TINYGPT_MODEL", "TINYGPT_ISA"))


def check_help(ck, exe, cmds):
    for cmd, _ in cmds:
        code, h = ht.command_help(exe, cmd)
        r = run(exe, cmd, "-h")
        hc = run(exe, "help", cmd)
        ck.check(code == 0 and r.returncode == 0 and r.stdout == h.text and hc.returncode == 0
                 and hc.stdout == h.text and h.text.startswith("usage: tinygpt " + cmd),
                 "%s: --help / -h / help %s disagree or fail" % (cmd, cmd))
        check_rows(ck, exe, cmd, h)


def check_rows(ck, exe, cmd, h, *mode):
    """h, the --help of `cmd *mode`, against that table (--list-options)."""
    lcode, table = ht.list_options(exe, cmd, *mode)
    cmd = " ".join([cmd, *mode])
    ck.check(lcode == 0 and table, "%s --list-options: exit %d" % (cmd, lcode))
    check_width(ck, cmd + " --help", h.text)
    rows = set(h.names())
    table.pop("-h", None), table.pop("--help", None)  # every command's, said by `tinygpt help`
    ck.check(set(table) - rows == set(), "%s: options without a row in --help: %s"
             % (cmd, sorted(set(table) - rows)))
    ck.check(rows - set(table) == set(), "%s: rows in --help that are no option: %s"
             % (cmd, sorted(rows - set(table))))
    # option rows: a description on the row's own line starts in the help's
    # description column (the most common one) if the option fits before it,
    # else well past it (an overflow row); one column off reads as a typo, as
    # compare's "-p, --prompt PROMPT" once was
    cols = []
    for line in h.text.splitlines():
        m = re.match(r"(  -\S(?:\S| (?! ))*)  +(?=\S)", line)
        if m: cols.append((m.end(), len(m.group(1)), line))
    if cols:
        col = max(set(c for c, _, _ in cols), key=[c for c, _, _ in cols].count)
        bad = [line for c, w, line in cols if (c != col if w + 2 <= col else c < col + 2)]
        ck.check(not bad, "%s: option rows whose description is not in column %d: %s" % (cmd, col, bad))
    missing = [o for o in h.usage_options() if o not in rows]
    ck.check(not missing, "%s: usage-line options without a row: %s" % (cmd, missing))
    for names, meta, desc in h.rows:
        kind = table.get(names[0], "?")
        what = "%s %s (%s): %r" % (cmd, ", ".join(names), kind, desc)
        ck.check(len(desc) >= 8, "no description: " + what)
        if kind in ("int", "number"):
            ck.check(RANGE.search(desc) and ("default" in desc or "required" in desc),
                     "no range or default: " + what)
        if kind == "list":
            ck.check(RANGE.search(desc), "no range: " + what)
        if kind != "flag" and names[0] not in ("-h",):
            ck.check(meta is not None, "a valued option without its metavariable: " + what)


def cut_parens(text, most=40):
    """Parenthesised phrases of at most `most` characters that a line break cuts
    in two, as "(prev >=" / "0.5)": each (line, next line)."""
    cuts = []
    lines = text.splitlines()
    for a, b in zip(lines, lines[1:]):
        opened = []
        for j, ch in enumerate(a):
            if ch == "(":
                opened.append(j)
            elif ch == ")" and opened:
                opened.pop()
        if not opened:
            continue
        head, rest, depth = a[opened[-1]:].rstrip(), b.lstrip(), 1
        for k, ch in enumerate(rest):
            depth += (ch == "(") - (ch == ")")
            if depth == 0:
                if len(head) + 1 + k + 1 <= most:
                    cuts.append((a.strip(), b.strip()))
                break
    return cuts


def check_width(ck, what, text):
    """Help fits an 80-column terminal (characters, not bytes: µ, ×, Δ are one
    column), and no short parenthesis is cut in two by the wrapping."""
    wide = ["%d: %s" % (len(line), line) for line in text.splitlines() if len(line) > 80]
    ck.check(not wide, "%s: lines over 80 columns: %s" % (what, wide))
    cuts = cut_parens(text)
    ck.check(not cuts, "%s: a short parenthesis cut by a line break (move it whole to the next line): %s"
             % (what, cuts))


def check_task_help(ck, exe, src):
    """The task modes of train, eval, attention and compare (another option
    table each, chosen before parsing by --task or a model that records a
    task) follow the same conventions; the plain commands have a --task row
    that says how to reach them, and the long aliases reach them too."""
    with tempfile.TemporaryDirectory(prefix="tg-task-") as tmp:
        mt = os.path.join(tmp, "mt.gguf")
        r = run(exe, "train", "--task=marked-tuple", "--steps", 1, "--embd", 8, "--heads", 1,
                "--batch", 1, "--eval-seqs", 1, "--output", mt)
        if not ck.check(r.returncode == 0, "train --task=... --output: %r" % r.stderr[-300:]):
            return
        modes = [("train", "--task", "marked-tuple"), ("eval", "--task", "marked-tuple"),
                 ("eval", "--model", mt), ("attention", "--task", "induction"),
                 ("attention", "--model=" + mt), ("compare", mt, mt)]
        for cmd, *mode in modes:
            code, h = ht.command_help(exe, cmd, *mode)
            ck.check(code == 0 and h.text.startswith("usage: tinygpt " + cmd) and "--task" in h.text
                     or cmd == "compare" and "train --task" in h.text,
                     "%s %s --help: exit %d %r" % (cmd, mode, code, h.text[:200]))
            plain = ht.command_help(exe, cmd)[1].text
            ck.check(h.text != plain, "%s %s --help is the task mode's, not the command's" % (cmd, mode))
            check_rows(ck, exe, cmd, h, *mode)
        for cmd in ("train", "eval", "attention"):
            row = ht.command_help(exe, cmd)[1].row_of("--task")
            ck.check(row and "%s --task NAME --help" % cmd in row[2],
                     "%s --help: a --task row naming its help: %r" % (cmd, row))
        r = run(exe, "eval", "--model=" + mt, "-n", 2, "--json")
        ck.check(r.returncode == 0 and '"task": "marked-tuple"' in r.stdout, "eval --model=TASK: %r" % r.stderr)
        r = run(exe, "attention", "--model", mt, "--threads", 1, "--json")
        ck.check(r.returncode == 0 and r.stdout.startswith("{"), "attention --model TASK: %r" % r.stderr)


def check_top(ck, exe, cmds):
    r = run(exe, "help")
    r2 = run(exe, "--help")
    out = r.stdout
    ck.check(r.returncode == 0 and r2.stdout == out, "tinygpt help / --help")
    check_width(ck, "tinygpt --help", out)
    names = [c for c, _ in cmds]
    ck.check(len(names) >= 11 and all(re.search(r"^  %s +\S" % c, out, re.M) for c in names),
             "tinygpt help lists %s" % names)
    for needle in ("TINYGPT_MODEL", "TINYGPT_ISA", "0 success", "1 runtime error", "2 usage error",
                   "--version", "help COMMAND"):
        ck.check(needle in out, "tinygpt help says %r" % needle)
    r = run(exe, "help", "nosuch")
    ck.check(r.returncode == 2 and "nosuch" in r.stderr, "help nosuch: %d %r" % (r.returncode, r.stderr))
    r = run(exe)
    ck.check(r.returncode == 2 and "usage" in r.stderr, "no command: exit 2 with the usage")


def check_parser(ck, exe, src):
    model = os.path.join(src, "weights", "shakespeare-4h.gguf")
    cases = [
        # (args, exit, needles)
        (["eval", "-m", model, "-f", "/dev/null", "--ctx=1"], 2, ["--ctx", "'1'", "[2, "]),
        (["eval", "--model=" + model, "--file=/nonexistent/x.txt"], 1, ["/nonexistent/x.txt"]),
        (["eval", "--json=yes"], 2, ["--json takes no value"]),
        (["eval", "--nope=3"], 2, ["unknown option '--nope=3'"]),
        (["eval", "-m", model, "--", "-f"], 2, ["unexpected argument '-f'"]),
        (["inspect", "--", "-no-such-file"], 1, ["-no-such-file"]),
        (["inspect", "-no-such-file"], 2, ["unknown option '-no-such-file'"]),
        (["inspect", "--json", "--", "--help"], 1, ["--help"]),   # after --, even --help is a PATH
        (["bench", "--threads=0"], 2, ["--threads", "[1, 256]"]),
        (["profile", "--n-predict=x"], 2, ["--n-predict", "'x'"]),
        (["attention", "--layer="], 2, ["--layer", "''"]),
        (["init", "--output"], 2, ["--output needs a value"]),
        (["train", "--threads=2000"], 2, ["--threads", "[1, 1024]"]),
    ]
    for args, code, needles in cases:
        r = run(exe, *args)
        ck.check(r.returncode == code and r.stderr.count("\n") == 1 and all(n in r.stderr for n in needles),
                 "tinygpt %s: exit %d (want %d) %r" % (" ".join(args), r.returncode, code, r.stderr))
    # the environment's ISA and CPU mask: a usage error naming the variable,
    # not one about the model file (a misspelt mask used to hide nothing)
    for var, val, needles in (("TINYGPT_CPU_MASK", "avx512", ["TINYGPT_CPU_MASK", "'avx512'", "avx512_vnni"]),
                              ("TINYGPT_ISA", "avx1024", ["TINYGPT_ISA", "'avx1024'"])):
        args = ["generate", "-m", model, "-p", "x", "-n", "1"]
        r = run(exe, *args, env=dict(env_without("TINYGPT_MODEL", "TINYGPT_ISA"), **{var: val}))
        ck.check(r.returncode == 2 and r.stderr.count("\n") == 1 and all(n in r.stderr for n in needles)
                 and model not in r.stderr, "%s=%s tinygpt generate: exit %d %r" % (var, val, r.returncode, r.stderr))
    r = run(exe, "generate", "-m", model, "-p", "x", "-n", "1",
            env=dict(env_without("TINYGPT_MODEL", "TINYGPT_ISA"), TINYGPT_CPU_MASK="avx512_vnni,all"))
    ck.check(r.returncode == 0, "TINYGPT_CPU_MASK=avx512_vnni,all: exit %d %r" % (r.returncode, r.stderr))
    # --opt=value gives what --opt value gives
    a = run(exe, "tokenize", "-m", model, "-p", "Hello world", "--json")
    b = run(exe, "tokenize", "--model=" + model, "--prompt=Hello world", "--json")
    c = run(exe, "tokenize", "--model", model, "--prompt", "--json")  # a value that looks like a flag
    ck.check(a.returncode == 0 and a.stdout == b.stdout and c.returncode == 0 and c.stdout != a.stdout,
             "tokenize --opt=value: %r %r %r" % (a.stdout, b.stdout, c.stdout))
    r = run(exe, "tokenize", "-m", model, "--prompt=a=b", "--json")
    r2 = run(exe, "tokenize", "-m", model, "-p", "a=b", "--json")
    ck.check(r.returncode == 0 and r.stdout == r2.stdout, "--prompt=a=b keeps the second '='")


def check_version(ck, exe, src):
    r = run(exe, "--version")
    out = r.stdout
    ck.check(r.returncode == 0 and re.match(r"tinygpt \d+\.\d+\.\d+\n", out), "--version: %r" % out)
    g = subprocess.run(["git", "-C", src, "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True)
    m = re.search(r"^git revision: (\S+)$", out, re.M)
    if g.returncode == 0:
        ck.check(m and m.group(1).split("-")[0][:7] == g.stdout.strip()[:7] or
                 (m and g.stdout.strip()[:7] in m.group(1)),
                 "git revision %s vs HEAD %s" % (m and m.group(1), g.stdout.strip()))
    else:
        ck.check(m and m.group(1) == "unknown", "git revision outside git: %s" % (m and m.group(1)))
    ck.check(re.search(r"^compiler: (gcc|.*clang).*\d+\.\d+", out, re.M | re.I), "compiler line: %r" % out)
    comp = re.search(r"^ISAs compiled in: (.*)$", out, re.M)
    sup = re.search(r"^this CPU supports: (.*)$", out, re.M)
    ok = comp and sup and "scalar" in comp.group(1).split() and "scalar" in sup.group(1).split()
    ck.check(ok, "ISA lines: %r" % out)
    if ok:
        # every ISA this CPU supports and the build has is accepted by --isa; one it lacks is refused
        for isa in ("scalar", "avx2", "avx512", "neon"):
            usable = isa in comp.group(1).split() and isa in sup.group(1).split()
            e = env_without("TINYGPT_MODEL")
            e["TINYGPT_ISA"] = isa
            rr = run(exe, "tokenize", "-p", "a", env=e)  # no model run: only a check it parses
            bb = run(exe, "bench", "--isa", isa, "-p", "2", "-n", "0", "-r", "1", "--no-roofline",
                     "-m", os.path.join(src, "weights", "shakespeare-1h.gguf"))
            ck.check((bb.returncode == 0) == usable, "bench --isa %s: exit %d, listed usable %s %r"
                     % (isa, bb.returncode, usable, bb.stderr))


def check_legends(ck, exe, src):
    """profile, bench and compare define every column they print, in --help
    and (profile, compare) in a legend under the tables."""
    m1 = os.path.join(src, "weights", "shakespeare-1h.gguf")
    m4 = os.path.join(src, "weights", "shakespeare-4h.gguf")
    with tempfile.TemporaryDirectory(prefix="tg-leg-") as tmp:
        text = os.path.join(tmp, "t.txt")
        with open(text, "w") as f:
            f.write("ROMEO:\nBut soft, what light through yonder window breaks?\n" * 4)
        runs = {
            "profile": run(exe, "profile", "-m", m4, "--prompt-tokens", 8, "-n", 2, "--no-roofline"),
            "profile-sweep": run(exe, "profile", "-m", m4, "--ctx-sweep", "4,8", "--sweep-steps", 1,
                                 "--no-roofline"),
            "compare": run(exe, "compare", m1, m4, "-f", text, "--ctx", 16, "--head-tokens", 8),
        }
    # the header line of each table, split into column names
    headers = {
        "profile": ["calls", "total ms", "% phase", "µs/call", "GFLOP/s", "GB/s", "% roof", "(outside ops)"],
        "profile-sweep": ["ctx", "step µs", "attn µs", "attn %", "µs/head", "scores", "softmax", "mix",
                          "GFLOP/s", "% roof"],
        "compare": ["tokens scored", "nats/token", "perplexity", "nats/byte", "loss @ pos", "in-context score",
                    "prefill", "decode", "entropy", "conf", "sink", "prev", "induct", "Δloss", "class",
                    "all heads", "best head", "random head", "best is", "top-1 agreement", "KL(A||B)"],
    }
    for name, r in runs.items():
        out = r.stdout
        if not ck.check(r.returncode == 0, "%s: exit %d %r" % (name, r.returncode, r.stderr[-300:])):
            continue
        legend = out[out.rfind("columns:" if name != "compare" else "rows and columns:"):]
        body = out[:len(out) - len(legend)]
        ck.check(len(legend) > 100, "%s: a legend under the tables" % name)
        check_width(ck, name + "'s legend", legend)
        for col in headers[name]:
            ck.check(col in body and col in legend, "%s: column %r printed %s, defined %s"
                     % (name, col, col in body, col in legend))
        cmd = name.split("-")[0]
        h = run(exe, cmd, "--help").stdout
        ck.check(all(col in h for col in headers[name]), "%s --help defines %s" %
                 (cmd, [c for c in headers[name] if c not in h]))
    h = run(exe, "bench", "--help").stdout
    ck.check(all(c in h for c in ("threads", "test", "t/s", "GFLOP/s", "GB/s", "roof", "pp", "tg")),
             "bench --help defines its columns")


def man_sections(path):
    """{command: [options]} from the .SS sections of the man page."""
    secs, cur = {}, None
    lines = open(path, encoding="utf-8").read().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'^\.SS "tinygpt (\S+)"', line)
        if m:
            cur = secs.setdefault(m.group(1), [])
        elif line.startswith(".SH"):
            cur = None
        elif cur is not None and line == ".TP" and i + 1 < len(lines):
            for o in re.findall(r"\\fB(\\-(?:\\-|[^\\])*)\\fR", lines[i + 1]):
                cur.append(o.replace("\\-", "-"))
    return secs


def complete(script, words):
    """What the completion offers for the words (the last one is being typed)."""
    prog = ("source %s\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_tinygpt\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n"
            % (os.path.abspath(script), " ".join("'%s'" % w for w in words), len(words) - 1))
    r = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, cwd="/", timeout=30)
    return set(x for x in r.stdout.split("\n") if x)


def check_docs(ck, exe, build, cmds):
    man = os.path.join(build, "docs", "tinygpt.1")
    comp = os.path.join(build, "docs", "tinygpt")
    if not ck.check(os.path.exists(man) and os.path.exists(comp), "built docs/tinygpt.1 and docs/tinygpt"):
        return
    secs = man_sections(man)
    names = [c for c, _ in cmds]
    ck.check(sorted(secs) == sorted(names), "man page sections %s vs commands %s" % (sorted(secs), names))
    r = subprocess.run(["man", "--warnings", "-l", "-Tutf8", man], capture_output=True, text=True,
                       env=dict(os.environ, MANWIDTH="80")) if shutil.which("man") else None
    if r is not None:
        ck.check(r.returncode == 0 and "tinygpt eval" in r.stdout and not r.stderr.strip(),
                 "man -l renders without warnings: %r" % r.stderr[:300])
    ck.check(complete(comp, ["tinygpt", ""]) == set(names) | {"help", "--help", "--version"},
             "completion of the command: %s" % complete(comp, ["tinygpt", ""]))
    ck.check(complete(comp, ["tinygpt", "help", "ev"]) == {"eval"}, "completion of help ev")
    for cmd in names:
        _, h = ht.command_help(exe, cmd)
        want = set(h.names())
        got = set(secs.get(cmd, []))
        ck.check(got == want, "man page, %s: missing %s, extra %s" % (cmd, sorted(want - got), sorted(got - want)))
        offered = complete(comp, ["tinygpt", cmd, "-"])
        want |= {"-h", "--help"}
        ck.check(offered == want, "completion, %s: missing %s, extra %s"
                 % (cmd, sorted(want - offered), sorted(offered - want)))
    ck.check(complete(comp, ["tinygpt", "eval", "--isa", "a"]) == {"avx2", "avx512"}, "completion of --isa a")
    ck.check(complete(comp, ["tinygpt", "convert", "--dtype", ""]) == {"f32", "f16", "bf16", "q8_0", "q4_0"}, "completion of --dtype")
    ck.check("etc" in complete(comp, ["tinygpt", "eval", "-f", "et"]), "completion of a file after -f")


def check_install(ck, exe, build, src):
    with tempfile.TemporaryDirectory(prefix="tg-inst-") as dest:
        r = subprocess.run(["meson", "install", "-C", build, "--destdir", dest, "--no-rebuild", "--quiet"],
                           capture_output=True, text=True, timeout=300)
        if not ck.check(r.returncode == 0, "meson install: %s" % r.stderr[-500:]):
            return
        found = {}
        for root, _, files in os.walk(dest):
            for f in files:
                found.setdefault(f, []).append(os.path.relpath(os.path.join(root, f), dest))
        man = [p for p in found.get("tinygpt.1", []) if p.endswith("man1/tinygpt.1")]
        compl = [p for p in found.get("tinygpt", []) if p.endswith("share/bash-completion/completions/tinygpt")]
        binp = [p for p in found.get("tinygpt", []) if p.endswith("bin/tinygpt")]
        models = [p for p in found.get("shakespeare-4h.gguf", []) if p.endswith("share/tinygpt/shakespeare-4h.gguf")]
        ck.check(man and compl and binp and models, "installed: man %s completion %s bin %s model %s"
                 % (man, compl, binp, models))
        lic = os.path.join(src, "LICENSE")
        ck.check(os.path.exists(lic) and open(lic).read().startswith("MIT License\n") and
                 "the tinygpt authors" in open(lic).read() and
                 re.search(r"license\s*:\s*'MIT'", open(os.path.join(src, "meson.build")).read()),
                 "LICENSE: the MIT license meson.build declares")
        if not (binp and models):
            return
        inst = os.path.join(dest, binp[0])
        e = env_without("TINYGPT_MODEL", "TINYGPT_ISA")
        libdirs = sorted(set(os.path.dirname(os.path.join(dest, p)) for name, ps in found.items()
                             for p in ps if name.startswith("libtinygpt.so")))
        e["LD_LIBRARY_PATH"] = ":".join(libdirs + [e.get("LD_LIBRARY_PATH", "")])
        r = subprocess.run([inst, "--version"], capture_output=True, text=True, env=e, timeout=60)
        m = re.search(r"^default model: (.*)$", r.stdout, re.M)
        got = os.path.realpath(m.group(1)) if m and os.path.exists(m.group(1)) else None
        want = os.path.realpath(os.path.join(dest, models[0]))
        ck.check(r.returncode == 0 and got == want,
                 "installed binary's default model: %s, want %s (%r)" % (m and m.group(1), want, r.stderr))
        r = subprocess.run([exe, "--version"], capture_output=True, text=True, env=e, timeout=60)
        m = re.search(r"^default model: (.*)$", r.stdout, re.M)
        ck.check(m and os.path.realpath(m.group(1)) ==
                 os.path.realpath(os.path.join(src, "weights", "shakespeare-4h.gguf")),
                 "build-tree binary's default model: %s" % (m and m.group(1)))
        # the installed binary runs its default model (not the source tree's)
        r = subprocess.run([inst, "attention", "--layer", "0", "--head", "0"], capture_output=True,
                           text=True, env=e, timeout=120)
        ck.check(r.returncode == 0 and os.path.realpath(r.stdout.split(":")[0]) == want,
                 "installed attention uses %r" % r.stdout[:120])
        e2 = dict(e, TINYGPT_MODEL="/some/where.gguf")
        r = subprocess.run([inst, "--version"], capture_output=True, text=True, env=e2, timeout=60)
        ck.check("default model: /some/where.gguf" in r.stdout, "TINYGPT_MODEL overrides: %r" % r.stdout)


def main():
    exe, build, src = sys.argv[1:4]
    ck = Checks()
    cmds = ht.commands(exe)
    check_top(ck, exe, cmds)
    check_help(ck, exe, cmds)
    check_task_help(ck, exe, src)
    check_parser(ck, exe, src)
    check_version(ck, exe, src)
    check_legends(ck, exe, src)
    check_docs(ck, exe, build, cmds)
    if "--no-install" not in sys.argv:
        check_install(ck, exe, build, src)
    for f in ck.failures:
        print("FAIL", f)
    print("%d passed, %d failed" % (ck.n - len(ck.failures), len(ck.failures)))
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
