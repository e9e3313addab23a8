#!/usr/bin/python3
"""heads_test.py — `tinygpt compare` and `tinygpt attention` against the
PyTorch reference of tests/model/gpt_oracle.py.

Two random byte-level GPT-2s of the same size (1 head and 4 heads) are
written as GGUF; the reference recomputes, independently, everything the
commands report:

  * attention weights of a prompt (`attention --json`);
  * quality: nats/token, nats/byte, loss by window-position bucket and the
    in-context score;
  * per head: normalised entropy, confidence, sink, previous-token, local and
    induction scores (the induction sequences are regenerated here with the
    same splitmix64 stream), ablation Δloss (that head's output zeroed), the
    loss keeping only one head of a layer, and the best/random-head summary;
  * agreement: top-1 agreement and mean KL(A||B);
  * SVG output parses with xmllint, JSON parses;
  * bad input: missing model, different vocabularies, a one-token text,
    bad flags, an unwritable SVG path.

usage: heads_test.py TINYGPT
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model"))
import gpt_oracle as go  # noqa: E402
import cli_test  # noqa: E402

L, E, C, V, FF = 2, 32, 64, 257, 128
N = 32            # window
HEAD_TOKENS = 150  # --head-tokens
SEED = 5
LOCAL = 4          # TG_HEAD_LOCAL_WINDOW
U = 2.0 ** -24

TEXT = (b"First Citizen:\nBefore we proceed any further, hear me speak.\n\n"
        b"All:\nSpeak, speak.\n\nFirst Citizen:\nYou are all resolved rather to die "
        b"than to famish?\n\nAll:\nResolved. resolved.\n\nFirst Citizen:\nFirst, you "
        b"know Caius Marcius is chief enemy to the people.\n")


assert cli_test.V == V
B2ID = cli_test.B2ID  # byte -> id in gpt_oracle's byte-level vocabulary


class Checks:
    def __init__(self):
        self.failures, self.n = [], 0

    def close(self, what, got, want, tol):
        self.n += 1
        if got is None or not math.isfinite(got) or abs(got - want) > tol:
            self.failures.append("%s: got %r, want %r (tol %.3g)" % (what, got, want, tol))

    def true(self, what, cond, detail=""):
        self.n += 1
        if not cond:
            self.failures.append("%s %s" % (what, detail))


def run(args, **kw):
    return subprocess.run(args, capture_output=True, **kw)


def windows(ids, limit=None):
    """The windows `compare` scans: consecutive N-token windows, each scoring
    positions 1..n-1, stopping after `limit` scored tokens."""
    out, scored = [], 0
    for w0 in range(0, len(ids), N):
        n = min(N, len(ids) - w0)
        if n < 2 or (limit is not None and scored >= limit):
            break
        if limit is not None and n - 1 > limit - scored:
            n = limit - scored + 1
        out.append(ids[w0:w0 + n])
        scored += n - 1
    return out


def log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def window_losses(w, cfg, ids, limit=None, mask=None):
    """[(nll at each window position 1..n-1, logits rows)] per window."""
    res = []
    for win in windows(ids, limit):
        logits, _, scale = go.reference(w, cfg, win[:-1], mask)
        nll = -log_softmax(logits)[np.arange(len(win) - 1), win[1:]]
        res.append((nll, logits, scale))
    return res


def buckets():
    b = [1, max(N // 8, 2)]
    b.append(max(N // 4, b[1] + 1))
    b.append(max(N // 2, b[2] + 1))
    b.append(N)
    return [min(x, N) for x in b]


def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return state, z ^ (z >> 31)


def induction_seqs(seed, block, n_seqs=4):
    state, seqs = seed, []
    for _ in range(n_seqs):
        r = []
        while len(r) < block:
            state, z = splitmix(state)
            t = z % V
            if t != V - 1:  # <|endoftext|> is special
                r.append(t)
        seqs.append(r + r)
    return seqs


def head_stats(w, cfg, ids):
    """Reference per-head metrics (see model/heads.h)."""
    H = cfg[1]
    acc = {k: np.zeros((L, H)) for k in ["ent", "conf", "sink", "prev", "local", "ind"]}
    n_ent = n_q = n_prev = n_ind = 0
    for win in windows(ids, HEAD_TOKENS):
        _, probs, _ = go.reference(w, cfg, win[:-1])
        T = len(win) - 1
        for q in range(T):
            p = probs[:, :, q, :q + 1]
            if q + 1 >= 2:
                ent = -(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0)).sum(-1)
                acc["ent"] += ent / math.log(q + 1)
                n_ent += 1
            acc["conf"] += p.max(-1)
            acc["sink"] += p[:, :, 0]
            acc["local"] += p[:, :, max(0, q - LOCAL + 1):].sum(-1)
            n_q += 1
            if q >= 1:
                acc["prev"] += p[:, :, q - 1]
                n_prev += 1
    block = min(N // 2, 64)
    for seq in induction_seqs(SEED, block):
        _, probs, _ = go.reference(w, cfg, seq)
        for q in range(block, 2 * block):
            t = q + 1 - block
            if 1 <= t < block:
                acc["ind"] += probs[:, :, q, t]
                n_ind += 1
    return {"entropy": acc["ent"] / n_ent, "confidence": acc["conf"] / n_q,
            "sink": acc["sink"] / n_q, "prev": acc["prev"] / n_prev,
            "local": acc["local"] / n_q, "induction": acc["ind"] / n_ind}


def loss_tol(cfg, res):
    """A mean of nll = logsumexp - logit is off by at most twice the worst
    logit error, which gpt_oracle.tolerance bounds per row."""
    return 2.0 * max(float(go.tolerance(cfg, s).max()) for _, _, s in res)


def main():
    tinygpt = sys.argv[1]
    ck = Checks()
    tmp = tempfile.mkdtemp(prefix="tg-heads-")
    try:
        models, cfgs = {}, {}
        for name, H, seed in [("A", 1, 11), ("B", 4, 12)]:
            cfg = (L, H, E, C, V, FF, True)
            w = go.make_model(*cfg, seed=seed)
            go.write_gguf(os.path.join(tmp, name + ".gguf"), w, cfg)
            models[name], cfgs[name] = w, cfg
        text = os.path.join(tmp, "text.txt")
        with open(text, "wb") as f:
            f.write(TEXT)
        ids = [B2ID[b] for b in TEXT]

        # --- attention --json: every weight of the prompt ---
        prompt = "The researcher said it was wrong."
        r = run([tinygpt, "attention", "-m", os.path.join(tmp, "B.gguf"), "-p", prompt, "--json"])
        ck.true("attention exit 0", r.returncode == 0, r.stderr.decode())
        got = json.loads(r.stdout)
        pids = [B2ID[b] for b in prompt.encode()]
        ck.true("attention tokens", got["tokens"] == pids)
        _, probs, _ = go.reference(models["B"], cfgs["B"], pids)
        # A softmax output's error is about u times the score error's spread;
        # scores are O(few) here, so 64u per weight is generous yet a wrong
        # scale or mask moves weights by > 1e-2.
        worst = 0.0
        for l in range(L):
            for h in range(4):
                for q in range(len(pids)):
                    row = np.array(got["weights"][l][h][q])
                    worst = max(worst, float(np.abs(row - probs[l, h, q, :q + 1]).max()))
        ck.close("attention weights max error", worst, 0.0, 64 * U * 16)

        # --- compare --json against the reference ---
        r = run([tinygpt, "compare", os.path.join(tmp, "A.gguf"), os.path.join(tmp, "B.gguf"),
                 "-f", text, "--ctx", str(N), "--head-tokens", str(HEAD_TOKENS),
                 "--seed", str(SEED), "--json", "--svg", tmp])
        ck.true("compare exit 0", r.returncode == 0, r.stderr.decode())
        out = json.loads(r.stdout)
        b = buckets()
        res_a = window_losses(models["A"], cfgs["A"], ids)
        res_b = window_losses(models["B"], cfgs["B"], ids)
        for m, (name, res) in zip(out["models"], [("A", res_a), ("B", res_b)]):
            cfg, w, H = cfgs[name], models[name], cfgs[name][1]
            tol = loss_tol(cfg, res)
            nll = np.concatenate([x for x, _, _ in res])
            q = m["quality"]
            ck.true(name + " tokens", q["tokens"] == len(nll), (q["tokens"], len(nll)))
            ck.close(name + " nats_per_token", q["nats_per_token"], nll.mean(), tol)
            ck.close(name + " nats_per_byte", q["nats_per_byte"], nll.sum() / len(nll), tol)
            pos = np.concatenate([np.arange(1, len(x) + 1) for x, _, _ in res])
            means = []
            for k in range(4):
                sel = (pos >= b[k]) & (pos < b[k + 1])
                means.append(nll[sel].mean())
                ck.close("%s bucket %d" % (name, k), q["by_position"][k]["nats_per_token"],
                         means[-1], tol)
            ck.close(name + " in-context score", q["in_context_score"], means[3] - means[0], 2 * tol)
            ck.true(name + " config", m["n_head"] == H and m["head_size"] == E // H)
            sp = m["speed"]  # timings: no oracle, but they must be real measurements
            ck.true(name + " speed", sp["prefill_tok_s"] > 0 and sp["decode_tok_s"] > 0 and
                    0 < sp["prefill_attention_share"] < 1 and 0 < sp["decode_attention_share"] < 1, sp)

            ref = head_stats(w, cfg, ids)
            sub = window_losses(w, cfg, ids, HEAD_TOKENS)
            base = np.concatenate([x for x, _, _ in sub]).mean()
            stol = loss_tol(cfg, sub)
            ck.close(name + " baseline loss", m["baseline_loss"], base, stol)
            for hd in m["heads"]:
                l, h = hd["layer"], hd["head"]
                tag = "%s L%d H%d " % (name, l, h)
                for key in ["entropy", "confidence", "sink", "prev", "local", "induction"]:
                    ck.close(tag + key, hd[key], float(ref[key][l, h]), 1e-5)
                abl = np.concatenate([x for x, _, _ in
                                      window_losses(w, cfg, ids, HEAD_TOKENS, [(l, h)])]).mean()
                ck.close(tag + "ablation", hd["ablation_delta"], abl - base, 2 * stol)
                if H > 1:
                    others = [(l, j) for j in range(H) if j != h]
                    only = np.concatenate([x for x, _, _ in
                                           window_losses(w, cfg, ids, HEAD_TOKENS, others)]).mean()
                    ck.close(tag + "only-head loss", hd["only_head_loss"], only, stol)
            if H > 1:
                for lay in m["layers"]:
                    only = [hd["only_head_loss"] for hd in m["heads"] if hd["layer"] == lay["layer"]]
                    ck.true(name + " best head", lay["best_head"] == int(np.argmin(only)))
                    ck.close(name + " random head", lay["random_head_loss"], float(np.mean(only)),
                             1e-8 * abs(np.mean(only)))  # JSON prints 9 digits
        # The two models are built to differ: the metrics must tell them apart.
        ck.true("A and B differ", abs(out["models"][0]["quality"]["nats_per_token"] -
                                      out["models"][1]["quality"]["nats_per_token"]) > 1e-3)

        top1 = kl = n = 0
        for (_, la, _), (_, lb, _) in zip(res_a, res_b):
            top1 += int((la.argmax(-1) == lb.argmax(-1)).sum())
            pa, pb = log_softmax(la), log_softmax(lb)
            kl += float((np.exp(pa) * (pa - pb)).sum())
            n += len(la)
        ag = out["agreement"]
        ck.true("agreement positions", ag["positions"] == n)
        # top-1 can flip only where the two best logits are within the error
        ck.close("top-1 agreement", ag["top1"], top1 / n, 2.0 / n)
        ck.close("mean KL", ag["kl"], kl / n, 4 * max(loss_tol(cfgs["A"], res_a),
                                                      loss_tol(cfgs["B"], res_b)))

        # --- SVG files parse as XML ---
        svg = os.path.join(tmp, "map.svg")
        r = run([tinygpt, "attention", "-m", os.path.join(tmp, "A.gguf"), "--svg", svg, "--log"])
        ck.true("attention --svg exit 0", r.returncode == 0, r.stderr.decode())
        for path in [svg, os.path.join(tmp, "A.svg"), os.path.join(tmp, "B.svg")]:
            x = run(["xmllint", "--noout", path])
            ck.true("xmllint " + os.path.basename(path), x.returncode == 0, x.stderr.decode())
        r = run([tinygpt, "attention", "-m", os.path.join(tmp, "B.gguf"), "--layer", "1",
                 "--head", "2", "--query", "3"])
        ck.true("attention bars", r.returncode == 0 and b"layer 1 head 2" in r.stdout
                and b"layer 0" not in r.stdout, r.stdout.decode()[:200])

        # --- bad input ---
        other = os.path.join(tmp, "other.gguf")
        cfg_o = (L, 2, E, C, V + 20, FF, True)
        go.write_gguf(other, go.make_model(*cfg_o, seed=3), cfg_o)
        one = os.path.join(tmp, "one.txt")
        with open(one, "wb") as f:
            f.write(b"x")
        A, B = os.path.join(tmp, "A.gguf"), os.path.join(tmp, "B.gguf")
        cases = [
            ([tinygpt, "compare", A, os.path.join(tmp, "missing.gguf"), "-f", text], 1, b"missing.gguf"),
            ([tinygpt, "compare", A, other, "-f", text], 1, b"different vocabularies"),
            ([tinygpt, "compare", A, B, "-f", one], 1, b"at least 2"),
            ([tinygpt, "compare", A, B], 2, b"-f TEXT"),
            ([tinygpt, "compare", A, "-f", text], 2, b"two models"),
            ([tinygpt, "compare", A, B, "-f", text, "--ctx", "999"], 2, b"--ctx"),
            ([tinygpt, "compare", A, B, "-f", text, "--bogus"], 2, b"--bogus"),
            ([tinygpt, "attention", "-m", A, "--layer", "9"], 2, b"--layer"),
            ([tinygpt, "attention", "-m", A, "--query", "500"], 2, b"--query"),
            ([tinygpt, "attention", "-m", os.path.join(tmp, "nope.gguf")], 1, b"nope.gguf"),
            ([tinygpt, "attention", "-m", A, "--svg", "/nonexistent-dir/x.svg"], 1, b"x.svg"),
        ]
        for args, code, needle in cases:
            r = run(args)
            msg = r.stderr.strip().split(b"\n")
            ck.true("exit %d for %s" % (code, " ".join(args[1:])),
                    r.returncode == code and needle in r.stderr and len(msg) == 1,
                    "got %d: %r" % (r.returncode, r.stderr[:300]))
        # compare without agreement works across vocabularies
        r = run([tinygpt, "compare", A, other, "-f", text, "--no-agreement", "--json",
                 "--head-tokens", "20"])
        ck.true("--no-agreement", r.returncode == 0 and json.loads(r.stdout)["agreement"] is None,
                r.stderr.decode())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    for f in ck.failures:
        print("FAIL:", f)
    print("%d passed, %d failed" % (ck.n - len(ck.failures), len(ck.failures)))
    return 1 if ck.failures else 0


if __name__ == "__main__":
    sys.exit(main())
