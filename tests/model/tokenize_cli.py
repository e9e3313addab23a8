#!/usr/bin/python3
"""tokenize_cli.py — `tinygpt tokenize` end to end on a vocabulary trained by
make_vocab (a vocabulary-only GGUF): the plain, --json and --verbose outputs
agree; the pieces, mapped back to bytes with GPT-2's byte table written here
(encoder.py's bytes_to_unicode), give back the text exactly; special-token
parsing is on by default and off with --no-parse-special; bad flags exit 2,
a missing model or file exits 1 naming it.

usage: tokenize_cli.py TINYGPT MAKE_VOCAB DATA_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

TINYGPT, MAKE_VOCAB, DATA = sys.argv[1:4]
failures = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, stdin=None):
    return subprocess.run([TINYGPT, "tokenize", *args], capture_output=True, input=stdin)


def byte_decoder():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


B = byte_decoder()

with tempfile.TemporaryDirectory() as tmp:
    model = os.path.join(tmp, "vocab.gguf")
    torture = os.path.join(DATA, "torture.txt")
    subprocess.run([MAKE_VOCAB, torture, "600", model], check=True)
    text = open(torture, "rb").read()

    plain = run("-m", model, "-f", torture, "--no-parse-special")
    check(plain.returncode == 0, f"plain run: {plain.stderr!r}")
    ids = [int(x) for x in plain.stdout.split()]
    check(0 < len(ids) < len(text), f"{len(ids)} ids for {len(text)} bytes")

    js = run("-m", model, "-f", torture, "--no-parse-special", "--json", "--verbose")
    out = json.loads(js.stdout)
    check(out["ids"] == ids, "--json ids == plain ids")
    check(len(out["pieces"]) == len(ids), "one piece per id")
    back = bytes(B[c] for p in out["pieces"] for c in p)
    check(back == text, "pieces map back to the text byte for byte")

    verbose = run("-m", model, "-f", torture, "--no-parse-special", "--verbose")
    lines = verbose.stdout.decode("utf-8", "replace").splitlines()
    check(len(lines) == len(ids), f"--verbose: {len(lines)} lines for {len(ids)} ids")
    check([int(l.split()[0]) for l in lines] == ids, "--verbose ids == plain ids")

    # -p gives the same ids as -f for the same text (no NUL in it)
    line = "Hello  world's 42 ünïcödé 😀\r\n\tend  "
    p = run("-m", model, "-p", line)
    fpath = os.path.join(tmp, "line.txt")
    open(fpath, "w", encoding="utf-8", newline="").write(line)
    f = run("-m", model, "-f", fpath)
    check(p.returncode == 0 and p.stdout == f.stdout, "-p and -f agree")

    # special tokens: on by default, plain text with --no-parse-special
    eos = 599  # make_vocab's 600 tokens end with <|endoftext|>
    sp = json.loads(run("-m", model, "-p", "a<|endoftext|>b", "--json").stdout)["ids"]
    nsp = json.loads(run("-m", model, "-p", "a<|endoftext|>b", "--json", "--no-parse-special").stdout)["ids"]
    check(len(sp) == 3 and sp[1] == eos, f"<|endoftext|> is one special id by default: {sp}")
    check(sp[1] not in nsp and len(nsp) > 3, f"--no-parse-special spells it out: {nsp}")

    # empty text: no ids
    e = run("-m", model, "-p", "")
    check(e.returncode == 0 and e.stdout.strip() == b"", "empty text gives no ids")

    # bad flags: exit 2
    for args in (["--bogus"], ["-m", model], ["-m", model, "-p", "x", "-f", torture],
                 ["-m", model, "-p"], ["-m"]):
        r = run(*args)
        check(r.returncode == 2 and b"tinygpt tokenize: " in r.stderr,
              f"{args}: exit {r.returncode}, want 2: {r.stderr[-120:]!r}")
    # -m and --tokenizer together: a usage error naming both (it used to run
    # on --tokenizer's vocabulary and ignore -m without a word)
    r = run("-m", model, "--tokenizer", model, "-p", "x")
    check(r.returncode == 2 and b"-m and --tokenizer are exclusive" in r.stderr,
          f"-m with --tokenizer: exit {r.returncode}, want 2: {r.stderr[-160:]!r}")
    r = run("--tokenizer", model, "-p", "x")
    check(r.returncode == 0 and r.stdout.strip(), f"--tokenizer alone: exit {r.returncode}: {r.stderr[-160:]!r}")
    # missing model / file, not a model: exit 1 naming the path
    missing = os.path.join(tmp, "no-such-model.gguf")
    r = run("-m", missing, "-p", "x")
    check(r.returncode == 1 and missing.encode() in r.stderr, f"missing model: {r.returncode} {r.stderr!r}")
    r = run("-m", model, "-f", os.path.join(tmp, "no-such.txt"))
    check(r.returncode == 1 and b"no-such.txt" in r.stderr, f"missing file: {r.returncode} {r.stderr!r}")
    r = run("-m", torture, "-p", "x")
    check(r.returncode == 1 and r.stderr.count(b"\n") == 1, f"not a model: {r.returncode} {r.stderr!r}")
    # an unwritable stdout is a runtime error
    if os.path.exists("/dev/full"):
        with open("/dev/full", "wb") as full:
            r = subprocess.run([TINYGPT, "tokenize", "-m", model, "-f", torture], stdout=full,
                               stderr=subprocess.PIPE)
        check(r.returncode == 1, f"/dev/full: exit {r.returncode}")

print(f"{checks - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
