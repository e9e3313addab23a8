#!/usr/bin/python3
"""llama_quantize_test.py — `tinygpt quantize` on Llama GGUFs, against the
PyTorch reference of torch_llama.py and the formats' own definitions.

Random Llamas (GQA untied with every row a multiple of 32; a tied MQA one
whose feed-forward width, 172 as stories260K's, is not) are written as f32
GGUF files by torch_llama's independent writer, with an extra metadata key
and no tokenizer; `tinygpt quantize --tokenizer tok512.bin` rewrites them
in each of the five types, with and without --keep-output. Then:

  * the file: every matrix in the asked type (a 32-block type falls back
    to F16 for rows not a multiple of 32, a tied model's token_embd takes
    --keep-output's type, output.weight its own), 1-D gains F32, the bytes
    of every tensor equal to numpy's encoding of the f32 source from the
    formats' definitions (tests/engine/quant_oracle.py), the extra key kept,
    the tokenizer tok512.bin's pieces and scores (spm_oracle's reader);
  * the logits, every ISA, prefill and decode: against the float64
    reference of the weights as the file holds them (dequantized) with the
    f32 tolerance (f16/bf16/f32) or typed_oracle's flip bound with Q8_0
    activations (q8_0/q4_0); and against the f32 model's reference within
    typed_oracle's cost bound per type (what the type costs, loosely);
  * a failed quantize (a bad --tokenizer, an unwritable output) leaves no
    output file.

usage: llama_quantize_test.py GPT_DUMP TINYGPT SOURCE_ROOT
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpt_oracle as go  # noqa: E402
import spm_oracle  # noqa: E402
import torch_llama as tl  # noqa: E402
import typed_oracle as to  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import gguf_table as ggt  # noqa: E402

qo = tl.qo
GGML = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 8, "bf16": 30}
NAME = {v: k for k, v in GGML.items()}

# name, L, H, KVH, E, HS, D, C, V, F, tied, theta, eps, typed (torch_llama's tuple)
SHAPES = [
    ("gqa-untied", 2, 4, 2, 64, 16, 16, 24, 512, 128, False, 10000.0, 1e-5, True),
    ("mqa-tied-f172", 2, 8, 1, 64, 8, 8, 24, 512, 172, True, 10000.0, 1e-5, True),
]


def read_gguf(path):
    """GGUF v3 from its definition (tests/tools/gguf_table.py): (metadata
    {key: value}, {name: (type, shape numpy order, raw bytes)})."""
    g = ggt.read_gguf(path)
    assert g.version == 3
    return g.kv, {n: (t.type, ggt.shape(t), ggt.raw(g, n)) for n, t in g.tensors.items()}


def from_adjacent(a, heads, HS, D):
    """GGUF's adjacent-pair Q/K rows back to Hugging Face's halves order
    (the inverse of torch_llama.to_adjacent), for the reference."""
    out = a.copy()
    for h in range(heads):
        blk = a[h * HS:h * HS + D]
        out[h * HS:h * HS + D] = blk.reshape(D // 2, 2, -1).swapaxes(0, 1).reshape(D, -1)
    return out


def expected_type(name, shape, typ, out_typ, tied):
    if len(shape) == 1:
        return "f32"
    head = name == "output.weight" or (tied and name == "token_embd.weight")
    t = out_typ if head else typ
    if t in ("q8_0", "q4_0") and shape[1] % 32:
        return "f16"
    return t


def main():
    driver, exe, root = sys.argv[1], sys.argv[2], sys.argv[3]
    tokbin = os.path.join(spm_oracle.shared_dir(root), "data", "stories260K", "tok512.bin")
    if not os.path.isfile(tokbin):
        return spm_oracle.missing_data("llama_quantize_test", tokbin)
    raw, scores = spm_oracle.read_tokenizer_bin(tokbin)[:2]
    # llama.cpp's spelling of a llama2.c piece: '▁' for the space
    # llama2.c's export wrote, and BOS/EOS without the newlines around them
    pieces = [b.decode("utf-8").replace(" ", "\u2581") for b in raw]
    pieces[1], pieces[2] = "<s>", "</s>"
    isas = subprocess.run([driver, "--isas"], capture_output=True, text=True, check=True).stdout.split()
    print("ISAs:", " ".join(isas))
    with tempfile.TemporaryDirectory(prefix="tg-lquant-") as tmp:
        o = go.Oracle(driver, tmp)

        check = o.check
        for si, s in enumerate(SHAPES):
            name, L, H, KVH, E, HS, D, C, V, Fw, tied, theta, eps, typed = s
            w = tl.make_model(s, 7100 + si)
            src = os.path.join(tmp, name + ".gguf")
            tl.write_gguf(src, w, s, meta={"general.author": (go.GGUF_STR, "llama_quantize_test")})
            _, src_t = read_gguf(src)
            rng = np.random.default_rng(7200 + si)
            tokens = rng.integers(0, V, size=C).astype(np.int32)
            tok_path = os.path.join(tmp, "tokens.i32")
            tokens.tofile(tok_path)
            ref32, _, _ = tl.reference(w, s, tokens.tolist())
            spread = float(ref32.std())
            for typ, keep in (("f32", None), ("f16", None), ("bf16", "f32"), ("q8_0", None),
                              ("q8_0", "f16"), ("q4_0", None), ("q4_0", "q8_0")):
                tag = "%s %s%s" % (name, typ, " --keep-output " + keep if keep else "")
                out = os.path.join(tmp, "%s-%s-%s.gguf" % (name, typ, keep))
                cmd = [exe, "quantize", src, out, "--type", typ, "--tokenizer", tokbin]
                if keep:
                    cmd += ["--keep-output", keep]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if not check(r.returncode == 0 and "MB ->" in r.stdout, "%s: quantize exit %d: %s" %
                             (tag, r.returncode, r.stderr.strip())):
                    continue
                meta, ts = read_gguf(out)
                check(meta.get("general.author") == "llama_quantize_test", "%s: the extra key was lost" % tag)
                check(meta.get("general.architecture") == "llama" and
                      meta.get("llama.attention.head_count_kv") == KVH and
                      meta.get("llama.feed_forward_length") == Fw, "%s: llama metadata %s" % (tag, {
                          k: v for k, v in meta.items() if k.startswith("llama.")}))
                check(meta.get("tokenizer.ggml.model") == "llama" and
                      meta.get("tokenizer.ggml.tokens") == pieces and
                      np.array_equal(np.float32(meta.get("tokenizer.ggml.scores")), np.float32(scores)),
                      "%s: the tokenizer is not tok512.bin's" % tag)
                check(sorted(ts) == sorted(src_t), "%s: tensors %s, source has %s" %
                      (tag, sorted(set(ts) ^ set(src_t)), len(src_t)))
                held = {"layers": [dict() for _ in range(L)]}
                n_fb = 0
                for tn, (styp, shape, blob) in src_t.items():
                    if tn not in ts:
                        continue
                    gt, gshape, gblob = ts[tn]
                    want = expected_type(tn, shape, typ, keep or typ, tied)
                    n_fb += want == "f16" and typ in ("q8_0", "q4_0") and len(shape) == 2 and shape[1] % 32 != 0
                    f32 = np.frombuffer(blob, "<f4").reshape(shape)
                    enc = qo.ENC[want](np.ascontiguousarray(f32).reshape(-1)) if want != "f32" else blob
                    check(NAME.get(gt) == want and gshape == shape, "%s: %s is %s %s, want %s %s" %
                          (tag, tn, NAME.get(gt), gshape, want, shape))
                    check(bytes(gblob) == bytes(enc), "%s: %s's bytes differ from the %s encoding of the source"
                          % (tag, tn, want))
                    dq = (qo.dec(want, gblob).reshape(shape).astype(np.float32) if want != "f32" else f32)
                    part = tn.split(".")
                    if part[0] == "blk":
                        key = {"attn_norm": "attn_norm", "ffn_norm": "ffn_norm", "attn_q": "wq", "attn_k": "wk",
                               "attn_v": "wv", "attn_output": "wo", "ffn_gate": "w1", "ffn_up": "w3",
                               "ffn_down": "w2"}[part[2]]
                        if key in ("wq", "wk"):
                            dq = from_adjacent(dq, H if key == "wq" else KVH, HS, D)
                        held["layers"][int(part[1])][key] = dq
                    else:
                        held[{"token_embd": "tok", "output_norm": "out_norm", "output": "output"}[part[0]]] = dq
                if tied:
                    held["output"] = held["tok"]
                if typ in ("q8_0", "q4_0"):
                    check(("kept in f16" in r.stdout) == (n_fb > 0), "%s: fallback summary %r (%d fell back)" %
                          (tag, r.stdout, n_fb))
                blk = typ in ("q8_0", "q4_0")
                q8 = {k for k, cols in (("qkv", E), ("wo", H * HS), ("w13", E), ("w2", Fw))
                      if blk and cols % 32 == 0}
                q8_out = expected_type("output.weight", [V, E], typ, keep or typ, tied) in ("q8_0", "q4_0")
                ref, _, scale = tl.reference(held, s, tokens.tolist(), q8=q8, q8_out=q8_out)
                q8 = bool(q8) or q8_out
                worst_cost = 0.0
                for isa in isas:
                    for chunks in ("0", "1"):
                        got, _ = o.run(out, tok_path, ["--isa", isa, "--chunks", chunks], C, V)
                        what = "%s %s chunks %s" % (tag, isa, chunks)
                        if typ == "bf16" and chunks == "0" and to.bf16_rounds(driver, isa):
                            # the vdpbf16ps prefill GEMM rounds X to bfloat16 (its bound is
                            # test_quant's and typed_oracle's rounded reference): the strict
                            # f32-activation check runs with the feature masked, and the
                            # rounded logits only meet the cost bound against the f32 model
                            # below, as in llama_files
                            os.environ["TINYGPT_CPU_MASK"] = "avx512_bf16"
                            try:
                                masked, _ = o.run(out, tok_path, ["--isa", isa, "--chunks", chunks], C, V)
                            finally:
                                del os.environ["TINYGPT_CPU_MASK"]
                            o.compare(what + " (avx512_bf16 masked)", masked, ref, tl.tolerance(s, scale))
                        elif q8:
                            tl.compare_q(o, what, got, ref, s, scale)
                        else:
                            o.compare(what, got, ref, tl.tolerance(s, scale))
                        worst_cost = max(worst_cost, float(np.abs(got.astype(np.float64) - ref32).max()) / spread)
                if typ != "f32":
                    cost = max(to.COST[typ], to.COST.get(keep, 0.0))
                    check(worst_cost <= cost, "%s: max |dlogit| vs the f32 model %.3g of the logits' spread "
                          "(allowed %.3g)" % (tag, worst_cost, cost))
                else:
                    check(worst_cost <= 1e-4, "%s: f32 requantize moved the logits by %.3g" % (tag, worst_cost))
                print("%s: max |dlogit| vs f32 = %.4f x std(logits); worst / tolerance so far %.4f"
                      % (tag, worst_cost, o.worst))

        # failures leave nothing behind
        src = os.path.join(tmp, SHAPES[0][0] + ".gguf")
        bad = os.path.join(tmp, "bad.gguf")
        r = subprocess.run([exe, "quantize", src, bad, "--type", "q8_0", "--tokenizer", src], capture_output=True,
                           text=True)
        check(r.returncode == 1 and r.stderr.count("\n") == 1 and not os.path.exists(bad),
              "no-tokenizer source as --tokenizer: exit %d %r" % (r.returncode, r.stderr))
        r = subprocess.run([exe, "quantize", src, os.path.join(tmp, "no", "dir.gguf"), "--type", "q8_0",
                            "--tokenizer", tokbin], capture_output=True, text=True)
        check(r.returncode == 1 and r.stderr.count("\n") == 1, "unwritable output: exit %d %r" %
              (r.returncode, r.stderr))
        return o.report()


if __name__ == "__main__":
    sys.exit(main())
