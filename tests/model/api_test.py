#!/usr/bin/python3
"""api_test.py — the C API of issue #13 (include/tinygpt.h) against
independent oracles. test_api (built against the shared and the static
library, and with --install against the installed header and library via
pkg-config) runs a random byte-level GPT-2 written as GGUF; what it writes
must match:
  - the PyTorch reference (gpt_oracle.reference): attention weights
    [L,H,T,T], log-probabilities, the text score, logits with a head
    silenced, the model information (shapes, parameter and byte counts);
  - `tinygpt generate` with the same seed and settings: the tokens, their
    log-probabilities (--json), the text with stop strings (--no-echo), the
    context crop on a 16-position cache (-c 16) and keep 0 (--keep 0).
And libtinygpt.so exports exactly the functions tinygpt.h declares.

usage: api_test.py TINYGPT LIBTINYGPT_SO HEADER [--install BUILDDIR TEST_API_C SANITIZE]
                   TEST_API [TEST_API ...]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_test as ct  # noqa: E402
import gpt_oracle as go  # noqa: E402
import lib_test  # noqa: E402

SEED, N = 11, 24
TEXT = "ROMEO: a text of the test, ünïcode"


def exported(so):
    r = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True, text=True)
    return {ln.split()[-1] for ln in r.stdout.splitlines() if ln.split()[-1].startswith("tinygpt")}


def declared(header):
    src = re.sub(r"/\*.*?\*/", "", open(header).read(), flags=re.S)
    return set(re.findall(r"\b(tinygpt_[a-z0-9_]+)\s*\(", src))


class Run:
    def __init__(self, d):
        self.d = d

    def arr(self, name, dt):
        return np.fromfile(os.path.join(self.d, name), dtype=dt)

    def raw(self, name):
        with open(os.path.join(self.d, name), "rb") as f:
            return f.read()


def main():
    args = sys.argv[1:]
    tinygpt, so, header = args[:3]
    args = args[3:]
    cfg = (ct.L, ct.H, ct.E, ct.C, ct.V, ct.FF, True)
    L, H, E, C, V, FF, _ = cfg
    w = go.make_model(*cfg, seed=91)
    chk = ct.Checks(tinygpt)

    exp, dec = exported(so), declared(header)
    chk.check(exp == dec and len(dec) > 40, "exported but not declared %s, declared but not "
              "exported %s" % (sorted(exp - dec), sorted(dec - exp)))

    with tempfile.TemporaryDirectory(prefix="tg-api-") as tmp:
        model = os.path.join(tmp, "m.gguf")
        go.write_gguf(model, w, cfg)
        env = dict(os.environ)
        env.pop("TINYGPT_ISA", None)
        if args[:1] == ["--install"]:
            builddir, src, sanitize = args[1], args[2], args[3]
            args = args[4:]
            fails = []
            exe = lib_test.install_and_build(builddir, src, sanitize, os.path.join(tmp, "dest"),
                                             env, fails)
            chk.check(not fails, "; ".join(fails))
            if exe:
                args.append(exe)

        # the CLI's answers, once
        def cli(*a):
            r = subprocess.run([tinygpt, "generate", "-m", model] +
                               [x if isinstance(x, bytes) else str(x) for x in a],
                               capture_output=True, env=env, timeout=120,
                               stdin=subprocess.DEVNULL)
            chk.check(r.returncode == 0, "tinygpt generate %s: %s" % (a, r.stderr[-300:]))
            return r.stdout
        gen = ["-p", TEXT, "--seed", SEED, "--temp", "1.5", "--top-k", "40", "--top-p", "0.95",
               "--min-p", "0", "--repeat-penalty", "3", "--repeat-window", "64"]
        js = json.loads(cli(*gen, "-n", N, "--json", "--top-logprobs", "3"))
        cli_ids = [t["id"] for t in js["samples"][0]["tokens"]]
        cli_lp = [t["logprob"] for t in js["samples"][0]["tokens"]]
        cli_text = cli(*gen, "-n", N, "--no-echo")
        shift_ids = [t["id"] for t in json.loads(cli(*gen[:1], TEXT[:4], *gen[2:], "-n", 40,
                                                     "-c", 16, "--json"))["samples"][0]["tokens"]]
        context = json.loads(cli(*gen[:1], TEXT[:4], *gen[2:], "-n", -1, "-c", 16, "--keep", 0,
                                 "--json"))["samples"][0]
        ids = [ct.B2ID[b] for b in TEXT.encode()]
        T = len(ids)
        ref, ref_attn, scale = go.reference(w, cfg, ids)
        tol = go.tolerance(cfg, scale)
        ref_lp = ref - np.log(np.exp(ref - ref.max(1, keepdims=True)).sum(1, keepdims=True)) \
            - ref.max(1, keepdims=True)
        masked_ref, _, mscale = go.reference(w, cfg, ids, mask=[(L - 1, 0)])
        mtol = go.tolerance(cfg, mscale)
        n_params = sum(a.size for k, a in w.items() if k != "layers" and k != "lm_head") + \
            sum(a.size for y in w["layers"] for a in y.values())

        for exe in args:
            out = os.path.join(tmp, "out-" + os.path.basename(exe))
            os.makedirs(out, exist_ok=True)
            r = subprocess.run([exe, model, TEXT, out, str(SEED), str(N)], capture_output=True,
                               text=True, timeout=300, env=env)
            name = os.path.basename(exe)
            if not chk.check(r.returncode == 0, "%s: exit %d: %s" % (name, r.returncode,
                                                                   r.stderr.strip())):
                continue
            o = Run(out)
            chk.check(o.arr("ids.i32", np.int32).tolist() == ids, "%s: tokens" % name)
            info = dict(ln.split(" ", 1) for ln in o.raw("info.txt").decode().splitlines())
            want = {"arch": "gpt2", "n_layer": L, "n_head": H, "n_kv_head": H, "n_embd": E,
                    "head_size": E // H, "n_ff": FF, "n_vocab": V, "n_ctx_train": C, "n_ctx": C,
                    "tied": 1, "n_params": n_params, "n_bytes": 4 * n_params,
                    "weight_type": "f32", "bos": V - 1, "eos": V - 1,
                    "n_tensors": 2 + 12 * L + 2}
            for k, v in want.items():
                chk.check(info.get(k) == str(v), "%s: info %s = %s, want %s"
                          % (name, k, info.get(k), v))
            # attention against the reference's softmax weights (causal zeros included)
            attn = o.arr("attn.f32", np.float32).reshape(L, H, T, T)
            d = np.abs(attn - ref_attn).max()
            chk.check(d < 1e-4, "%s: attention off by %g" % (name, d))
            chk.check(np.all(np.triu(attn, 1) == 0), "%s: weights above the diagonal" % name)
            lp = o.arr("logprobs.f32", np.float32).reshape(T, V)
            d = np.abs(lp - ref_lp).max(axis=1)
            chk.check(np.all(d < 2 * tol + 1e-5), "%s: log-probabilities off by %g (tol %g)"
                      % (name, d.max(), tol.min()))
            sc = o.arr("score.f32", np.float32)
            want_sc = np.array([ref_lp[t, ids[t + 1]] for t in range(T - 1)])
            d = np.abs(sc - want_sc)
            chk.check(sc.size == T - 1 and np.all(d < 2 * tol[:-1] + 1e-5),
                      "%s: score off by %g" % (name, d.max()))
            ms = o.arr("masked.f32", np.float32).reshape(T, V)
            d = np.abs(ms - masked_ref).max(axis=1)
            chk.check(np.all(d < mtol), "%s: head-masked logits off by %g (tol %g)"
                      % (name, d.max(), mtol.min()))
            chk.check(np.abs(masked_ref - ref).max() > 10 * mtol.max(),
                      "the silenced head matters (else the mask test proves nothing)")
            # generation against the CLI
            g = o.arr("gen.i32", np.int32).tolist()
            glp = o.arr("gen.f64", np.float64)
            chk.check(g == cli_ids, "%s: generated %s, tinygpt generate %s" % (name, g, cli_ids))
            chk.check(len(glp) == len(cli_lp) and np.allclose(glp, cli_lp, rtol=1e-8, atol=1e-8),
                      "%s: log-probabilities %s vs the CLI's %s" % (name, glp[:4], cli_lp[:4]))
            chk.check(o.raw("gen.txt") + b"\n" == cli_text, "%s: text %r vs the CLI's %r"
                      % (name, o.raw("gen.txt"), cli_text))
            stops = [bytes.fromhex(x) for x in o.raw("stops.txt").decode().split()]
            st = cli(*gen, "-n", N, "--no-echo", "--stop", stops[0], "--stop", stops[1])
            chk.check(o.raw("stop.txt") + b"\n" == st, "%s: with stop strings %r: %r vs the "
                          "CLI's %r" % (name, stops, o.raw("stop.txt"), st))
            chk.check(o.arr("shift.i32", np.int32).tolist() == shift_ids,
                      "%s: the crop on a 16-position cache differs from -c 16" % name)
            cx = o.arr("context.i32", np.int32).tolist()
            chk.check(cx == [t["id"] for t in context["tokens"]] and context["stop"] == "context",
                      "%s: keep 0: %s vs the CLI's %s (%s)" % (name, cx, context["tokens"][:3],
                                                             context["stop"]))
    for f in chk.failures:
        print("FAIL", f)
    print("%d passed, %d failed" % (chk.n - len(chk.failures), len(chk.failures)))
    return 1 if chk.failures else 0


if __name__ == "__main__":
    sys.exit(main())
