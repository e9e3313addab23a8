#!/usr/bin/python3
"""cli_test.py — `tinygpt generate` and `tinygpt eval` end to end, against the
PyTorch reference of gpt_oracle.py, on a random byte-level GPT-2 written as
GGUF (and as a Hugging Face folder): 256 byte tokens and <|endoftext|>, no
merges, so the token ids of a text are known without a tokenizer.

  * greedy golden: generate --temp 0 prints the prompt and then exactly the
    bytes of PyTorch's argmax chain, for every ISA, 1 and 2 threads, GGUF
    and HF; an empty prompt starts from <|endoftext|>;
  * eval: tokens, nats/token, perplexity, nats/byte, bits/byte against the
    reference's log-softmax over the same windows;
  * sampling: the same seed gives the same text for 1 and 2 threads;
  * stops: at -n, at <|endoftext|> (not with --ignore-eos), when the
    context is full (with a message);
  * bad input: exit codes 1 (runtime) and 2 (usage) with messages naming
    the allowed range, the path, or both lengths.

usage: cli_test.py TINYGPT GPT_DUMP
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_oracle as go  # noqa: E402

L, H, E, C, V, FF = 2, 2, 32, 64, 257, 128


def byte_ids():
    """byte value -> token id in gpt_oracle.vocab_tokens order (no merges)."""
    toks = go.vocab_tokens(V)
    b2u = {}
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    for b, c in zip(bs, cs):
        b2u[b] = chr(c)
    index = {t: i for i, t in enumerate(toks)}
    return {b: index[b2u[b]] for b in range(256)}


B2ID = byte_ids()
ID2B = {i: bytes([b]) for b, i in B2ID.items()}
EOS = V - 1
ID2B[EOS] = b"<|endoftext|>"


class Checks:
    def __init__(self, exe):
        self.exe, self.n, self.failures = exe, 0, []

    def run(self, *args, env=None):
        e = dict(os.environ)
        e.pop("TINYGPT_ISA", None)
        if env:
            e.update(env)
        return subprocess.run([self.exe] + [str(a) for a in args], capture_output=True, env=e,
                              timeout=120, stdin=subprocess.DEVNULL)

    def check(self, ok, what):
        self.n += 1
        if not ok:
            self.failures.append(what)
        return ok

    def expect_fail(self, code, needles, *args):
        r = self.run(*args)
        err = r.stderr.decode("utf-8", "replace")
        what = "tinygpt %s -> exit %d (want %d), stderr %r" % (
            " ".join(str(a) for a in args), r.returncode, code, err.strip())
        ok = r.returncode == code and err.count("\n") >= 1
        ok = ok and all(n in err for n in needles)
        self.check(ok, what)


def greedy_chain(w, cfg, ids, n):
    toks, tol = list(ids), None
    out = []
    for _ in range(n):
        logits, _, scale = go.reference(w, cfg, toks)
        last = logits[-1]
        order = np.argsort(-last, kind="stable")
        gap = last[order[0]] - last[order[1]]
        t = go.tolerance(cfg, scale)[-1]
        if gap <= 4 * t:
            raise RuntimeError("test model has a near-tie (gap %g, tol %g); pick another seed" % (gap, t))
        nxt = int(order[0])
        out.append(nxt)
        toks.append(nxt)
        if len(toks) >= C:
            break
    return out


def main():
    exe, dump = sys.argv[1], sys.argv[2]
    ck = Checks(exe)
    isas = subprocess.run([dump, "--isas"], capture_output=True, text=True, check=True).stdout.split()
    cfg = (L, H, E, C, V, FF, False)
    w = go.make_model(L, H, E, C, V, FF, False, seed=77)
    with tempfile.TemporaryDirectory(prefix="tg-cli-") as tmp:
        gg = os.path.join(tmp, "m.gguf")
        go.write_gguf(gg, w, cfg)
        hf = os.path.join(tmp, "m-hf")
        go.write_hf(hf, w, cfg, "")

        # ---- greedy golden ------------------------------------------------
        prompt = "Once upon a time, ünïcode"
        pids = [B2ID[b] for b in prompt.encode()]
        chain = greedy_chain(w, cfg, pids, 20)
        want = prompt.encode() + b"".join(ID2B[i] for i in chain) + b"\n"
        for model in (gg, hf):
            for isa in isas:
                for t in ("1", "2"):
                    r = ck.run("generate", "-m", model, "-p", prompt, "-n", 20, "--temp", 0,
                               "--ignore-eos", "--isa", isa, "-t", t)
                    ck.check(r.returncode == 0 and r.stdout == want,
                             "greedy %s %s -t %s: exit %d, got %r want %r (%s)" % (
                                 os.path.basename(model), isa, t, r.returncode, r.stdout, want,
                                 r.stderr.decode(errors="replace").strip()))
        stats = r.stderr.decode()
        ck.check("prompt: %d tokens" % len(pids) in stats and "generated: 20 tokens" in stats
                 and "tok/s" in stats, "stats line: %r" % stats)

        # Empty prompt: starts from <|endoftext|>, which is not echoed.
        chain0 = greedy_chain(w, cfg, [EOS], 10)
        r = ck.run("generate", "-m", gg, "-p", "", "-n", 10, "--temp", 0, "--ignore-eos")
        # one token is "1 token" (it read "1 tokens"), both counts
        ck.check("prompt: 1 token, " in r.stderr.decode(), "stats line: %r" % r.stderr)
        r1 = ck.run("generate", "-m", gg, "-p", "", "-n", 1, "--temp", 0, "--ignore-eos")
        ck.check("generated: 1 token, " in r1.stderr.decode(), "stats line: %r" % r1.stderr)
        ck.check(r.stdout == b"".join(ID2B[i] for i in chain0) + b"\n",
                 "empty prompt: got %r" % r.stdout)
        # A prompt file works like -p.
        pf = os.path.join(tmp, "prompt.txt")
        with open(pf, "wb") as f:
            f.write(prompt.encode())
        r = ck.run("generate", "-m", gg, "-f", pf, "-n", 20, "--temp", 0, "--ignore-eos")
        ck.check(r.returncode == 0 and r.stdout == want, "-f prompt: got %r" % r.stdout)

        # ---- eval ------------------------------------------------------------
        text = ("To be, or not to be, that is the question: Whether 'tis nobler in the mind "
                "to suffer the slings and arrows of outrageous fortune <|endoftext|> Ω≈ç "
                "or to take arms against a sea of troubles.").encode()
        tf = os.path.join(tmp, "text.txt")
        with open(tf, "wb") as f:
            f.write(text)
        ids = [B2ID[b] for b in text]
        for ctx in (C, 17, 2):
            nats, n, nbytes, smax = 0.0, 0, 0, 0.0
            for w0 in range(0, len(ids), ctx):
                win = ids[w0:w0 + ctx]
                if len(win) < 2:
                    continue
                logits, _, scale = go.reference(w, cfg, win)
                smax = max(smax, float(scale.max()))
                lp = F.log_softmax(torch.from_numpy(logits), dim=-1).numpy()
                for t in range(1, len(win)):
                    nats -= lp[t - 1][win[t]]
                    n += 1
                    nbytes += len(ID2B[win[t]])
            args = ["eval", "-m", gg, "-f", tf, "--json"] + ([] if ctx == C else ["--ctx", ctx])
            r = ck.run(*args)
            try:
                j = json.loads(r.stdout)
            except ValueError:
                j = {}
            keys = {"tokens", "nats_per_token", "perplexity", "nats_per_byte", "bits_per_byte"}
            ok = r.returncode == 0 and keys <= set(j)
            if ok:
                npt = nats / n
                # The mean of n terms each off by at most the logit tolerance.
                tol = go.tolerance(cfg, np.array([smax]))[0]
                ok = (j["tokens"] == n and abs(j["nats_per_token"] - npt) <= tol
                      and abs(j["perplexity"] - math.exp(npt)) <= tol * math.exp(npt) * 1.01
                      and abs(j["nats_per_byte"] - nats / nbytes) <= tol
                      and abs(j["bits_per_byte"] - nats / nbytes / math.log(2)) <= 2 * tol)
            ck.check(ok, "eval --ctx %d: %s vs tokens %d nats/token %.9g (exit %d %s)" % (
                ctx, j, n, nats / max(n, 1), r.returncode, r.stderr.decode(errors="replace")))
        r = ck.run("eval", "-m", gg, "-f", tf)
        ck.check(r.returncode == 0 and b"perplexity" in r.stdout, "eval text output: %r" % r.stdout)
        # --help names every key of --json, and only those (it left out "windows")
        h = ck.run("eval", "--help").stdout.decode()
        listed = set("".join(h.split("print {", 1)[-1].split("}", 1)[0].split()).split(","))
        ck.check(listed == set(j), "eval --help lists %s, --json has %s" % (sorted(listed), sorted(j)))

        # ---- sampling: seeds and threads ----------------------------------------
        outs = {}
        for seed in ("0", "7"):
            for t in ("1", "2"):
                r = ck.run("generate", "-m", gg, "-p", "The", "-n", 40, "--temp", 1.0,
                           "--top-k", 0, "--top-p", 1, "--min-p", 0, "--seed", seed, "-t", t,
                           "--ignore-eos")
                outs[(seed, t)] = r.stdout
                ck.check(r.returncode == 0 and "seed %s" % seed in r.stderr.decode(),
                         "sampling seed %s -t %s: exit %d" % (seed, t, r.returncode))
        ck.check(outs[("0", "1")] == outs[("0", "2")] and outs[("7", "1")] == outs[("7", "2")],
                 "same seed, same text for 1 and 2 threads")
        ck.check(outs[("0", "1")] != outs[("7", "1")], "different seeds, different text")

        # ---- stops ---------------------------------------------------------------
        # A model whose LM head makes <|endoftext|> the argmax everywhere.
        we = go.make_model(L, H, E, C, V, FF, False, seed=77)
        we["lm_head"] = we["lm_head"].copy()
        we["lm_head"][EOS] = 0.0
        we["lnf_w"][:] = 0.0
        we["lnf_b"][:] = 1.0 / E
        we["lm_head"][EOS, :] = 1000.0
        ge = os.path.join(tmp, "eos.gguf")
        go.write_gguf(ge, we, cfg)
        r = ck.run("generate", "-m", ge, "-p", "ab", "-n", 5, "--temp", 0)
        ck.check(r.returncode == 0 and r.stdout == b"ab\n" and b"stop: eos" in r.stderr,
                 "stop at <|endoftext|>: %r %r" % (r.stdout, r.stderr))
        r = ck.run("generate", "-m", ge, "-p", "ab", "-n", 3, "--temp", 0, "--ignore-eos")
        ck.check(r.returncode == 0 and r.stdout == b"ab" + b"<|endoftext|>" * 3 + b"\n",
                 "--ignore-eos: %r" % r.stdout)
        # Context full with --keep 0: a 60-token prompt in a 64-token context
        # leaves room for 5 (generate_test.py checks the shift past it).
        p60 = "x" * 60
        r = ck.run("generate", "-m", gg, "-p", p60, "-n", 100, "--temp", 0, "--ignore-eos",
                   "--keep", 0)
        err = r.stderr.decode()
        ck.check(r.returncode == 0 and "generated: 5 tokens" in err and "context is full (64" in err
                 and "stop: context" in err, "context full: exit %d %r" % (r.returncode, err))
        # Too long a prompt: both lengths named; --truncate keeps its end.
        ck.expect_fail(1, ["100 tokens", "64 tokens", "--truncate"], "generate", "-m", gg,
                       "-p", "y" * 100, "-n", 4)
        r = ck.run("generate", "-m", gg, "-p", "y" * 100, "-n", 4, "--truncate", "--temp", 0)
        ck.check(r.returncode == 0 and b"truncated" in r.stderr and "generated: 4 tokens" in r.stderr.decode(),
                 "--truncate: exit %d %r" % (r.returncode, r.stderr))
        # -n 0 prints the prompt only.
        r = ck.run("generate", "-m", gg, "-p", "hi", "-n", 0)
        ck.check(r.returncode == 0 and r.stdout == b"hi\n", "-n 0: %r" % r.stdout)

        # ---- bad input -------------------------------------------------------------
        usage = [
            (["-n", "-2"], "[-1, 1000000000]"), (["-n", "abc"], "[-1, 1000000000]"),
            (["-n", "1000000001"], "[-1, 1000000000]"),
            (["--temp", "-0.5"], "[0, 100]"), (["--temp", "nan"], "[0, 100]"),
            (["--temp", "101"], "[0, 100]"),
            (["--temp", "1e-45"], "smallest usable"), (["--temp", "1e-39"], "use 0 for greedy"),
            (["--top-k", "-3"], "[0, 1000000]"), (["--top-p", "1.5"], "[0, 1]"),
            (["--top-p", "-0.1"], "[0, 1]"), (["--min-p", "2"], "[0, 1]"),
            (["--repeat-penalty", "0.5"], "[1, 10]"), (["--repeat-penalty", "11"], "[1, 10]"),
            (["-t", "0"], "[1, 1024]"), (["-t", "5000"], "[1, 1024]"),
            (["--seed", "-1"], "[0, 18446744073709551615]"),
            (["--seed", "18446744073709551616"], "[0, 18446744073709551615]"),
            (["--isa", "sse9"], "scalar, avx2, avx512, neon"),
            (["--bogus"], "unknown option"), (["-n"], "needs a value"),
            (["-p", "a", "-f", pf], "one of -p, -f or --prompt-ids"),
            (["--ctx", "65"], "[1, 64]"),
            # the option parser (tools/cli.c): left to right, the flag named as typed
            (["--seed"], "--seed needs a value"), (["--top-k", "1e3"], "--top-k: '1e3'"),
            (["--bogus", "--help"], "unknown option '--bogus'"), (["-n", "-h"], "-n: '-h'"),
            (["--no-echo", "x"], "unknown option 'x'"), (["-"], "unknown option '-'"),
        ]
        for args, needle in usage:
            ck.expect_fail(2, [needle], "generate", "-m", gg, *args)
        missing = os.path.join(tmp, "no-such-model.gguf")
        ck.expect_fail(1, [missing], "generate", "-m", missing, "-p", "a")
        junk = os.path.join(tmp, "junk.gguf")
        with open(junk, "wb") as f:
            f.write(b"GGUF\3\0\0\0" + b"\xff" * 40)
        ck.expect_fail(1, [junk], "generate", "-m", junk, "-p", "a")
        ck.expect_fail(1, [os.path.join(tmp, "nope.txt")], "generate", "-m", gg, "-f",
                       os.path.join(tmp, "nope.txt"))
        ck.expect_fail(2, ["-f TEXT"], "eval", "-m", gg)
        ck.expect_fail(2, ["[2, "], "eval", "-m", gg, "-f", tf, "--ctx", "1")
        ck.expect_fail(2, ["[2, 64]"], "eval", "-m", gg, "-f", tf, "--ctx", "100")
        ck.expect_fail(2, ["unknown option"], "eval", "-m", gg, "-f", tf, "--nope")
        one = os.path.join(tmp, "one.txt")
        with open(one, "wb") as f:
            f.write(b"a")
        ck.expect_fail(1, ["1 token", "at least 2"], "eval", "-m", gg, "-f", one)
        ck.expect_fail(1, [tmp], "eval", "-m", gg, "-f", tmp)  # a directory
        ck.expect_fail(1, [missing], "eval", "-m", missing, "-f", tf)
        # An unwritable stdout is a runtime error, not silence.
        for args in (["generate", "-m", gg, "-p", "hi", "-n", 5], ["eval", "-m", gg, "-f", tf]):
            with open("/dev/full", "wb") as full:
                r = subprocess.run([exe] + [str(a) for a in args], stdout=full,
                                   stderr=subprocess.PIPE, timeout=120)
            ck.check(r.returncode == 1 and b"writing the standard output failed" in r.stderr,
                     "%s to /dev/full: exit %d %r" % (args[0], r.returncode, r.stderr))
        # Without -m and without a default model: say how to get one.
        src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        if not os.path.exists(os.path.join(src, "weights", "shakespeare-4h.gguf")):
            r = ck.run("generate", "-p", "a", env={"TINYGPT_MODEL": ""})
            ck.check(r.returncode == 1 and b"-m MODEL" in r.stderr,
                     "no default model: exit %d %r" % (r.returncode, r.stderr))

    for f in ck.failures:
        print("FAIL", f)
    print("%d passed, %d failed" % (ck.n - len(ck.failures), len(ck.failures)))
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
