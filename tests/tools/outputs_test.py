#!/usr/bin/python3
"""Output paths are checked before any work, the same way by every command:
an empty path is a usage error (exit 2), a missing or unwritable folder, a
folder or a device as the output is exit 1 with one line and nothing done
(no stdout, no file); and a full standard output (/dev/full) is exit 1 for
every command, not a silent 0.

usage: outputs_test.py TINYGPT
"""
import os
import subprocess
import sys
import tempfile
import time

TG = sys.argv[1]
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
M1 = os.path.join(SRC, "weights", "shakespeare-1h.gguf")
M4 = os.path.join(SRC, "weights", "shakespeare-4h.gguf")
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def expect(args, code, needle, stdout=None):
    what = " ".join(repr(a) if not a else a for a in args)
    try:
        r = subprocess.run([TG, *args], capture_output=stdout is None, stdout=stdout,
                           stderr=subprocess.PIPE if stdout is not None else None, timeout=120)
    except subprocess.TimeoutExpired:
        check(False, f"{what}: timed out")
        return
    check(r.returncode == code, f"{what}: exit {r.returncode}, want {code} ({r.stderr!r})")
    check(needle in r.stderr, f"{what}: stderr {r.stderr!r} lacks {needle!r}")
    check(r.stderr.count(b"\n") == 1 and r.stderr.startswith(b"tinygpt "), f"{what}: not one line: {r.stderr!r}")
    if stdout is None:
        check(r.stdout == b"", f"{what}: work was done before the output was checked: {r.stdout[:200]!r}")


with tempfile.TemporaryDirectory() as d:
    text = os.path.join(d, "text.txt")
    with open(text, "w") as f:
        f.write("ROMEO: But soft, what light through yonder window breaks? It is the east.\n" * 30)
    regular = os.path.join(d, "file")
    open(regular, "w").close()
    missing = os.path.join(d, "no", "such")
    # a non-regular output (never /dev/null: a regression would replace it)
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    EMPTY = b"the output path is empty"
    NODIR = b"No such file or directory"
    init = ["init", "--layers", "1", "--heads", "1", "--embd", "8", "--ctx", "8", "--byte-vocab"]

    # compare --svg "" wrote /A.svg and /B.svg; a bad --svg DIR was found
    # only after the whole comparison
    root_before = {p: os.path.exists(p) for p in ("/A.svg", "/B.svg")}
    expect(["compare", M1, M4, "-f", text, "--svg", ""], 2, b"--svg: the folder name is empty")
    check(all(os.path.exists(p) == e for p, e in root_before.items()), "compare --svg '' wrote into /")
    expect(["compare", M1, M4, "-f", text, "--svg", missing], 1, missing.encode() + b"/A.svg: cannot write")
    expect(["compare", M1, M4, "-f", text, "--svg", regular], 1, b"Not a directory")

    # train -o "": passed the check, trained, failed at the first checkpoint
    t0 = time.time()
    expect(["train", "-f", text, "-o", "", "--steps", "100000"], 2, b"-o: " + EMPTY)
    check(time.time() - t0 < 10, "train -o '' trained before failing")
    expect(["train", "-f", text, "-o", missing + ".gguf"], 1, NODIR)
    expect(["train", "-f", text, "-o", d], 1, b"is a directory")

    # convert, init, quantize, profile --trace, attention --svg (text and task models):
    # all the work, then the failure
    for args, flag in [(["convert", M4, "-o"], b"-o"), (init + ["-o"], b"-o"), (["quantize", "--type", "q8_0", M4], b"OUT"),
                       (["profile", "-m", M4, "-n", "4", "--no-roofline", "--trace"], b"--trace"),
                       (["attention", "-m", M4, "--svg"], b"--svg"),
                       (["attention", "-m", os.path.join(SRC, "weights", "marked-tuple-4h.gguf"), "--svg"],
                        b"--svg")]:
        expect(args + [""], 2, flag + b": " + EMPTY)
        expect(args + [os.path.join(missing, "out")], 1, flag + b": " + missing.encode())
        expect(args + [d], 1, b"is a directory")
        expect(args + [fifo], 1, fifo.encode() + b": exists and is not a regular file")
    check(sorted(os.listdir(d)) == ["fifo", "file", "text.txt"], f"left behind: {os.listdir(d)}")

    # an output that is an input (or a link to it) is refused before any work:
    # `train -f t.txt -o t.txt` replaced the text with the model, `attention
    # -m m.gguf --svg m.gguf` the model with a picture
    import hashlib
    import shutil
    model = os.path.join(d, "in.gguf")
    shutil.copy(M4, model)
    link = os.path.join(d, "link.gguf")
    os.symlink(model, link)
    sums = {p: hashlib.sha256(open(p, "rb").read()).hexdigest() for p in (model, text)}
    SAME = b"writing it would replace what it is made from"
    for args in (["train", "-f", text, "-o", text, "--steps", "1", "--layers", "1", "--heads", "1", "--embd", "8",
                  "--ctx", "8", "--vocab", "300"],
                 ["train", "-f", text, "-o", model, "--tokenizer-from", model, "--steps", "1", "--layers", "1",
                  "--heads", "1", "--embd", "8", "--ctx", "8"],
                 ["attention", "-m", model, "--svg", link], ["profile", "-m", model, "-n", "2", "--trace", model],
                 ["quantize", model, link, "--type", "q8_0"], ["convert", model, "-o", link],
                 init[:-1] + ["--vocab-from", model, "-o", model]):
        expect(args, 2, SAME)
    check(all(hashlib.sha256(open(p, "rb").read()).hexdigest() == h for p, h in sums.items()),
          "an input was changed by a refused run")
    os.remove(link)
    os.remove(model)
    check(sorted(os.listdir(d)) == ["fifo", "file", "text.txt"], f"left behind: {os.listdir(d)}")

    # a stale temporary of the output (a killed run's) goes, others stay
    out = os.path.join(d, "m.gguf")
    for name, mtime in [("m.gguf.tmp.Ab12Cd", 1e9), ("m.gguf.tmp.Ab12C", 1e9), ("n.gguf.tmp.Ab12Cd", 1e9),
                        ("m.gguf.tmp.Zz99Zz", time.time() + 3600)]:
        p = os.path.join(d, name)
        open(p, "w").close()
        os.utime(p, (mtime, mtime))
    r = subprocess.run([TG, *init, "-o", out], capture_output=True)
    check(r.returncode == 0 and b"removed 1 stale temporary of" in r.stderr, f"init: {r.returncode} {r.stderr!r}")
    left = sorted(n for n in os.listdir(d) if ".tmp." in n)
    check(left == ["m.gguf.tmp.Ab12C", "m.gguf.tmp.Zz99Zz", "n.gguf.tmp.Ab12Cd"], f"temporaries left: {left}")

    # a full standard output is an error for every command (some say so
    # themselves, the rest main does): exit 1, and the error is all stderr
    # says -- no stats or "wrote FILE" line before it (generate and eval
    # printed their stats line, tokenize --verbose its counts, attention
    # "wrote FILE"; generate's notes that the context is full are not said
    # either once the output failed), beyond a note said before any output (profile, bench:
    # "measuring the machine"; the REPL's greeting); nor is a file written
    # after it (attention --svg, compare --svg)
    svg = os.path.join(d, "full.svg")
    svgdir = os.path.join(d, "svgs")
    os.mkdir(svgdir)
    G = ["generate", "-m", M4, "-p", "ROMEO:", "-n", "4", "--seed", "1"]
    NOTES = (b"tinygpt profile: measuring", b"tinygpt bench: measuring", b"tinygpt generate: interactive")
    with open("/dev/full", "wb") as full:
        for args in [["--help"], ["--version"], ["help", "eval"], ["inspect", M4], ["inspect", "--json", M4],
                     ["tokenize", "-p", "Hello world"], ["tokenize", "-p", "Hello world", "--verbose"],
                     ["tokenize", "-p", "Hello world", "--json"],
                     ["eval", "-m", M4, "-f", text], ["eval", "-m", M4, "-f", text, "--json"],
                     ["attention", "-m", M4, "--layer", "0"], ["attention", "-m", M4, "-p", "ROMEO:", "--svg", svg],
                     ["convert", "--help"], G, G + ["--json"], G + ["--jsonl"], G + ["-s", "2"],
                     G[:-4] + ["-n", "-1", "--ignore-eos"], G[:-4] + ["-n", "300", "--keep", "0", "--ignore-eos"],
                     G + ["-i"],
                     ["compare", M1, M4, "-f", text, "--svg", svgdir], ["compare", M1, M4, "-f", text, "--json"],
                     ["profile", "-m", M4, "-n", "4", "--no-roofline"], ["bench", "-m", M4, "-p", "8", "-n", "8", "-r", "1"],
                     ["quantize", "--type", "q8_0", M4, os.path.join(d, "q.gguf")],
                     ["task", "marked-tuple", "--sample", "2"],
                     ["eval", "-m", os.path.join(SRC, "weights", "marked-tuple-4h.gguf"), "-n", "8"]]:
            try:  # -n -1: generation ran on forever into the full output
                r = subprocess.run([TG, *args], stdout=full, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                   timeout=60)
            except subprocess.TimeoutExpired:
                check(False, f"{' '.join(args)} > /dev/full: still running after 60 s")
                continue
            lines = [l for l in r.stderr.rstrip(b"\n").split(b"\n") if not l.startswith(NOTES)]
            check(r.returncode == 1 and len(lines) == 1 and lines[0].startswith(b"tinygpt")
                  and b": writing the standard output failed" in lines[0],
                  f"{' '.join(args)} > /dev/full: exit {r.returncode}, stderr {r.stderr!r}")
    check(not os.path.exists(svg) and os.listdir(svgdir) == [], "an SVG written after stdout failed")

if failures:
    print(f"{failures} failure(s)")
    sys.exit(1)
print("ok")
