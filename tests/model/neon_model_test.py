#!/usr/bin/python3
"""neon_model_test.py — the whole forward pass of the aarch64 build (NEON
and scalar kernels, under qemu-aarch64) against PyTorch on the build
machine.

The aarch64 CI stage cross-builds engine/, weights/, model/ and gpt_dump
(-Dengine_only=true -Dmodel_check=true) and runs this script with the
native /usr/bin/python3: random models are written here as GGUF files
(tests/model/torch_llama.py's llama writer with GGUF's adjacent Q/K rows,
tests/model/gpt_oracle.py's and typed_oracle.py's GPT-2 writers), the
reference logits computed by PyTorch (float64) at test time, and gpt_dump
— an aarch64 ELF, run through binfmt_misc — prints every position's
logits on each ISA it reports (scalar, neon):

  * a GQA Llama (untied, head size 16) in f32 and q8_0 (Q8_0 activations,
    torch_llama's flip bound), an MQA Llama (tied), and GPT-2 in f32 and
    q8_0 (typed_oracle's reference and bound);
  * prefill and token-by-token decode through the KV cache, and 2 threads
    bit-identical to 1;
  * a perturbed weight fails the comparison.

Kept small for CI time under qemu (a few seconds of emulation per run).

usage: neon_model_test.py GPT_DUMP
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpt_oracle as go  # noqa: E402
import torch_llama as tl  # noqa: E402
import typed_oracle as to  # noqa: E402

# torch_llama's tuple: name, L, H, KVH, E, HS, D, C, V, F, tied, theta, eps, typed
LLAMAS = [
    ("neon-gqa-untied", 2, 4, 2, 64, 16, 16, 20, 97, 128, False, 10000.0, 1e-5, True),
    ("neon-mqa-tied", 2, 4, 1, 32, 8, 8, 17, 61, 96, True, 10000.0, 1e-6, False),
]
# gpt_oracle's: L, H, E, C, V, F, tied
GPT2 = ("neon-gpt2", 2, 4, 64, 20, 101, 128, True)


def main():
    driver = sys.argv[1]
    r = subprocess.run([driver, "--isas"], capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: %s --isas: exit %d %s" % (driver, r.returncode, r.stderr.strip()))
        return 1
    isas = r.stdout.split()
    print("ISAs:", " ".join(isas))
    with tempfile.TemporaryDirectory(prefix="tg-neon-") as tmp:
        o = go.Oracle(driver, tmp)
        tok_path = os.path.join(tmp, "tokens.i32")

        def run_all(tag, path, N, V, cmp):
            for isa in isas:
                pre, _ = o.run(path, tok_path, ["--isa", isa, "--chunks", "0"], N, V)
                cmp("%s %s prefill" % (tag, isa), pre)
                dec, _ = o.run(path, tok_path, ["--isa", isa, "--chunks", "1"], N, V)
                cmp("%s %s decode" % (tag, isa), dec)
                two, _ = o.run(path, tok_path, ["--isa", isa, "--chunks", "0", "-t", "2"], N, V)
                o.same("%s %s prefill: 2 threads vs 1" % (tag, isa), two, pre)

        def must_fail(tag, path, N, V, cmp_probe):
            bl, _ = o.run(path, tok_path, ["--isa", isas[-1], "--chunks", "0"], N, V)
            o.checks += 1
            if cmp_probe(bl):
                o.failures.append("%s: a perturbed model passed the comparison" % tag)

        for si, s in enumerate(LLAMAS):
            name, L, H, KVH, E, HS, D, C, V, Fw, tied, theta, eps, typed = s
            w = tl.make_model(s, 8100 + si)
            tokens = np.random.default_rng(8200 + si).integers(0, V, size=C).astype(np.int32)
            tokens.tofile(tok_path)
            for typ in ("f32", "q8_0") if typed else ("f32",):
                path = os.path.join(tmp, "%s-%s.gguf" % (name, typ))
                held = tl.write_gguf(path, w, s, typ)
                q8 = typ == "q8_0"
                ref, _, scale = tl.reference(held, s, tokens.tolist(), q8=q8)
                tol = tl.tolerance(s, scale)
                if q8:
                    def cmp(what, got, ref=ref, scale=scale, s=s):
                        return tl.compare_q(o, what, got, ref, s, scale)
                else:
                    def cmp(what, got, ref=ref, tol=tol):
                        return o.compare(what, got, ref, tol)
                run_all("%s %s" % (name, typ), path, C, V, cmp)
                wp = tl.make_model(s, 8100 + si)
                wp["layers"][-1]["wo"][E // 2, 0] += 0.05
                bad = os.path.join(tmp, "bad.gguf")
                tl.write_gguf(bad, wp, s, typ)
                probe = go.Oracle(driver, tmp)
                must_fail("%s %s" % (name, typ), bad, C, V,
                          (lambda got: tl.compare_q(probe, "perturbed", got, ref, s, scale)) if q8 else
                          (lambda got: probe.compare("perturbed", got, ref, tol)))
            print("%s: worst error / tolerance so far %.4f" % (name, o.worst))

        name, L, H, E, C, V, Fw, tied = GPT2
        cfg = (L, H, E, C, V, Fw, tied)
        w = go.make_model(L, H, E, C, V, Fw, tied, seed=8300)
        tokens = np.random.default_rng(8400).integers(0, V, size=C).astype(np.int32)
        tokens.tofile(tok_path)
        for typ in ("f32", "q8_0"):
            path = os.path.join(tmp, "%s-%s.gguf" % (name, typ))
            if typ == "f32":
                go.write_gguf(path, w, cfg)
                ref, _, scale = go.reference(w, cfg, tokens.tolist())
                tol = go.tolerance(cfg, scale)

                def cmp(what, got, ref=ref, tol=tol):
                    return o.compare(what, got, ref, tol)
            else:
                wq = to.write_typed_gguf(path, w, cfg, typ)
                ref, scale = to.reference_q(wq, cfg, tokens.tolist())

                def cmp(what, got, ref=ref, scale=scale):
                    return to.compare_q(o, what, got, ref, cfg, scale)
            run_all("%s %s" % (name, typ), path, C, V, cmp)
        wp = go.make_model(L, H, E, C, V, Fw, tied, seed=8300)
        wp["layers"][-1]["proj_b"] = wp["layers"][-1]["proj_b"].copy()
        wp["layers"][-1]["proj_b"][E // 2] += 0.01
        bad = os.path.join(tmp, "bad.gguf")
        go.write_gguf(bad, wp, cfg)
        ref, _, scale = go.reference(w, cfg, tokens.tolist())
        probe = go.Oracle(driver, tmp)
        must_fail("%s f32" % name, bad, C, V, lambda got: probe.compare("perturbed", got, ref,
                                                                        go.tolerance(cfg, scale)))
        return o.report()


if __name__ == "__main__":
    sys.exit(main())
