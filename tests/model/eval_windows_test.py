#!/usr/bin/python3
"""eval_windows_test.py — `tinygpt eval --stride S` and `--first-half`
against an independent computation: the windows are placed the way the
Hugging Face perplexity recipe and llama.cpp's llama-perplexity place them
(written here after their loops, not after cmd_eval.c), every window's
logits come from the PyTorch reference of gpt_oracle.py, on the random
byte-level GPT-2 of cli_test.py.

Hand-checkable cases as well: S = the window length gives the default
scheme's disjoint windows (the same numbers, bit for bit); S = 1 scores every
token but the first exactly once, each with min(t, N-1) tokens of context,
in n - N + 1 windows.

usage: eval_windows_test.py TINYGPT
"""
import json
import math
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_test as ct  # noqa: E402
import gpt_oracle as go  # noqa: E402


def hf_windows(n, N, S):
    """(begin, end, first scored target) of the Hugging Face recipe:
    for begin in range(0, n, S): end = min(begin + N, n); the last
    end - prev_end labels are kept, the model shifts them by one (so a
    window's first token is never a target); stop once end == n."""
    out, prev_end = [], 0
    for begin in range(0, n, S):
        end = min(begin + N, n)
        trg_len = end - prev_end
        out.append((begin, end, max(end - trg_len, begin + 1)))
        prev_end = end
        if end == n:
            break
    return out


def llama_windows(n, N):
    """llama-perplexity: n // N chunks of N tokens, logits from first = N/2
    on scored against the tokens after them."""
    first = N // 2
    return [(i * N, i * N + N, i * N + first + 1) for i in range(n // N)]


def default_windows(n, N):
    return [(b, min(b + N, n), b + 1) for b in range(0, n, N) if min(b + N, n) - b >= 2]


def score(w, cfg, ids, windows, cache):
    nats, n, nbytes, smax, ctxs = 0.0, 0, 0, 0.0, []
    for b, e, s0 in windows:
        key = (b, e)
        if key not in cache:
            logits, _, scale = go.reference(w, cfg, ids[b:e])
            cache[key] = (F.log_softmax(torch.from_numpy(logits), dim=-1).numpy(), float(scale.max()))
        lp, sc = cache[key]
        smax = max(smax, sc)
        for t in range(s0, e):
            nats -= lp[t - b - 1][ids[t]]
            n += 1
            nbytes += len(ct.ID2B[ids[t]])
            ctxs.append((t, t - b))
    return nats, n, nbytes, smax, ctxs


def main():
    exe = sys.argv[1]
    ck = ct.Checks(exe)
    cfg = (ct.L, ct.H, ct.E, ct.C, ct.V, ct.FF, False)
    w = go.make_model(*cfg, seed=77)
    text = ("To be, or not to be, that is the question: Whether 'tis nobler in the mind "
            "to suffer the slings and arrows of outrageous fortune, Ω≈ç or to take arms "
            "against a sea of troubles, and by opposing end them.").encode()
    ids = [ct.B2ID[b] for b in text]
    n_ids = len(ids)
    with tempfile.TemporaryDirectory(prefix="tg-evalw-") as tmp:
        gg = os.path.join(tmp, "m.gguf")
        go.write_gguf(gg, w, cfg)
        tf = os.path.join(tmp, "text.txt")
        with open(tf, "wb") as f:
            f.write(text)

        def run_json(*args):
            r = ck.run("eval", "-m", gg, "-f", tf, "--json", *args)
            try:
                return json.loads(r.stdout), r
            except ValueError:
                return {}, r

        cache = {}
        cases = [(N, ["--stride", S], hf_windows(n_ids, N, S), "stride")
                 for N in (ct.C, 17) for S in (1, 5, 16, N)]
        cases += [(N, ["--first-half"], llama_windows(n_ids, N), "first-half") for N in (ct.C, 17, 16)]
        cases += [(N, [], default_windows(n_ids, N), "windows") for N in (ct.C, 17)]
        for N, extra, wins, scheme in cases:
            nats, n, nbytes, smax, ctxs = score(w, cfg, ids, wins, cache)
            j, r = run_json("--ctx", N, *extra)
            ok = r.returncode == 0 and {"tokens", "nats_per_token", "windows", "scheme"} <= set(j)
            if ok:
                npt = nats / n
                tol = go.tolerance(cfg, np.array([smax]))[0]  # a mean of terms each within it
                ok = (j["tokens"] == n and j["windows"] == len(wins) and j["scheme"] == scheme
                      and abs(j["nats_per_token"] - npt) <= tol
                      and abs(j["perplexity"] - math.exp(npt)) <= tol * math.exp(npt) * 1.01
                      and abs(j["nats_per_byte"] - nats / nbytes) <= tol)
            ck.check(ok, "eval --ctx %d %s: %s vs tokens %d windows %d nats/token %.9g (exit %d %s)"
                     % (N, extra, j, n, len(wins), nats / max(n, 1), r.returncode,
                        r.stderr.decode(errors="replace")))
            if scheme == "stride" and extra[1] == 1:
                # every token but the first once, with min(t, N-1) tokens before it
                ck.check(sorted(t for t, _ in ctxs) == list(range(1, n_ids))
                         and all(c == min(t, N - 1) for t, c in ctxs)
                         and len(wins) == n_ids - N + 1, "S = 1 windows, N %d" % N)
            if scheme == "first-half":
                ck.check(all(N // 2 <= c <= N - 1 for _, c in ctxs) and n == (n_ids // N) * (N - 1 - N // 2),
                         "first-half windows, N %d" % N)

        # S = N is the default scheme, the same numbers exactly
        for N in (ct.C, 17):
            a, _ = run_json("--ctx", N)
            b, _ = run_json("--ctx", N, "--stride", N)
            ck.check(a and b and a["tokens"] == b["tokens"] and a["nats_per_token"] == b["nats_per_token"],
                     "--stride %d vs default: %s %s" % (N, a, b))

        # bad combinations
        ck.expect_fail(2, ["--stride", "--first-half", "not both"], "eval", "-m", gg, "-f", tf,
                       "--stride", 4, "--first-half")
        ck.expect_fail(2, ["--stride", "[1, 17]"], "eval", "-m", gg, "-f", tf, "--ctx", 17, "--stride", 18)
        ck.expect_fail(2, ["--stride", "'0'"], "eval", "-m", gg, "-f", tf, "--stride", 0)
        short = os.path.join(tmp, "short.txt")
        with open(short, "wb") as f:
            f.write(text[:40])
        ck.expect_fail(1, ["40 tokens", "--first-half", "64"], "eval", "-m", gg, "-f", short, "--first-half")
        # the same numbers through --opt=value and the long aliases
        a, _ = run_json("--ctx", 17, "--stride", 5)
        r = ck.run("eval", "--model=" + gg, "--file", tf, "--json", "--ctx=17", "--stride=5", "--threads=2")
        ck.check(r.returncode == 0 and json.loads(r.stdout or b"{}") == a, "--opt=value: %r" % r.stdout)

    for f in ck.failures:
        print("FAIL", f)
    print("%d passed, %d failed" % (ck.n - len(ck.failures), len(ck.failures)))
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
