#!/usr/bin/python3
"""Random tiny Llama models in every file format tinygpt reads besides GGUF —
llama2.c legacy .bin, ak42 v1 and v2, Hugging Face folders in F32, F16 and
BF16 — with MHA, GQA and MQA, tied and untied, odd sizes: the logits of
every position, in one prefill and token by token through the KV cache, on
every ISA this CPU has, against the PyTorch reference (tests/model/llama_ref.py,
float64, reading the files' tensors as tests/weights/llama_files.py wrote
them). Then `tinygpt convert` of each file to a llama GGUF must give the same
logits as the file (for HF folders that checks the Q/K row permutation from
halves to adjacent pairs; llama2.c's rows are not permuted, so those logits
must be identical bit for bit).

usage: llama_files_test.py GPT_DUMP TINYGPT
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "weights"))
import llama_files as lf  # noqa: E402
import llama_ref  # noqa: E402
import typed_oracle as to  # noqa: E402

DUMP, TINYGPT = sys.argv[1], sys.argv[2]
failures, checks, worst = [], 0, 0.0


def isas():
    r = subprocess.run([DUMP, "--isas"], capture_output=True, text=True, check=True)
    return r.stdout.split()


def logits(model, tokens, tmp, args, env=None):
    tp, out = os.path.join(tmp, "tok.i32"), os.path.join(tmp, "out.f32")
    np.asarray(tokens, np.int32).tofile(tp)
    r = subprocess.run([DUMP, model, tp, out] + args, capture_output=True, text=True,
                       env=dict(os.environ, **env) if env else None)
    if r.returncode != 0:
        raise RuntimeError(f"gpt_dump {model} {args}: {r.stderr.strip()}")
    return np.fromfile(out, np.float32).reshape(len(tokens), -1)


def compare(what, got, ref, tol):
    global checks, worst
    checks += 1
    err = np.abs(got.astype(np.float64) - ref).max(axis=1)
    ratio = err / tol
    worst = max(worst, float(ratio.max()))
    if not np.all(np.isfinite(got)) or np.any(ratio > 1.0):
        r = int(np.argmax(ratio))
        failures.append(f"{what}: row {r} off by {err[r]:.3g} (tolerance {tol[r]:.3g})")


def convert(src, dst, tok):
    cmd = [TINYGPT, "convert", src, "-o", dst, "--tokenizer", tok]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"convert {src}: {r.stderr.strip()}")


def main():
    rng = np.random.default_rng(1111)
    shapes = [  # dim, hidden, layers, heads, kv_heads, vocab, seq
        (32, 72, 2, 4, 4, 61, 24),   # MHA
        (48, 100, 2, 6, 2, 53, 20),  # GQA, head size 8
        (24, 40, 3, 2, 1, 37, 16),   # MQA, head size 12
    ]
    the_isas = isas()
    with tempfile.TemporaryDirectory() as tmp:
        for dim, hidden, layers, heads, kv, vocab, seq in shapes:
            for tied in (True, False):
                w, cfg = lf.random_llama(rng, dim, hidden, layers, heads, kv, vocab, tied)
                tokens = rng.integers(0, vocab, size=seq).tolist()
                tok = os.path.join(tmp, "tokenizer.bin")  # convert needs one; the text does not matter here
                open(tok, "wb").write(lf.tokenizer_bin_bytes(vocab))
                gs = 8
                v2, held = lf.v2_bytes(w, cfg, seq, gs)
                files = [("legacy", lf.legacy_bytes(w, cfg, seq), w, "adjacent"),
                         ("v1", lf.v1_bytes(w, cfg, seq), w, "adjacent"),
                         ("v2", v2, held, "adjacent")]
                for dtype in ("F32", "F16", "BF16"):
                    files.append(("hf-" + dtype, None, w, "halves"))
                for form, data, ww, pairs in files:
                    tag = f"{form} E{dim} H{heads}/{kv} {'tied' if tied else 'untied'}"
                    if data is not None:
                        path = os.path.join(tmp, form + ".bin")
                        open(path, "wb").write(data)
                        ref_w = ww
                    else:
                        dtype = form[3:]
                        path = os.path.join(tmp, form)
                        lf.write_hf_folder(path, w, cfg, seq, dtype, rms_eps=1e-5)
                        # what the folder holds, under our names, rows in halves order
                        ref_w = {}
                        for name, x in w.items():
                            part = name.split(".")[-2]
                            if part == "attn_q":
                                x = lf.hf_from_adjacent(x, heads)
                            elif part == "attn_k":
                                x = lf.hf_from_adjacent(x, kv)
                            ref_w[name] = lf.hf_as_stored(x, dtype)
                    m = llama_ref.Llama(ref_w, cfg, eps=1e-5, pairs=pairs)
                    ref = m.logits(tokens).numpy()
                    tol = m.tolerance()
                    try:
                        for isa in the_isas:
                            if form == "hf-BF16" and to.bf16_rounds(DUMP, isa):
                                # the vdpbf16ps GEMM rounds X to bfloat16 (2^-8 relative
                                # per input: its exact bound is tests/engine/test_quant.c's
                                # and typed_oracle's rounded reference). Here: the f32
                                # path with the feature masked meets the f32 tolerance,
                                # and the rounded one stays within 10% of the logits'
                                # spread (typed_oracle's bf16 cost bound)
                                masked = logits(path, tokens, tmp, ["--isa", isa],
                                                {"TINYGPT_CPU_MASK": "avx512_bf16"})
                                compare(f"{tag} {isa} prefill (avx512_bf16 masked)", masked, ref, tol)
                                got = logits(path, tokens, tmp, ["--isa", isa])
                                cost = float(np.abs(got - ref).max() / ref.std())
                                if not cost <= 0.1:
                                    failures.append(f"{tag} {isa} prefill on vdpbf16ps: max |dlogit| "
                                                    f"{cost:.3g} of the logits' spread (allowed 0.1)")
                            else:
                                compare(f"{tag} {isa} prefill", logits(path, tokens, tmp, ["--isa", isa]),
                                        ref, tol)
                            compare(f"{tag} {isa} decode", logits(path, tokens, tmp, ["--isa", isa, "--chunks", "1"]),
                                    ref, tol)
                        # the tolerance separates the conventions: the other pair order
                        # (or v2's weights before quantization) is far outside it
                        if form in ("hf-F32", "v2"):
                            alt = llama_ref.Llama(ref_w if form == "hf-F32" else w, cfg, eps=1e-5,
                                                  pairs="adjacent")
                            alt_ref = alt.logits(tokens).numpy()
                            got = logits(path, tokens, tmp, [])
                            if np.all(np.abs(got - alt_ref).max(axis=1) <= tol):
                                failures.append(f"{tag}: the wrong reference ({'adjacent pairs' if form == 'hf-F32' else 'unquantized weights'}) "
                                                f"is inside the tolerance too: the check cannot tell them apart")
                        gguf = os.path.join(tmp, form + ".gguf")
                        convert(path, gguf, tok)
                        a = logits(path, tokens, tmp, [])
                        b = logits(gguf, tokens, tmp, [])
                        compare(f"{tag} converted GGUF", b, ref, tol)
                        # the file itself, read from the GGUF spec: Q/K rows as llama.cpp's converter
                        # permutes them (from HF), untouched from llama2.c; llama.* keys
                        meta, gt = lf.read_gguf_f32(open(gguf, "rb").read())
                        for l in range(layers):
                            for part, nh in (("attn_q", heads), ("attn_k", kv)):
                                nm = f"blk.{l}.{part}.weight"
                                want = ref_w[nm] if data is not None else lf.adjacent_from_hf(ref_w[nm], nh)
                                if nm not in gt or not np.array_equal(gt[nm], want):
                                    failures.append(f"{tag}: the GGUF's {nm} is not the rows llama.cpp's converter writes")
                        want_meta = {"general.architecture": "llama", "llama.attention.head_count": heads,
                                     "llama.attention.head_count_kv": kv, "llama.block_count": layers,
                                     "llama.embedding_length": dim, "llama.feed_forward_length": hidden,
                                     "llama.rope.dimension_count": dim // heads, "llama.rope.freq_base": 10000.0,
                                     "tokenizer.ggml.model": "llama"}
                        for k, v in want_meta.items():
                            if meta.get(k) != v:
                                failures.append(f"{tag}: GGUF {k} = {meta.get(k)!r}, want {v!r}")
                        if ("output.weight" in gt) == tied:
                            failures.append(f"{tag}: output.weight {'written although tied' if tied else 'missing'}")
                        if data is not None and not np.array_equal(a.view(np.uint32), b.view(np.uint32)):
                            failures.append(f"{tag}: the converted GGUF's logits differ from the file's "
                                            f"(max {np.abs(a - b).max():.3g}); no permutation, so they must not")
                    except RuntimeError as e:
                        failures.append(f"{tag}: {e}")
    for f in failures:
        print("FAIL:", f)
    print(f"llama_files_test: {checks} comparisons, worst error {worst:.3f} of the tolerance, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
