#!/usr/bin/python3
"""generate_test.py — `tinygpt generate` past the context, with stop strings,
stdin, JSON, samples and the REPL, on two byte-level GPT-2s written as GGUF
(256 byte tokens and <|endoftext|>, no merges: token id = byte, known
without a tokenizer):

  * the random model of cli_test.py (context 64), where every token depends
    on the whole context: the text after a context shift must be exactly
    what a fresh run whose prompt is the kept tokens gives (--prompt-ids,
    --json ids), -n defaults to 256 past the context, sample i of -s equals
    a lone run with --seed S+i (also across a shift), the REPL keeps the
    conversation, log-probabilities match PyTorch's log-softmax;
  * a "scripted" model whose greedy successor of each byte is fixed (a
    cycle through ASCII and 2-, 3- and 4-byte UTF-8 characters), so stop
    strings can be placed exactly: split across tokens, at the first
    token, after a partial match, several with common prefixes, multi-byte.

usage: generate_test.py TINYGPT [SOURCE_ROOT]
"""
import json
import os
import pty
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_test as ct  # noqa: E402
import gpt_oracle as go  # noqa: E402

EXE = None
FAILS, N = [], [0]
B2ID, ID2B, EOS = ct.B2ID, ct.ID2B, ct.EOS
SCRIPT = "abécdЖef中gh🙂ij "  # every byte distinct: one successor each


def check(ok, what):
    N[0] += 1
    if not ok:
        FAILS.append(what)
    return ok


def run(*args, stdin=b"", env=None, timeout=120):
    e = dict(os.environ)
    e.pop("TINYGPT_ISA", None)
    e.update(env or {})
    return subprocess.run([EXE] + [a if isinstance(a, bytes) else str(a) for a in args],
                          input=stdin, capture_output=True, env=e, timeout=timeout)


def no_nan(s):
    raise ValueError("not JSON: " + s)


def js(r):
    """stdout as one JSON document (NaN / Infinity rejected), or None."""
    try:
        return json.loads(r.stdout, parse_constant=no_nan)
    except ValueError:
        return None


def ids_arg(ids):
    return ",".join(str(i) for i in ids)


def tokens_of(doc, k=0):
    return [t["id"] for t in doc["samples"][k]["tokens"]]


def scripted_model(tmp):
    """E = 64 > the 22 script bytes: byte k of the script is embedded as the
    unit vector e_k, the blocks add nothing (zero output projections), and
    the LM head maps e_k to the next byte of the cycle."""
    L, H, E, C, V, FF = 1, 2, 64, 64, ct.V, 64
    w = go.make_model(L, H, E, C, V, FF, False, seed=5)
    w["wte"] = np.zeros((V, E), np.float32)
    w["wpe"] = np.zeros((C, E), np.float32)
    for y in w["layers"]:
        for k in ("proj_w", "proj_b", "down_w", "down_b"):
            y[k] = np.zeros_like(y[k])
    w["lnf_w"] = np.ones(E, np.float32)
    w["lnf_b"] = np.zeros(E, np.float32)
    w["lm_head"] = np.zeros((V, E), np.float32)
    seq = SCRIPT.encode()
    assert len(set(seq)) == len(seq)
    for k, b in enumerate(seq):
        w["wte"][B2ID[b], k] = 1.0
        w["lm_head"][B2ID[seq[(k + 1) % len(seq)]], k] = 10.0
    path = os.path.join(tmp, "script.gguf")
    go.write_gguf(path, w, (L, H, E, C, V, FF, False))
    return path


def shift_windows(n_prompt, gen, C, keep, hist):
    """Replays generate's schedule: after each generated token the cache
    takes it, or (when full) the last `keep` tokens are prefilled again.
    Returns [(index of the token after which the shift happened, window)]."""
    P, out, h = n_prompt, [], list(hist)
    for i, t in enumerate(gen[:-1]):  # the last token is not fed back
        h.append(t)
        if P + 1 <= C:
            P += 1
        else:
            out.append((i, h[-keep:]))
            P = keep
    return out


def test_context_shift(gg):
    C = ct.C
    prompt = [B2ID[b] for b in b"To be, or not"]
    for keep in (20, 32, 63):
        r = run("generate", "-m", gg, "--prompt-ids", ids_arg(prompt), "-n", 150, "--temp", 0,
                "--ignore-eos", "--json", "--keep", keep)
        d = js(r)
        if not check(r.returncode == 0 and d, "shift --keep %d: exit %d %r" % (keep, r.returncode, r.stderr)):
            continue
        gen = tokens_of(d)
        err = r.stderr.decode()
        shifts = shift_windows(len(prompt), gen, C, keep, prompt)
        check(len(gen) == 150 and d["samples"][0]["stop"] == "length" and len(shifts) >= 2
              and d["samples"][0]["context_shifts"] == len(shifts),
              "shift --keep %d: %d tokens, %d shifts, json %s" % (keep, len(gen), len(shifts),
                                                                 d["samples"][0]["context_shifts"]))
        check(err.count("context of %d tokens is full" % C) == 1 and "last %d tokens" % keep in err,
              "shift said once: %r" % err)
        # After each shift, the text until the next one is a fresh run from the window.
        for s, (i, win) in enumerate(shifts):
            end = shifts[s + 1][0] if s + 1 < len(shifts) else len(gen) - 1
            n = end - i
            if n <= 0:
                continue
            rr = run("generate", "-m", gg, "--prompt-ids", ids_arg(win), "-n", n, "--temp", 0,
                     "--ignore-eos", "--json", "--keep", keep)
            dd = js(rr)
            check(dd is not None and tokens_of(dd) == gen[i + 1:end + 1],
                  "--keep %d, shift %d: after the shift %s, a fresh run from the kept tokens %s"
                  % (keep, s, gen[i + 1:end + 1][:8], tokens_of(dd)[:8] if dd else rr.stderr))
    # an interactive turn longer than --keep: all of it (at most the context)
    # runs first, then --keep at each later shift; the note said --keep's
    # tokens ran again from the start
    turn = b"To be, or not to be: that is the question " * 3
    r = run("generate", "-m", gg, "-i", "--keep", 20, "-n", 80, "--temp", 0, "--ignore-eos",
            stdin=turn + b"\n")
    err = r.stderr.decode()
    check(r.returncode == 0 and err.count("context of %d tokens is full" % C) == 1 and
          "its last %d tokens run again as a new prompt, and each time it fills again its last 20 (--keep)"
          % min(len(turn) + 1, C) in err, "a long interactive turn's shift note: %r" % err)
    # -n defaults to 256 whatever the context; -n -1 runs until <|endoftext|>.
    r = run("generate", "-m", gg, "-p", "x", "--temp", 0, "--ignore-eos", "--json")
    d = js(r)
    check(d and d["samples"][0]["n_tokens"] == 256, "default -n past a 64-token context: %r"
          % (d["samples"][0]["n_tokens"] if d else r.stderr))
    # the text form: prompt echoed, then the bytes of the same ids
    r2 = run("generate", "-m", gg, "-p", "x", "--temp", 0, "--ignore-eos")
    check(d and r2.stdout == b"x" + b"".join(ID2B[i] for i in tokens_of(d)) + b"\n",
          "text and --json agree past the context")


def test_logprobs(gg, w, cfg):
    prompt = b"Once upon"
    pids = [B2ID[b] for b in prompt]
    r = run("generate", "-m", gg, "-p", prompt, "-n", 6, "--temp", 0, "--ignore-eos", "--json",
            "--top-logprobs", 5)
    d = js(r)
    if not check(d is not None, "--json parses: %r %r" % (r.stdout[:200], r.stderr)):
        return
    toks = d["samples"][0]["tokens"]
    check(d["prompt_ids"] == pids and d["prompt_tokens"] == len(pids) and len(toks) == 6,
          "json header %s" % {k: d[k] for k in ("prompt_ids", "prompt_tokens")})
    seq = list(pids)
    for k, t in enumerate(toks):
        logits, _, scale = go.reference(w, cfg, seq)
        lp = F.log_softmax(torch.from_numpy(logits[-1]).double(), dim=-1).numpy()
        tol = 2 * float(go.tolerance(cfg, scale)[-1])
        order = np.argsort(-lp, kind="stable")
        top = t["top_logprobs"]
        ok = (t["id"] == int(order[0]) and abs(t["logprob"] - lp[t["id"]]) <= tol
              and [a["id"] for a in top] == [int(i) for i in order[:5]]
              and all(abs(a["logprob"] - lp[a["id"]]) <= tol for a in top)
              and all(top[j]["logprob"] >= top[j + 1]["logprob"] for j in range(4))
              and t["bytes"] == list(ID2B[t["id"]]) and top[0]["id"] == t["id"])
        check(ok, "token %d: %s vs torch %s" % (k, t, [(int(i), lp[i]) for i in order[:5]]))
        seq.append(t["id"])
    st = d["stats"]
    check(st["tokens"] == 6 and st["samples"] == 1 and st["tok_per_s"] > 0
          and d["samples"][0]["stop"] == "length", "json stats %s" % st)
    # --jsonl: one line per token as it comes, then a "done" line per sample
    r = run("generate", "-m", gg, "-p", prompt, "-n", 6, "--temp", 0, "--ignore-eos", "--jsonl",
            "--top-logprobs", 2)
    try:
        lines = [json.loads(x, parse_constant=no_nan) for x in r.stdout.decode().splitlines()]
    except ValueError as e:
        lines = []
        check(False, "--jsonl does not parse: %s" % e)
    types = [x.get("type") for x in lines]
    check(types == ["prompt"] + ["token"] * 6 + ["done"]
          and [x["id"] for x in lines[1:7]] == [t["id"] for t in toks]
          and all(len(x["top_logprobs"]) == 2 for x in lines[1:7])
          and lines[-1]["text"] == d["samples"][0]["text"] and lines[-1]["n_tokens"] == 6,
          "--jsonl lines: %s" % types)
    # Bytes that are not UTF-8: "bytes" exact, every string valid JSON, the
    # concatenated "text" of the tokens = the text with U+FFFD for bad bytes.
    r = run("generate", "-m", gg, "-p", b"\xff\xc3", "-n", 40, "--temp", 1.5, "--top-k", 0,
            "--top-p", 1, "--min-p", 0, "--seed", 3, "--ignore-eos", "--json")
    d = js(r)
    if check(d is not None, "--json with raw bytes parses: %r" % r.stderr):
        toks = d["samples"][0]["tokens"]
        raw = b"".join(bytes(t["bytes"]) for t in toks)
        want = raw.decode("utf-8", "replace")
        got = "".join(t["text"] for t in toks)
        check(want.startswith(got) and len(want) - len(got) <= 1 and d["prompt"] == "\ufffd\ufffd"
              and d["samples"][0]["text"] == want,
              "U+FFFD text: %r vs %r" % (got, want))
        r2 = run("generate", "-m", gg, "-p", b"\xff\xc3", "-n", 40, "--temp", 1.5, "--top-k", 0,
                 "--top-p", 1, "--min-p", 0, "--seed", 3, "--ignore-eos")
        check(r2.stdout == b"\xff\xc3" + raw + b"\n", "text mode prints the exact bytes")


def test_stops(sm, gg):
    seq = SCRIPT.encode()
    cont = (seq[1:] + seq * 3)  # what the scripted model says after "a"

    def stop_run(stops, n=60, extra=()):
        args = ["generate", "-m", sm, "-p", "a", "-n", n, "--temp", 0] + list(extra)
        for s in stops:
            args += ["--stop", s.encode() if isinstance(s, str) else s]
        return run(*args)

    def cut_at(s):
        s = s.encode() if isinstance(s, str) else s
        return cont[:cont.find(s)]

    cases = [
        (["cdЖ"], "split across 4 tokens"),
        (["b"], "at the very first token"),
        (["bé"], "the first two tokens"),
        (["中"], "a 3-byte character"),
        (["🙂i"], "a 4-byte character and more"),
        (["ab"], "'ab' spans the prompt, so only its second occurrence counts"),
        (["cdX", "cdЖe"], "common prefix: the first fails, the second matches"),
        (["gh🙂X", "gh🙂", "gh🙂ij"], "common prefixes ending together and later"),
        (["zzz", "ЖefQ", "j a"], "one partial that fails, then another string"),
    ]
    for stops, what in cases:
        firsts = [(cont.find(s.encode()) + len(s.encode()), cont.find(s.encode()), s)
                  for s in stops if s.encode() in cont]
        end, start, s = min(firsts)
        r = stop_run(stops)
        err = r.stderr.decode()
        want = b"a" + cont[:start] + b"\n"
        n_tok = end  # one byte per token
        check(r.returncode == 0 and r.stdout == want and "stop: stop" in err
              and "generated: %d token%s," % (n_tok, "" if n_tok == 1 else "s") in err
              and not any(x.encode() in r.stdout[1:] for x in stops),
              "%s %s: %r want %r (%s)" % (what, stops, r.stdout, want, err.strip()))
        d = js(stop_run(stops, extra=["--json"]))
        check(d is not None and d["samples"][0]["text"] == cont[:start].decode()
              and d["samples"][0]["stop"] == "stop" and d["samples"][0]["stop_string"] == s
              and len(d["samples"][0]["tokens"]) == n_tok,
              "%s --json: %s" % (what, d and {k: d["samples"][0][k] for k in ("text", "stop")}))
    # a partial match still held when -n ends is printed
    r = stop_run(["cdX"], n=4)
    check(r.stdout == b"ab\xc3\xa9c\n" and b"stop: length" in r.stderr,
          "partial match at the end: %r" % r.stdout)
    # the real model: a stop string after a partial match that failed
    r = run("generate", "-m", gg, "-p", "The", "-n", 60, "--temp", 0, "--ignore-eos", "--json")
    d = js(r)
    if check(d is not None, "random model --json"):
        text = b"".join(bytes(t["bytes"]) for t in d["samples"][0]["tokens"])
        found = None
        for j in range(1, len(text) - 3):
            s = text[j:j + 3]
            i = text.find(s[:2])
            if i < j and text.find(s) == j and 0 not in s:
                found = (j, s)
                break
        if check(found is not None, "no stop string with an earlier partial match in %r" % text):
            j, s = found
            r = run("generate", "-m", gg, "-p", "The", "-n", 60, "--temp", 0, "--ignore-eos",
                    "--stop", s)
            check(r.stdout == b"The" + text[:j] + b"\n" and b"stop: stop" in r.stderr,
                  "stop %r after a partial at %d: %r" % (s, text.find(s[:2]), r.stdout))
    # usage errors
    for args, needle in [(["--stop", ""], "1 to 4096 bytes"), (["--stop", "x" * 4097], "not 4097"),
                         (["--stop"], "--stop needs a value")]:
        r = run("generate", "-m", sm, *args)
        check(r.returncode == 2 and needle in r.stderr.decode(), "%s: %r" % (args, r.stderr))


def test_stdin(gg, tmp):
    prompt = b"ROMEO:\n"
    want = run("generate", "-m", gg, "-p", prompt, "-n", 20, "--temp", 0, "--ignore-eos").stdout
    for args, what in [(["-f", "-"], "-f -"), ([], "a pipe without -p/-f"),
                       (["--file", "-"], "--file -")]:
        r = run("generate", "-m", gg, "-n", 20, "--temp", 0, "--ignore-eos", *args, stdin=prompt)
        check(r.returncode == 0 and r.stdout == want, "%s: %r vs %r" % (what, r.stdout, want))
    # -p wins over a pipe (the pipe is not read)
    r = run("generate", "-m", gg, "-p", prompt, "-n", 20, "--temp", 0, "--ignore-eos", stdin=b"zzz")
    check(r.stdout == want, "-p with something on stdin")
    # a FIFO (process substitution) as the prompt file
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "wb") as f:
            f.write(prompt)
    t = threading.Thread(target=writer)
    t.start()
    r = run("generate", "-m", gg, "-f", fifo, "-n", 20, "--temp", 0, "--ignore-eos")
    t.join()
    check(r.returncode == 0 and r.stdout == want, "FIFO prompt: %r" % r.stdout)
    # the input limit: /dev/zero is an error naming it, not the OOM killer
    for extra, lim in [([], "64 MiB"), (["--max-input", "1M"], "1 MiB")]:
        t0 = time.time()
        r = run("generate", "-m", gg, "-f", "/dev/zero", *extra, timeout=60)
        err = r.stderr.decode()
        check(r.returncode == 1 and "/dev/zero: longer than the input limit of %s" % lim in err
              and "--max-input" in err and time.time() - t0 < 30, "/dev/zero %s: %r" % (extra, err))
    r = run("generate", "-m", gg, "-f", "-", "--max-input", "10", stdin=b"x" * 11)
    check(r.returncode == 1 and b"standard input: longer than the input limit of 10 bytes" in r.stderr,
          "stdin over the limit: %r" % r.stderr)
    r = run("generate", "-m", gg, "-f", "-", "--max-input", "10", "-n", 1, stdin=b"x" * 10)
    check(r.returncode == 0, "stdin at the limit: %r" % r.stderr)
    big = os.path.join(tmp, "big.txt")
    with open(big, "wb") as f:
        f.write(b"y" * 5000)
    for cmd in (["eval", "-m", gg], ["tokenize", "-m", gg], ["compare", gg, gg]):
        r = run(*cmd, "-f", big, "--max-input", "4K")
        check(r.returncode == 1 and b"longer than the input limit of 4 KiB" in r.stderr,
              "%s --max-input: %r" % (cmd[0], r.stderr))
    r = run("tokenize", "-m", gg, "-f", "-", stdin=b"ab")
    check(r.returncode == 0 and r.stdout.split() == [str(B2ID[97]).encode(), str(B2ID[98]).encode()],
          "tokenize -f -: %r" % r.stdout)
    r = run("eval", "-m", gg, "-f", "-", "--json", stdin=b"To be, or not to be")
    check(r.returncode == 0 and js(r) and js(r)["tokens"] == 18, "eval -f -: %r" % r.stdout)
    for bad in ("0", "1T", "x", "-5", "2G0"):
        r = run("generate", "-m", gg, "--max-input", bad)
        check(r.returncode == 2 and b"--max-input" in r.stderr, "--max-input %s: %r" % (bad, r.stderr))


def test_samples(gg):
    base = ["generate", "-m", gg, "-p", "The", "--temp", 1.0, "--top-k", 0, "--top-p", 1,
            "--min-p", 0, "--ignore-eos", "--json"]
    for n in (12, 90):  # 90: past the 64-token context, so each sample shifts
        d = js(run(*base, "-n", n, "-s", 3, "--seed", 40))
        if not check(d is not None and len(d["samples"]) == 3, "-s 3 -n %d --json" % n):
            continue
        seqs = [tokens_of(d, k) for k in range(3)]
        check(len(set(map(tuple, seqs))) == 3, "three different samples")
        for k in range(3):
            one = js(run(*base, "-n", n, "--seed", 40 + k))
            check(one is not None and tokens_of(one) == seqs[k] and d["samples"][k]["seed"] == 40 + k,
                  "-n %d sample %d = --seed %d alone" % (n, k, 40 + k))
        check(d["stats"]["samples"] == 3 and d["stats"]["tokens"] == 3 * n, "samples stats")
    r = run("generate", "-m", gg, "-p", "The", "-n", 5, "-s", 2, "--seed", 1, "--ignore-eos")
    out = r.stdout.decode("utf-8", "replace")
    err = r.stderr.decode()
    check(out.startswith("--- sample 1 of 2 (seed 1) ---\nThe") and "--- sample 2 of 2 (seed 2) ---\nThe" in out
          and "sample 1: prompt" in err and "sample 2: prompt" in err, "-s 2 text: %r %r" % (out, err))


class Pty:
    """The REPL on a pseudo-terminal, output post-processing off (bytes as
    written), line editing and signals on."""

    def __init__(self, args, errpath):
        pid, fd = pty.fork()
        if pid == 0:
            import termios
            a = termios.tcgetattr(0)
            a[1] &= ~termios.OPOST
            termios.tcsetattr(0, termios.TCSANOW, a)
            e = os.open(errpath, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(e, 2)
            env = dict(os.environ)
            env.pop("TINYGPT_ISA", None)
            os.execve(EXE, [EXE] + [x if isinstance(x, bytes) else str(x) for x in args], env)
        self.pid, self.fd, self.buf = pid, fd, b""

    def read_until(self, pred, timeout=30):
        end = time.time() + timeout
        while not pred(self.buf) and time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                self.buf += chunk
        return pred(self.buf)

    def send(self, b):
        os.write(self.fd, b)

    def wait(self, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(st)
            self.read_until(lambda b: False, 0.2)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return None


def test_interactive(gg, tmp):
    errpath = os.path.join(tmp, "repl.err")
    n = 12
    p = Pty(["generate", "-m", gg, "-i", "--temp", 0, "-n", n, "--ignore-eos"], errpath)
    conv = [EOS]  # an empty start is <|endoftext|>, as without -i
    expect = b"> "
    ok = p.read_until(lambda b: b.startswith(expect))
    # a line goes in with its newline; ending in \\ drops both; an empty one adds nothing
    for line, added in ((b"ROMEO:", b"ROMEO:\n"), (b"JULIET: ay\\", b"JULIET: ay"), (b"", b"")):
        p.send(line + b"\n")
        conv += [B2ID[c] for c in added]
        ref = js(run("generate", "-m", gg, "--prompt-ids", ids_arg(conv), "-n", n, "--temp", 0,
                     "--ignore-eos", "--json"))
        gen = tokens_of(ref)
        text = b"".join(ID2B[i] for i in gen)
        conv += gen
        expect += line + b"\n" + text + (b"> " if text.endswith(b"\n") else b"\n> ")
        ok = ok and p.read_until(lambda b: len(b) >= len(expect))
    check(ok and p.buf == expect, "REPL turns: %r\nwant %r" % (p.buf, expect))
    p.send(b"\x04")  # Ctrl-D
    code = p.wait()
    err = open(errpath, "rb").read().decode()
    check(code == 0 and "generated: %d tokens" % (3 * n) in err, "Ctrl-D: exit %s %r" % (code, err))

    # Ctrl-C stops a continuation that would never end (-n -1), not the REPL;
    # past the context (--ctx 32) the conversation goes on, shifted.
    p = Pty(["generate", "-m", gg, "-i", "--temp", 0, "-n", -1, "--ignore-eos", "--ctx", 32,
             "--keep", 16], errpath)
    ok = p.read_until(lambda b: b.endswith(b"> "))
    for turn in range(2):
        start = len(p.buf)
        p.send(b"go on\n")
        ok = ok and p.read_until(lambda b: len(b) > start + 300)  # 300 bytes: past 32 tokens
        p.send(b"\x03")
        ok = ok and p.read_until(lambda b: b.endswith(b"\n> "))
        check(ok, "turn %d: Ctrl-C gives the prompt back: %r" % (turn, p.buf[-80:]))
    # Ctrl-C at the prompt drops the line; the REPL goes on
    p.send(b"xyz\x03")
    ok = p.read_until(lambda b: b.endswith(b"\n> "))
    p.send(b"\x04")
    code = p.wait()
    err = open(errpath, "rb").read().decode()
    check(ok and code == 0 and "stop: interrupted" in err and err.count("context of 32 tokens is full") == 1,
          "Ctrl-C and Ctrl-D: exit %s %r" % (code, err))
    # usage errors
    for args in (["-i", "--json"], ["-i", "-s", "2"], ["-i", "-f", "-"], ["-i", "--jsonl"]):
        r = run("generate", "-m", gg, *args)
        check(r.returncode == 2, "%s: exit %d" % (args, r.returncode))


def token_ids(model, text):
    """The model's tokens of text (plain text: no special tokens), by tokenize."""
    r = run("tokenize", "-m", model, "--json", "--no-parse-special", "-p", text)
    return json.loads(r.stdout)["ids"] if r.returncode == 0 else None


def test_interactive_stop(model, tmp, pick, what):
    """A turn cut by a --stop string: the REPL shows the text before it, and
    the next turn (a line typed) is conditioned on exactly that text,
    as a fresh run given it as --prompt-ids: not on the token that completed
    the stop string, nor on those held back as a partial match, while the
    shown bytes of a token cut by the stop string come back re-encoded. With
    a repetition penalty, so the sampler's recent tokens are the kept ones
    too. pick(pieces) gives the byte offset where the stop string starts in
    the continuation and its length."""
    n, line = 24, "ROMEO:\n"
    opts = ["--temp", 0, "-n", n, "--ignore-eos", "--repeat-penalty", 1.3]
    conv = token_ids(model, line)
    ref = js(run("generate", "-m", model, "--prompt-ids", ids_arg(conv), "--json", *opts))
    if not check(ref is not None, "%s: reference run" % what):
        return
    toks = tokens_of(ref)
    pieces = [bytes(t["bytes"]) for t in ref["samples"][0]["tokens"]]
    text = b"".join(pieces)
    at, ln = pick(pieces)
    stop = text[at:at + ln]
    if not check(ln > 0 and text.find(stop) == at, "%s: stop %r first at %d in %r" % (what, stop, at, text)):
        return
    shown, j, done = text[:at], 0, 0
    while done + len(pieces[j]) <= at:
        done += len(pieces[j])
        j += 1
    conv2 = conv + toks[:j] + (token_ids(model, shown[done:].decode("latin-1")) if done < at else [])
    # (latin-1 is wrong for bytes >= 0x80: pick() cuts only inside ASCII)
    typed = "JULIET:\n"
    conv2 += token_ids(model, typed)
    r2 = run("generate", "-m", model, "--prompt-ids", ids_arg(conv2), "--no-echo", "--stop", stop, *opts)
    text2 = r2.stdout[:-1]
    errpath = os.path.join(tmp, "repl-stop.err")
    p = Pty(["generate", "-m", model, "-p", line, "-i", "--stop", stop] + opts, errpath)
    expect, ok = line.encode(), True
    for out in (shown, text2):  # the prompt's turn, then a typed line's
        expect += out + (b"> " if out.endswith(b"\n") or not out else b"\n> ")
        ok = ok and p.read_until(lambda b: len(b) >= len(expect))
        if out is shown:
            p.send(typed.encode())
            expect += typed.encode()
    check(ok and r2.returncode == 0 and p.buf == expect,
          "%s: REPL after --stop %r: %r\nwant %r" % (what, stop, p.buf, expect))
    p.send(b"\x04")
    check(p.wait() == 0, "%s: Ctrl-D after --stop" % what)


def test_sigint(gg):
    """Ctrl-C (SIGINT) ends -n -1: exit 1, stop reason 'interrupted', and
    the JSON document is still complete."""
    for fmt in ([], ["--json"]):
        e = dict(os.environ)
        e.pop("TINYGPT_ISA", None)
        p = subprocess.Popen([EXE, "generate", "-m", gg, "-p", "x", "-n", "-1", "--ignore-eos",
                              "--ctx", "16"] + fmt, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        d = None
        if fmt:
            try:
                d = json.loads(out, parse_constant=no_nan)
            except ValueError:
                pass
        check(p.returncode == 1 and b"stop: interrupted" in err and (not fmt or (
            d and d["samples"][0]["stop"] == "interrupted" and d["samples"][0]["n_tokens"] > 16)),
              "SIGINT %s: exit %s %r %r" % (fmt, p.returncode, err[-200:], out[-100:]))


def test_cli(gg, src):
    r = run("generate", "--help")
    h = r.stdout.decode()
    for flag in ("-m, --model", "-p, --prompt", "-f, --file", "--prompt-ids", "--max-input",
                 "-n, --n-predict", "--temp, --temperature", "--top-k", "--top-p", "--min-p",
                 "--repeat-penalty", "--repeat-window, --repeat-last-n", "--seed",
                 "-t, --threads", "--isa", "-c, --ctx", "--keep", "--stop", "--ignore-eos",
                 "--truncate", "--no-echo", "-s, --samples", "--json", "--jsonl",
                 "--top-logprobs", "-i, --interactive"):
        check(flag in h, "--help lacks %s" % flag)
    # long aliases do what the short ones do
    a = run("generate", "-m", gg, "-p", "ab", "-n", 5, "--temp", 0, "-t", 2, "--ignore-eos").stdout
    b = run("generate", "--model", gg, "--prompt", "ab", "--n-predict", 5, "--temperature", 0,
            "--threads", 2, "--ignore-eos").stdout
    check(a == b and len(a) > 3, "long aliases: %r vs %r" % (a, b))
    for args, needle in [(["--keep", 64], "[0, 63]"), (["--json", "--jsonl"], "exclude"),
                         (["--top-logprobs", 3], "needs --json"), (["--top-logprobs", 101, "--json"], "[0, 100]"),
                         (["--prompt-ids", "1,,2"], "token ids"), (["--prompt-ids", "257"], "[0, 257)"),
                         (["-p", "a", "--prompt-ids", "1"], "one of"), (["-s", 0], "[1, 1000]"),
                         (["-n", -2], "[-1, ")]:
        r = run("generate", "-m", gg, *args)
        check(r.returncode == 2 and needle in r.stderr.decode() and r.stderr.count(b"\n") == 1,
              "%s: exit %d %r" % (args, r.returncode, r.stderr))
    # with the shipped model: the command
    ship = os.path.join(src, "weights", "shakespeare-4h.gguf") if src else ""
    if os.path.exists(ship):
        r = run("generate", "-m", ship, "-n", 1000, "--stop", "JULIET:", "--seed", 1,
                stdin=b"ROMEO:\n")
        err = r.stderr.decode()
        check(r.returncode == 0 and r.stdout.startswith(b"ROMEO:\n") and b"JULIET:" not in r.stdout
              and ("stop: stop" in err or "generated: 1000 tokens" in err),
              "echo ROMEO: | generate -n 1000 --stop JULIET: -> %s" % err)


def main():
    global EXE
    EXE = sys.argv[1]
    src = sys.argv[2] if len(sys.argv) > 2 else None
    cfg = (ct.L, ct.H, ct.E, ct.C, ct.V, ct.FF, False)
    w = go.make_model(ct.L, ct.H, ct.E, ct.C, ct.V, ct.FF, False, seed=77)
    with tempfile.TemporaryDirectory(prefix="tg-gen-") as tmp:
        gg = os.path.join(tmp, "m.gguf")
        go.write_gguf(gg, w, cfg)
        sm = scripted_model(tmp)
        r = run("generate", "-m", sm, "-p", "a", "-n", 60, "--temp", 0)
        want = b"a" + (SCRIPT.encode()[1:] + SCRIPT.encode() * 3)[:60] + b"\n"
        if check(r.stdout == want, "scripted model: %r want %r" % (r.stdout, want)):
            test_stops(sm, gg)
        test_context_shift(gg)
        test_logprobs(gg, w, cfg)
        test_stdin(gg, tmp)
        test_samples(gg)
        test_interactive(gg, tmp)
        # byte tokens: a 2-byte stop string from the 7th token, so the 7th is
        # held back (fed) and the 8th completes it
        test_interactive_stop(gg, tmp, lambda ps: (sum(map(len, ps[:6])), 2), "byte model")
        ship = os.path.join(src, "weights", "shakespeare-4h.gguf") if src else ""
        if os.path.exists(ship):  # BPE: the stop string starts inside a token
            def inside(ps):
                for m in range(2, len(ps)):
                    if len(ps[m]) >= 3 and ps[m].isascii():
                        return sum(map(len, ps[:m])) + 2, len(ps[m]) - 2
                return 0, 0
            test_interactive_stop(ship, tmp, inside, "shipped model")
        test_sigint(gg)
        test_cli(gg, src)
    for f in FAILS:
        print("FAIL", f)
    print("%d passed, %d failed" % (N[0] - len(FAILS), len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
