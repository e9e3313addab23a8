#!/usr/bin/python3
"""typed_oracle.py — the GPT-2 forward pass on F16, BF16, Q8_0 and Q4_0 weights
against the PyTorch reference (gpt_oracle.py's), every ISA, prefill and decode.

Random small models (widths multiples of 32) are written as GGUF files here,
their matrices encoded by numpy from the formats' definitions
(tests/engine/quant_oracle.py: ggml's block layouts, IEEE half, bfloat16);
1-D tensors and the position embedding stay f32. Two comparisons per type:

  * against the float64 reference of the *dequantized* model (the weights as
    the file holds them). f16/bf16 are then computed exactly like f32, so
    gpt_oracle's f32 tolerance applies unchanged. For q8_0/q4_0 the
    reference also quantizes every matmul input to Q8_0 as the engine does;
    a row then agrees to f32 precision unless some input sat on an int8
    rounding boundary and C's f32 value fell on the other side, which moves
    the row by a bounded amount (flip_bound). So: every row within the flip
    bound and at least 3/4 of the rows within the f32 tolerance;
  * against the original f32 model: what the weight type costs, reported as
    max |dlogit| / std(logits) and bounded loosely (f16 2%, bf16 10%, q8_0
    50%, q4_0 4x: these random models are built to be sensitive, with sharp
    attention; q4_0's bound only catches NaN or garbage).

Also: 1 and 3 threads bit-identical, and a perturbed model fails the first
comparison (the tolerance is not loose enough to hide a bug).

usage: typed_oracle.py GPT_DUMP
"""
import importlib.util
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpt_oracle as go  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "quant_oracle", os.path.join(HERE, "..", "engine", "quant_oracle.py"))
qo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(qo)

# (name, L, H, E, C, V, F, tied)
SHAPES = [
    ("typed-4heads", 2, 4, 64, 40, 300, 128, True),
    ("typed-untied", 2, 3, 96, 33, 101, 256, False),
]
GGML = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 8, "bf16": 30}
COST = {"f16": 0.02, "bf16": 0.1, "q8_0": 0.5, "q4_0": 4.0}


def encode(name, a):
    """(bytes, dequantized float32 array) of a matrix in type `name`."""
    flat = np.ascontiguousarray(a, dtype=np.float32).reshape(-1)
    b = qo.ENC[name](flat)
    return b, qo.dec(name, b).reshape(a.shape)


def write_typed_gguf(path, w, cfg, typ):
    """gpt_oracle's GGUF with the matrices in `typ`: returns the dequantized
    weights (what the file holds)."""
    L, H, E, C, V, Fw, tied = cfg
    wq = {k: v for k, v in w.items() if k != "layers"}
    wq["layers"] = [dict(y) for y in w["layers"]]
    toks = go.vocab_tokens(V)
    kvs = [
        go.gguf_kv("general.architecture", go.GGUF_STR, "gpt2"),
        go.gguf_kv("gpt2.context_length", go.GGUF_U32, C),
        go.gguf_kv("gpt2.embedding_length", go.GGUF_U32, E),
        go.gguf_kv("gpt2.feed_forward_length", go.GGUF_U32, Fw),
        go.gguf_kv("gpt2.block_count", go.GGUF_U32, L),
        go.gguf_kv("gpt2.attention.head_count", go.GGUF_U32, H),
        go.gguf_kv("gpt2.attention.layer_norm_epsilon", go.GGUF_F32, go.EPS_LN),
        go.gguf_kv("tokenizer.ggml.model", go.GGUF_STR, "gpt2"),
        go.gguf_kv("tokenizer.ggml.tokens", go.GGUF_ARR, (go.GGUF_STR, toks)),
        go.gguf_kv("tokenizer.ggml.merges", go.GGUF_ARR, (go.GGUF_STR, [])),
    ]
    tensors = []  # (name, shape, type, bytes)

    def mat(name, holder, key):
        b, dq = encode(typ, holder[key])
        holder[key] = dq
        tensors.append((name, holder[key].shape, GGML[typ], b))

    def f32(name, a):
        tensors.append((name, a.shape, 0, np.ascontiguousarray(a, dtype="<f4").tobytes()))

    mat("token_embd.weight", wq, "wte")
    f32("position_embd.weight", w["wpe"])
    names = [("ln1_w", "attn_norm.weight"), ("ln1_b", "attn_norm.bias"),
             ("qkv_w", "attn_qkv.weight"), ("qkv_b", "attn_qkv.bias"),
             ("proj_w", "attn_output.weight"), ("proj_b", "attn_output.bias"),
             ("ln2_w", "ffn_norm.weight"), ("ln2_b", "ffn_norm.bias"),
             ("up_w", "ffn_up.weight"), ("up_b", "ffn_up.bias"),
             ("down_w", "ffn_down.weight"), ("down_b", "ffn_down.bias")]
    for i, y in enumerate(wq["layers"]):
        for k, n in names:
            if k.endswith("_w") and k not in ("ln1_w", "ln2_w"):
                mat("blk.%d.%s" % (i, n), y, k)
            else:
                f32("blk.%d.%s" % (i, n), y[k])
    f32("output_norm.weight", w["lnf_w"])
    f32("output_norm.bias", w["lnf_b"])
    if tied:
        wq["lm_head"] = wq["wte"]
    else:
        mat("output.weight", wq, "lm_head")
    align = 32
    data, info, off = b"", b"", 0
    for name, shape, t, blob in tensors:
        dims = list(reversed(shape))
        info += go.gguf_str(name) + struct.pack("<I", len(dims))
        info += b"".join(struct.pack("<Q", d) for d in dims)
        info += struct.pack("<IQ", t, off)
        pad = (-len(blob)) % align
        data += blob + b"\0" * pad
        off += len(blob) + pad
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + info
    head += b"\0" * ((-len(head)) % align)
    with open(path, "wb") as f:
        f.write(head + data)
    return wq


def quant_act(x):
    """x [N, IN] float64 -> the values the engine's Q8_0 activation quantizer
    gives (from float32, per 32-block), as float64."""
    x32 = x.numpy().astype(np.float32)
    out = np.empty_like(x32)
    for r in range(x32.shape[0]):
        out[r] = qo.dec("q8_0", qo.enc_q8_0(x32[r]))
    return go.torch.from_numpy(out.astype(np.float64))


def bf16_act(x, rounded):
    """x [N, IN] float64 -> the engine's matmul input: rows where `rounded`
    go through float32 to bfloat16 (to nearest even), as the AVX512-BF16
    GEMM rounds them; the other rows (decoded one token at a time, T = 1)
    stay as they are."""
    x32 = x.numpy().astype(np.float32)
    out = x32.astype(np.float64)
    for r in np.nonzero(rounded)[0]:
        out[r] = qo.dec("bf16", qo.enc_bf16(x32[r]))
    return go.torch.from_numpy(out)


def reference_act(w, cfg, tokens, act):
    """gpt_oracle.reference with every matmul input passed through act()
    first (the integer types' Q8_0 activations, or bf16_act). Returns logits
    and the scale."""
    F, torch = go.F, go.torch
    L, H, E, C, V, Fw, tied = cfg
    d = lambda a: torch.from_numpy(np.asarray(a, dtype=np.float64))
    N, HS = len(tokens), E // H
    idx = torch.tensor(tokens, dtype=torch.long)
    x = F.embedding(idx, d(w["wte"])) + d(w["wpe"])[:N]
    causal = torch.ones(N, N, dtype=torch.bool).tril()
    for y in w["layers"]:
        h = F.layer_norm(x, (E,), d(y["ln1_w"]), d(y["ln1_b"]), go.EPS_LN)
        q, k, v = F.linear(act(h), d(y["qkv_w"]), d(y["qkv_b"])).split(E, dim=-1)
        q, k, v = (a.view(N, H, HS).transpose(0, 1) for a in (q, k, v))
        s = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(HS)
        p = F.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)
        o = torch.matmul(p, v).transpose(0, 1).reshape(N, E)
        x = x + F.linear(act(o), d(y["proj_w"]), d(y["proj_b"]))
        h = F.layer_norm(x, (E,), d(y["ln2_w"]), d(y["ln2_b"]), go.EPS_LN)
        h = F.gelu(F.linear(act(h), d(y["up_w"]), d(y["up_b"])), approximate="tanh")
        x = x + F.linear(act(h), d(y["down_w"]), d(y["down_b"]))
    xf = F.layer_norm(x, (E,), d(w["lnf_w"]), d(w["lnf_b"]), go.EPS_LN)
    xq = act(xf)
    logits = F.linear(xq, d(w["lm_head"]))
    scale = torch.matmul(xq.abs(), d(w["lm_head"]).abs().T).max(dim=1).values
    return logits.numpy(), scale.numpy()


def reference_q(w, cfg, tokens):
    """every matmul input quantized to Q8_0 (the integer types' path)"""
    return reference_act(w, cfg, tokens, quant_act)


def rounded_rows(chunks, N):
    """Which rows a --chunks schedule runs in batches of T > 1 (the rows the
    BF16 GEMM rounds to bfloat16 where bf16_act)."""
    sizes = [int(c) for c in chunks.split(",")]
    rows, pos, i = np.zeros(N, dtype=bool), 0, 0
    while pos < N:
        n = sizes[min(i, len(sizes) - 1)] or N
        n = min(n, N - pos)
        rows[pos:pos + n] = n > 1
        pos, i = pos + n, i + 1
    return rows


def flip_bound(cfg, scale):
    """What an activation that rounds to the neighbouring int8 step (C's and
    the reference's f32 inputs differ in the last bits, the element sits on
    a rounding boundary) can move a logit by: a step is amax/127 of a block,
    carried through 2L+2 matmuls, relative to the row's scale (measured: at
    most 0.72 of this here, on rows where a flip happened)."""
    L, H, E, C, V, Fw, tied = cfg
    return 2.0 * (1 / 127) * (2 * L + 2) * scale / math.sqrt(max(E, Fw))


def compare_q(o, what, got, ref, cfg, scale):
    """Integer types: every row within the flip bound, and at least 3/4 of
    the rows (those where no input flipped) within the f32 tolerance."""
    o.checks += 1
    err = np.abs(got.astype(np.float64) - ref).max(axis=1)
    strict, loose = go.tolerance(cfg, scale), flip_bound(cfg, scale)
    exact = float(np.mean(err <= strict))
    o.worst = max(o.worst, float((err / loose).max()))
    if not np.all(np.isfinite(got)) or np.any(err > loose) or exact < 0.75:
        r = int(np.nanargmax(err / loose)) if np.all(np.isfinite(got)) else -1
        o.failures.append("%s: row %d off by %.3g (flip bound %.3g); %.0f%% of rows within f32 tolerance"
                          % (what, r, float(err[r]), float(loose[r]), 100 * exact))
        return False
    return True


def check(o, typ, what, got, ref, cfg, scale, rounds=False):
    """rounds: bf16 on an engine whose GEMM rounds X to bfloat16 (ref is
    then reference_act with bf16_act on those rows). As for Q8_0, a row
    agrees to f32 precision unless an input sat on a rounding boundary and
    C's f32 value fell on the other side; such a flip moves that input by
    one bfloat16 step, at most 2^-7·|x| <= amax/128, less than a Q8_0 step
    (amax/127): flip_bound covers it."""
    if typ in ("q8_0", "q4_0") or rounds:
        return compare_q(o, what, got, ref, cfg, scale)
    return o.compare(what, got, ref, go.tolerance(cfg, scale))


def bf16_rounds(driver, isa):
    """gpt_dump DRIVER says whether ISA's BF16 prefill GEMM rounds X to
    bfloat16 (AVX512-BF16's vdpbf16ps: tg_engine.bf16_act)"""
    r = subprocess.run([driver, "--bf16-act", isa], capture_output=True, text=True, check=True)
    return r.stdout.strip() == "1"


def main():
    driver = sys.argv[1]
    isas = subprocess.run([driver, "--isas"], capture_output=True, text=True, check=True).stdout.split()
    print("ISAs:", " ".join(isas))
    rounds_of = {isa: bf16_rounds(driver, isa) for isa in isas}
    print("BF16 GEMM rounds X to bfloat16:", " ".join(i for i in isas if rounds_of[i]) or "none")
    with tempfile.TemporaryDirectory(prefix="tg-typed-") as tmp:
        o = go.Oracle(driver, tmp)
        for si, (name, L, H, E, C, V, Fw, tied) in enumerate(SHAPES):
            cfg = (L, H, E, C, V, Fw, tied)
            w = go.make_model(L, H, E, C, V, Fw, tied, seed=3000 + si)
            N = C
            rng = np.random.default_rng(4000 + si)
            tokens = rng.integers(0, V, size=N).astype(np.int32)
            tok_path = os.path.join(tmp, "tokens.i32")
            tokens.tofile(tok_path)
            ref32, _, _ = go.reference(w, cfg, tokens.tolist())
            spread = float(ref32.std())
            for typ in ("f16", "bf16", "q8_0", "q4_0"):
                path = os.path.join(tmp, "%s-%s.gguf" % (name, typ))
                wq = write_typed_gguf(path, w, cfg, typ)
                if typ in ("q8_0", "q4_0"):
                    ref, scale = reference_q(wq, cfg, tokens.tolist())
                else:
                    ref, _, scale = go.reference(wq, cfg, tokens.tolist())
                tag = "%s %s" % (name, typ)
                worst_cost = 0.0
                for isa in isas:
                    base = ["--isa", isa]
                    rounds = typ == "bf16" and rounds_of[isa]
                    runs = {}
                    for label, chunks in (("prefill", "0"), ("decode", "1"), ("chunks 7,1", "7,1")):
                        got, _ = o.run(path, tok_path, base + ["--chunks", chunks], N, V)
                        runs[chunks] = got
                        r, sc = ref, scale
                        rows = rounded_rows(chunks, N)
                        if rounds and rows.any():
                            act = lambda x, rows=rows: bf16_act(x, rows)
                            r, sc = reference_act(wq, cfg, tokens.tolist(), act)
                        check(o, typ, "%s %s %s" % (tag, isa, label), got, r, cfg, sc,
                              rounds and rows.any())
                    pre, dec = runs["0"], runs["1"]
                    for chunks, single in (("0", pre), ("1", dec)):
                        many, _ = o.run(path, tok_path, base + ["--chunks", chunks, "-t", "3"], N, V)
                        o.same("%s %s chunks %s: 3 threads vs 1" % (tag, isa, chunks), many, single)
                    for got in (pre, dec):
                        cost = float(np.abs(got.astype(np.float64) - ref32).max()) / spread
                        worst_cost = max(worst_cost, cost)
                o.checks += 1
                if not worst_cost <= COST[typ]:
                    o.failures.append("%s: max |dlogit| vs the f32 model is %.3g of the logits' spread "
                                      "(allowed %.3g)" % (tag, worst_cost, COST[typ]))
                print("%s: max |dlogit| vs f32 = %.4f x std(logits)" % (tag, worst_cost))

                # The comparison can fail: one bias moved by 0.01.
                wp = {k: v for k, v in w.items() if k != "layers"}
                wp["layers"] = [dict(y) for y in w["layers"]]
                wp["layers"][-1]["proj_b"] = wp["layers"][-1]["proj_b"].copy()
                wp["layers"][-1]["proj_b"][E // 2] += 0.01
                bad = os.path.join(tmp, "%s-%s-bad.gguf" % (name, typ))
                write_typed_gguf(bad, wp, cfg, typ)
                bl, _ = o.run(bad, tok_path, ["--isa", isas[-1], "--chunks", "0"], N, V)
                probe = go.Oracle(driver, tmp)
                pr, ps = ref, scale
                rb = typ == "bf16" and rounds_of[isas[-1]]
                if rb:
                    act = lambda x: bf16_act(x, rounded_rows("0", N))
                    pr, ps = reference_act(wq, cfg, tokens.tolist(), act)
                if check(probe, typ, "perturbed", bl, pr, cfg, ps, rb):
                    o.failures.append("%s: a perturbed model passed the comparison" % tag)
                o.checks += 1
            print("%s: worst error / tolerance so far %.4f" % (name, o.worst))
        return o.report()


if __name__ == "__main__":
    sys.exit(main())
