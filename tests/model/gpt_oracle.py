#!/usr/bin/python3
"""gpt_oracle.py — tinygpt's GPT-2 forward pass against an independent PyTorch
reference written from torch.nn.functional ops.

For several random small GPT-2 shapes (1 and several heads, tied and untied
LM head, odd sizes) this script writes the model three ways — a flat .tgraw
dump (the forward pass alone), a GGUF file and a Hugging Face folder (both
written here, independently of weights/, and read by tg_gpt2_load) — runs the
C driver gpt_dump over a random token sequence and compares the logits at
every position with the reference computed in float64:

  * prefill (one batch), decode (token by token through the KV cache),
    chunked prefill at positions > 0, and last-row-only logits,
    for every ISA this CPU supports;
  * 1, 2 and 3 threads give bit-identical logits;
  * the probe path (attention unfused) gives the same logits and attention
    weights equal to the reference's softmax;
  * a head mask matches the reference with those heads zeroed;
  * GGUF and HF folders give exactly the logits of the raw dump;
  * a one-weight perturbation is detected (the comparison can fail).

usage: gpt_oracle.py GPT_DUMP [--formats raw,gguf,hf]
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

torch.set_grad_enabled(False)

# (name, L, H, E, C, V, F, tied, hf_prefix)
SHAPES = [
    ("tiny-1head", 1, 1, 8, 9, 11, 32, True, ""),
    ("odd-3heads", 2, 3, 36, 21, 101, 144, False, "transformer."),
    ("4heads-inner", 2, 4, 64, 34, 300, 100, True, ""),
    ("long-ctx", 3, 2, 48, 70, 257, 192, False, ""),
]
EPS_LN = 1e-5
U = 2.0 ** -24  # float32 unit roundoff


# ---- random models -----------------------------------------------------------

def make_model(L, H, E, C, V, Fw, tied, seed):
    """Weights scaled so every part matters: matrices ~ N(0, 1/IN) keep
    activations O(1), so attention scores are O(1) (not uniform) and the
    logits spread over a few units."""
    rng = np.random.default_rng(seed)

    def mat(out, inp):
        return (rng.standard_normal((out, inp)) / math.sqrt(inp)).astype(np.float32)

    def vec(n, scale=0.1, base=0.0):
        return (base + scale * rng.standard_normal(n)).astype(np.float32)

    w = {
        "wte": rng.standard_normal((V, E)).astype(np.float32),
        "wpe": (0.5 * rng.standard_normal((C, E))).astype(np.float32),
        "layers": [],
        "lnf_w": vec(E, 0.1, 1.0),
        "lnf_b": vec(E),
    }
    for _ in range(L):
        w["layers"].append({
            "ln1_w": vec(E, 0.1, 1.0), "ln1_b": vec(E),
            "qkv_w": (mat(3 * E, E) * 2.0).astype(np.float32), "qkv_b": vec(3 * E),
            "proj_w": mat(E, E), "proj_b": vec(E),
            "ln2_w": vec(E, 0.1, 1.0), "ln2_b": vec(E),
            "up_w": mat(Fw, E), "up_b": vec(Fw),
            "down_w": mat(E, Fw), "down_b": vec(E),
        })
    w["lm_head"] = w["wte"] if tied else mat(V, E) * 4.0
    return w


def vocab_tokens(V):
    """V token strings: GPT-2's byte->unicode characters, then filler pieces,
    and <|endoftext|> last."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    byte_chars = [chr(c) for c in cs]
    toks = byte_chars[:V - 1] + ["Ġt%d" % i for i in range(max(0, V - 1 - 256))]
    return toks[:V - 1] + ["<|endoftext|>"]


# ---- writers -------------------------------------------------------------------

def write_raw(path, w, cfg):
    L, H, E, C, V, Fw, tied = cfg
    with open(path, "wb") as f:
        f.write(b"TGRAW1\0\0")
        f.write(struct.pack("<7i", L, H, E, C, V, Fw, int(tied)))
        f.write(struct.pack("<f", EPS_LN))
        for t in [w["wte"], w["wpe"]]:
            f.write(t.tobytes())
        for y in w["layers"]:
            for k in ["ln1_w", "ln1_b", "qkv_w", "qkv_b", "proj_w", "proj_b", "ln2_w", "ln2_b",
                      "up_w", "up_b", "down_w", "down_b"]:
                f.write(y[k].tobytes())
        f.write(w["lnf_w"].tobytes())
        f.write(w["lnf_b"].tobytes())
        if not tied:
            f.write(w["lm_head"].tobytes())


GGUF_U32, GGUF_I32, GGUF_F32, GGUF_STR, GGUF_ARR = 4, 5, 6, 8, 9


def gguf_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def gguf_kv(key, typ, val):
    out = gguf_str(key) + struct.pack("<I", typ)
    if typ == GGUF_U32:
        return out + struct.pack("<I", val)
    if typ == GGUF_F32:
        return out + struct.pack("<f", val)
    if typ == GGUF_STR:
        return out + gguf_str(val)
    if typ == GGUF_ARR:
        etyp, items = val
        out += struct.pack("<IQ", etyp, len(items))
        for it in items:
            out += gguf_str(it) if etyp == GGUF_STR else struct.pack("<i", it)
        return out
    raise ValueError(typ)


def write_gguf(path, w, cfg, reverse_data=False):
    """GGUF v3, llama.cpp's gpt2 names; dims are stored innermost first.
    reverse_data: the data section holds the tensors in the reverse order of
    their infos (valid GGUF: every tensor is found through its offset;
    llama.cpp's own writer packs them in order, and `inspect` warns)."""
    L, H, E, C, V, Fw, tied = cfg
    toks = vocab_tokens(V)
    kvs = [
        gguf_kv("general.architecture", GGUF_STR, "gpt2"),
        gguf_kv("general.name", GGUF_STR, "oracle-test"),
        gguf_kv("gpt2.context_length", GGUF_U32, C),
        gguf_kv("gpt2.embedding_length", GGUF_U32, E),
        gguf_kv("gpt2.feed_forward_length", GGUF_U32, Fw),
        gguf_kv("gpt2.block_count", GGUF_U32, L),
        gguf_kv("gpt2.attention.head_count", GGUF_U32, H),
        gguf_kv("gpt2.attention.layer_norm_epsilon", GGUF_F32, EPS_LN),
        gguf_kv("tokenizer.ggml.model", GGUF_STR, "gpt2"),
        gguf_kv("tokenizer.ggml.tokens", GGUF_ARR, (GGUF_STR, toks)),
        gguf_kv("tokenizer.ggml.token_type", GGUF_ARR,
                (GGUF_I32, [1] * (V - 1) + [3])),
        gguf_kv("tokenizer.ggml.merges", GGUF_ARR, (GGUF_STR, [])),
        gguf_kv("tokenizer.ggml.bos_token_id", GGUF_U32, V - 1),
        gguf_kv("tokenizer.ggml.eos_token_id", GGUF_U32, V - 1),
    ]
    tensors = [("token_embd.weight", w["wte"]), ("position_embd.weight", w["wpe"])]
    names = {"ln1_w": "attn_norm.weight", "ln1_b": "attn_norm.bias",
             "qkv_w": "attn_qkv.weight", "qkv_b": "attn_qkv.bias",
             "proj_w": "attn_output.weight", "proj_b": "attn_output.bias",
             "ln2_w": "ffn_norm.weight", "ln2_b": "ffn_norm.bias",
             "up_w": "ffn_up.weight", "up_b": "ffn_up.bias",
             "down_w": "ffn_down.weight", "down_b": "ffn_down.bias"}
    for i, y in enumerate(w["layers"]):
        for k, n in names.items():
            tensors.append(("blk.%d.%s" % (i, n), y[k]))
    tensors += [("output_norm.weight", w["lnf_w"]), ("output_norm.bias", w["lnf_b"])]
    if not tied:
        tensors.append(("output.weight", w["lm_head"]))
    align = 32
    offsets, data, off = {}, b"", 0
    for name, t in (reversed(tensors) if reverse_data else tensors):
        offsets[name] = off
        blob = t.astype("<f4").tobytes()
        pad = (-len(blob)) % align
        data += blob + b"\0" * pad
        off += len(blob) + pad
    info = b""
    for name, t in tensors:
        dims = list(reversed(t.shape))
        info += gguf_str(name) + struct.pack("<I", len(dims))
        info += b"".join(struct.pack("<Q", d) for d in dims)
        info += struct.pack("<IQ", 0, offsets[name])  # F32
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + info
    head += b"\0" * ((-len(head)) % align)
    with open(path, "wb") as f:
        f.write(head + data)


def write_hf(folder, w, cfg, prefix):
    """A Hugging Face GPT-2 folder: Conv1D weights stored [in, out]."""
    L, H, E, C, V, Fw, tied = cfg
    os.makedirs(folder, exist_ok=True)
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
              "n_layer": L, "n_head": H, "n_embd": E, "n_positions": C, "n_ctx": C,
              "vocab_size": V, "layer_norm_epsilon": EPS_LN,
              "n_inner": None if Fw == 4 * E else Fw,
              "activation_function": "gelu_new", "tie_word_embeddings": tied,
              "bos_token_id": V - 1, "eos_token_id": V - 1}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    t = [("wte.weight", w["wte"]), ("wpe.weight", w["wpe"])]
    for i, y in enumerate(w["layers"]):
        p = "h.%d." % i
        t += [(p + "ln_1.weight", y["ln1_w"]), (p + "ln_1.bias", y["ln1_b"]),
              (p + "attn.c_attn.weight", y["qkv_w"].T), (p + "attn.c_attn.bias", y["qkv_b"]),
              (p + "attn.c_proj.weight", y["proj_w"].T), (p + "attn.c_proj.bias", y["proj_b"]),
              (p + "ln_2.weight", y["ln2_w"]), (p + "ln_2.bias", y["ln2_b"]),
              (p + "mlp.c_fc.weight", y["up_w"].T), (p + "mlp.c_fc.bias", y["up_b"]),
              (p + "mlp.c_proj.weight", y["down_w"].T), (p + "mlp.c_proj.bias", y["down_b"])]
    t += [("ln_f.weight", w["lnf_w"]), ("ln_f.bias", w["lnf_b"])]
    t = [(prefix + n, a) for n, a in t]
    if not tied:
        t.append(("lm_head.weight", w["lm_head"]))
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in t:
        b = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    hj = json.dumps(header).encode()
    hj += b" " * ((-len(hj)) % 8)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))
    toks = vocab_tokens(V)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({s: i for i, s in enumerate(toks)}, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")


# ---- the reference -------------------------------------------------------------

def reference(w, cfg, tokens, mask=None, kv16=False, stats=None):
    """GPT-2 forward in float64 from torch.nn.functional ops. Returns the
    logits [N, V], the attention weights [L, H, N, N] and the per-row scale. kv16: K and V
    rounded to IEEE half as the f16 KV cache stores them (float64 -> float32
    -> half, to nearest even); stats: a dict given "score_abs", the largest
    Σ|q_i k_i| / sqrt(HS) of any causal (query, key) pair."""
    L, H, E, C, V, Fw, tied = cfg
    d = lambda a: torch.from_numpy(np.asarray(a, dtype=np.float64))
    N, HS = len(tokens), E // H
    idx = torch.tensor(tokens, dtype=torch.long)
    x = F.embedding(idx, d(w["wte"])) + d(w["wpe"])[:N]
    causal = torch.ones(N, N, dtype=torch.bool).tril()
    probs = []
    for l, y in enumerate(w["layers"]):
        h = F.layer_norm(x, (E,), d(y["ln1_w"]), d(y["ln1_b"]), EPS_LN)
        q, k, v = F.linear(h, d(y["qkv_w"]), d(y["qkv_b"])).split(E, dim=-1)
        q, k, v = (a.view(N, H, HS).transpose(0, 1) for a in (q, k, v))  # [H, N, HS]
        if kv16:
            k, v = k.float().half().double(), v.float().half().double()
        if stats is not None:
            sa = (torch.matmul(q.abs(), k.abs().transpose(1, 2)) / math.sqrt(HS)).masked_fill(~causal, 0)
            stats["score_abs"] = max(stats.get("score_abs", 0.0), float(sa.max()))
        s = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(HS)
        p = F.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)
        probs.append(p)
        o = torch.matmul(p, v)  # [H, N, HS]
        if mask is not None:
            for (ml, mh) in mask:
                if ml == l:
                    o[mh] = 0.0
        o = o.transpose(0, 1).reshape(N, E)
        x = x + F.linear(o, d(y["proj_w"]), d(y["proj_b"]))
        h = F.layer_norm(x, (E,), d(y["ln2_w"]), d(y["ln2_b"]), EPS_LN)
        h = F.gelu(F.linear(h, d(y["up_w"]), d(y["up_b"])), approximate="tanh")
        x = x + F.linear(h, d(y["down_w"]), d(y["down_b"]))
    xf = F.layer_norm(x, (E,), d(w["lnf_w"]), d(w["lnf_b"]), EPS_LN)
    logits = F.linear(xf, d(w["lm_head"]))
    # Per row, the size of the terms the last reduction adds up: the largest
    # sum_e |xf_e * W_ve| over the vocabulary.
    scale = torch.matmul(xf.abs(), d(w["lm_head"]).abs().T).max(dim=1).values
    return logits.numpy(), torch.stack(probs).numpy(), scale.numpy()


def tolerance(cfg, scale):
    """Allowed |C - reference| per row. Float32 rounding behaves like a random
    walk: a length-n dot product is off by about u*sqrt(n) of the sum of its
    terms' magnitudes, and each of the 2L+1 residual-stream updates and the
    LM head adds such an error (LayerNorm rescales them to the same relative
    size). So tol = K * u * sqrt(n) * (2L+2) * scale with n the longest
    reduction (E or F) and scale the row's sum_e |xf_e * W_ve|. K = 16 covers
    the constant factors (softmax, GELU's tanh, FMA vs separate rounding,
    different summation orders) with a margin: measured errors stay below
    K/50 here, while moving a single bias by 0.01 already exceeds the
    tolerance (checked below), and a real bug (a wrong scale, mask, position
    or layout) is off by a sizeable fraction of `scale`."""
    L, H, E, C, V, Fw, tied = cfg
    n = max(E, Fw)
    return 16.0 * U * math.sqrt(n) * (2 * L + 2) * scale


# ---- running the driver ------------------------------------------------------

class Oracle:
    def __init__(self, driver, tmp):
        self.driver, self.tmp, self.failures, self.checks = driver, tmp, [], 0
        self.worst = 0.0

    def run(self, model, tokens_path, args, n_rows, V, attn=False):
        out = os.path.join(self.tmp, "out.f32")
        cmd = [self.driver, model, tokens_path, out] + args
        att = os.path.join(self.tmp, "attn.f32")
        if attn:
            cmd += ["--probe", att]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
        logits = np.fromfile(out, dtype=np.float32)
        if logits.size != n_rows * V:
            raise RuntimeError("%s wrote %d floats, expected %d" % (" ".join(cmd), logits.size, n_rows * V))
        a = np.fromfile(att, dtype=np.float32) if attn else None
        return logits.reshape(n_rows, V), a

    def compare(self, what, got, ref, tol):
        self.checks += 1
        err = np.abs(got.astype(np.float64) - ref).max(axis=1)
        ratio = err / tol
        self.worst = max(self.worst, float(ratio.max()))
        if not np.all(np.isfinite(got)) or np.any(ratio > 1.0):
            r = int(np.nanargmax(ratio)) if np.all(np.isfinite(got)) else -1
            self.failures.append("%s: row %d off by %.3g (tolerance %.3g)" % (
                what, r, float(err[r]), float(tol[r])))
            return False
        return True

    def check(self, ok, what):
        """One check: what is the failure's message when ok is false."""
        self.checks += 1
        if not ok:
            self.failures.append(what)
        return ok

    def report(self):
        """The summary every oracle test ends with (the worst error against its
        tolerance, each failure, the counts); the exit status: 1 if any failed."""
        print("worst error / tolerance: %.4f" % self.worst)
        for f in self.failures:
            print("FAIL", f)
        print("%d passed, %d failed" % (self.checks - len(self.failures), len(self.failures)))
        return 1 if self.failures else 0

    def same(self, what, a, b):
        self.checks += 1
        if a.shape != b.shape or a.tobytes() != b.tobytes():
            self.failures.append("%s: not bit-identical" % what)
            return False
        return True


def chunk_ends(N, chunks):
    ends, pos, k = [], 0, 0
    while pos < N:
        T = chunks[min(k, len(chunks) - 1)]
        T = N - pos if T <= 0 or T > N - pos else T
        pos += T
        ends.append(pos - 1)
        k += 1
    return ends


def main():
    driver = sys.argv[1]
    formats = ["raw", "gguf", "hf"]
    if len(sys.argv) > 3 and sys.argv[2] == "--formats":
        formats = sys.argv[3].split(",")
    isas = subprocess.run([driver, "--isas"], capture_output=True, text=True, check=True).stdout.split()
    print("ISAs:", " ".join(isas))
    with tempfile.TemporaryDirectory(prefix="tg-oracle-") as tmp:
        o = Oracle(driver, tmp)
        for si, (name, L, H, E, C, V, Fw, tied, prefix) in enumerate(SHAPES):
            cfg = (L, H, E, C, V, Fw, tied)
            w = make_model(L, H, E, C, V, Fw, tied, seed=1000 + si)
            N = C  # fill the whole context
            rng = np.random.default_rng(2000 + si)
            tokens = rng.integers(0, V, size=N).astype(np.int32)
            tok_path = os.path.join(tmp, "tokens.i32")
            tokens.tofile(tok_path)
            ref, probs, scale = reference(w, cfg, tokens.tolist())
            tol = tolerance(cfg, scale)
            raw = os.path.join(tmp, name + ".tgraw")
            write_raw(raw, w, cfg)
            tag = "%s (L=%d H=%d E=%d C=%d V=%d F=%d %s)" % (name, L, H, E, C, V, Fw,
                                                             "tied" if tied else "untied")

            # The f16 KV cache (--kv-f16), every ISA: against the reference
            # within the bound of K/V's rounding to half (relative 2^-11
            # each: a head's output moves by at most u16·(1 + 2A)·max|v|, A
            # the largest Σ|q k|/sqrt(HS), carried through the L layers to
            # the logits' scale, on top of the f32 bound); against the
            # reference that rounds K/V itself within 4x the f32 bound (our
            # f32-close K/V can round the other way at a half-way point);
            # never the f32 cache's logits.
            st = {}
            reference(w, cfg, tokens.tolist(), stats=st)
            ref16, _ = reference(w, cfg, tokens.tolist(), kv16=True)[:2]
            b16 = tol + (2.0 ** -11) * (1.0 + 2.0 * st["score_abs"]) * L * scale
            for isa in isas:
                f32l, _ = o.run(raw, tok_path, ["--isa", isa, "--chunks", "0"], N, V)
                for chunks in ("0", "1", "7,17"):
                    hl, _ = o.run(raw, tok_path, ["--isa", isa, "--chunks", chunks, "--kv-f16"], N, V)
                    what = "%s %s f16 KV chunks %s" % (tag, isa, chunks)
                    o.compare(what + " vs the f32 reference", hl, ref, b16)
                    o.compare(what + " vs the reference with K/V in half", hl, ref16, 4.0 * tol)
                    o.checks += 1
                    if hl.tobytes() == f32l.tobytes():
                        o.failures.append(what + ": the same logits as the f32 cache")

            # Every ISA: prefill, decode, chunked prefill, last rows only.
            for isa in isas:
                base = ["--isa", isa]
                pre, _ = o.run(raw, tok_path, base + ["--chunks", "0"], N, V)
                o.compare("%s %s prefill" % (tag, isa), pre, ref, tol)
                dec, _ = o.run(raw, tok_path, base + ["--chunks", "1"], N, V)
                o.compare("%s %s decode" % (tag, isa), dec, ref, tol)
                chk, _ = o.run(raw, tok_path, base + ["--chunks", "7,17"], N, V)
                o.compare("%s %s chunks 7,17" % (tag, isa), chk, ref, tol)
                ends = chunk_ends(N, [5, 1])
                last, _ = o.run(raw, tok_path, base + ["--chunks", "5,1", "--last-only"], len(ends), V)
                o.compare("%s %s last-only 5,1" % (tag, isa), last, ref[ends], tol[ends])
                # Threads never change a bit.
                for chunks, single in (("0", pre), ("1", dec)):
                    for th in ("2", "3"):
                        many, _ = o.run(raw, tok_path, base + ["--chunks", chunks, "-t", th], N, V)
                        o.same("%s %s chunks %s: %s threads vs 1" % (tag, isa, chunks, th), many,
                               single)

            # Probe (unfused attention): logits and the attention weights.
            best = isas[-1]
            for chunks in ("0", "1"):
                pl, pa = o.run(raw, tok_path, ["--isa", best, "--chunks", chunks, "-t", "2"], N, V,
                               attn=True)
                o.compare("%s probe chunks %s" % (tag, chunks), pl, ref, tol)
                pa = pa.reshape(L, H, N, N)
                o.checks += 1
                perr = np.abs(pa - probs).max()
                ptol = 16 * U * math.sqrt(N * E) * (2 * L + 2)  # weights are <= 1
                if not perr <= ptol:
                    o.failures.append("%s probe chunks %s: attention weights off by %.3g (tol %.3g)"
                                      % (tag, chunks, perr, ptol))

            # Head mask: the last head of the first layer and the first of the last.
            mask = sorted({(0, H - 1), (L - 1, 0)})
            mref, _, mscale = reference(w, cfg, tokens.tolist(), mask=mask)
            spec = ",".join("%d:%d" % m for m in mask)
            for chunks in ("0", "1"):
                ml, _ = o.run(raw, tok_path, ["--isa", best, "--chunks", chunks, "--mask", spec], N, V)
                o.compare("%s mask %s chunks %s" % (tag, spec, chunks), ml, mref,
                          tolerance(cfg, mscale))

            # The comparison can fail: one weight moved by 1% of its row's
            # scale must show (so the tolerance is not loose enough to hide bugs).
            wp = make_model(L, H, E, C, V, Fw, tied, seed=1000 + si)
            wp["layers"][-1]["proj_b"][E // 2] += 0.01
            bad = os.path.join(tmp, name + "-bad.tgraw")
            write_raw(bad, wp, cfg)
            bl, _ = o.run(bad, tok_path, ["--isa", best, "--chunks", "0"], N, V)
            probe = Oracle(driver, tmp)
            if probe.compare("perturbed", bl, ref, tol):
                o.failures.append("%s: a perturbed model passed the comparison" % tag)
            o.checks += 1

            # File formats: GGUF and HF folders give the raw dump's logits exactly.
            if "gguf" in formats:
                gg = os.path.join(tmp, name + ".gguf")
                write_gguf(gg, w, cfg)
                gl, _ = o.run(gg, tok_path, ["--isa", best, "--chunks", "0"], N, V)
                o.same("%s gguf vs raw" % tag, gl, o.run(raw, tok_path, ["--isa", best, "--chunks", "0"], N, V)[0])
                # Tensors found by their offsets, not their order.
                gr = os.path.join(tmp, name + "-reversed.gguf")
                write_gguf(gr, w, cfg, reverse_data=True)
                rl, _ = o.run(gr, tok_path, ["--isa", best, "--chunks", "0"], N, V)
                o.same("%s gguf with the data in reverse order vs raw" % tag, rl, gl)
            if "hf" in formats:
                hf = os.path.join(tmp, name + "-hf")
                write_hf(hf, w, cfg, prefix)
                hl, _ = o.run(hf, tok_path, ["--isa", best, "--chunks", "1"], N, V)
                o.same("%s hf vs raw" % tag, hl, o.run(raw, tok_path, ["--isa", best, "--chunks", "1"], N, V)[0])
            print("%s: done" % tag)

        return o.report()


if __name__ == "__main__":
    sys.exit(main())
