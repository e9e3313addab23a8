"""helptext.py — reads what `tinygpt` says about itself: the commands of
`tinygpt help`, and for each command its --help (usage lines, option table,
prose) and --list-options (every option of its table and whether it takes a
value). Used by gen_doc.py (the man page and the bash completion) and by the
tests that check --help against the tables."""
import re
import subprocess

# An option-table line: "  -m, --model MODEL   description" (names, an
# optional metavariable, two or more spaces, the description).
NAME = r"-{1,2}[A-Za-z0-9][\w-]*"
ROW = re.compile(r"^  (%s(?:, %s)*)(?: ([^\s,][^\s]*))?(?:\s{2,}(.*)|\s*$)" % (NAME, NAME))
USAGE_OPT = re.compile(r"(?<![\w-])(-{1,2}[A-Za-z][\w-]*)")


def run(exe, *args):
    r = subprocess.run([exe] + list(args), capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def commands(exe):
    """[(name, one-line description)] from `tinygpt help`."""
    _, out, _ = run(exe, "help")
    cmds, inside = [], False
    for line in out.splitlines():
        if line.strip() == "commands:":
            inside = True
        elif inside and line.startswith("  ") and line.strip():
            name, desc = line.strip().split(None, 1)
            cmds.append((name, desc))
        elif inside:
            break
    return cmds


def list_options(exe, cmd, *mode):
    """{name: kind} for every name (and alias) of the command's table (mode:
    arguments that select another table, e.g. "--task", NAME)."""
    code, out, _ = run(exe, cmd, *mode, "--list-options")
    opts = {}
    for line in out.splitlines():
        names, kind = line.split()
        for n in names.split(","):
            opts[n] = kind
    return code, opts


class Help:
    """One command's --help: usage lines, option rows, prose."""

    def __init__(self, text):
        self.text = text
        lines = text.splitlines()
        self.usage, i = [], 0
        # the usage: the first line and the deeper-indented ones after it
        while i < len(lines) and (i == 0 or (lines[i].startswith("      ") and lines[i].strip()
                                             and not ROW.match(lines[i]))):
            self.usage.append(lines[i])
            i += 1
        self.rows = []   # [names, metavar, description], in order
        self.blocks = []  # ("row", index) or ("text", line), in order, after the usage
        for line in lines[i:]:
            m = ROW.match(line)
            if m:
                self.rows.append([m.group(1).split(", "), m.group(2), (m.group(3) or "").strip()])
                self.blocks.append(("row", len(self.rows) - 1))
            elif line.startswith("    ") and self.blocks and self.blocks[-1][0] == "row":
                r = self.rows[self.blocks[-1][1]]
                r[2] = (r[2] + " " + line.strip()).strip()
            else:
                self.blocks.append(("text", line))

    def usage_options(self):
        return sorted(set(USAGE_OPT.findall(" ".join(self.usage))))

    def names(self):
        out = []
        for r in self.rows:
            out += r[0]
        return out

    def row_of(self, name):
        for r in self.rows:
            if name in r[0]:
                return r
        return None


def command_help(exe, cmd, *mode):
    code, out, _ = run(exe, cmd, *mode, "--help")
    return code, Help(out)
