"""Llama-shaped checkpoint files written from their formats' definitions,
for the tests (numpy only; not tinygpt's code):

  * llama2.c: the legacy .bin (run.c), ak42 v1 and v2 (export.py), and a
    reader of all three that returns the tensors by llama.cpp name;
  * Hugging Face LlamaForCausalLM folders: config.json and a
    model.safetensors written from the safetensors spec (u64 header
    length, JSON header, data), HF names and dtypes f32/f16/bf16.

Weights are a dict of numpy float32 arrays under llama.cpp names with
numpy shapes [OUT, IN] (token_embd.weight [V, E], blk.N.attn_q.weight
[E, E], blk.N.attn_k.weight [KV*HS, E], ..., ffn_gate = w1, ffn_down = w2,
ffn_up = w3, output.weight [V, E] when untied), in llama2.c's rotary
convention (adjacent pairs). HF files rotate halves: hf_from_adjacent
permutes Q and K rows to what a HF checkpoint of the same model holds.
"""
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import gguf_table  # noqa: E402

MAGIC = 0x616B3432  # "ak42" packed as a little-endian u32


def random_llama(rng, dim, hidden, layers, heads, kv_heads, vocab, tied, scale=0.3):
    """A random model: weights dict (float32) and its config dict."""
    hs = dim // heads
    w = {"token_embd.weight": rng.standard_normal((vocab, dim)) * scale}
    for l in range(layers):
        p = f"blk.{l}."
        w[p + "attn_norm.weight"] = 1 + 0.1 * rng.standard_normal(dim)
        w[p + "attn_q.weight"] = rng.standard_normal((dim, dim)) * scale
        w[p + "attn_k.weight"] = rng.standard_normal((kv_heads * hs, dim)) * scale
        w[p + "attn_v.weight"] = rng.standard_normal((kv_heads * hs, dim)) * scale
        w[p + "attn_output.weight"] = rng.standard_normal((dim, dim)) * scale
        w[p + "ffn_norm.weight"] = 1 + 0.1 * rng.standard_normal(dim)
        w[p + "ffn_gate.weight"] = rng.standard_normal((hidden, dim)) * scale
        w[p + "ffn_down.weight"] = rng.standard_normal((dim, hidden)) * scale
        w[p + "ffn_up.weight"] = rng.standard_normal((hidden, dim)) * scale
    w["output_norm.weight"] = 1 + 0.1 * rng.standard_normal(dim)
    if not tied:
        w["output.weight"] = rng.standard_normal((vocab, dim)) * scale
    w = {k: v.astype(np.float32) for k, v in w.items()}
    cfg = dict(dim=dim, hidden_dim=hidden, n_layers=layers, n_heads=heads, n_kv_heads=kv_heads,
               vocab_size=vocab, tied=tied)
    return w, cfg


def _layers(cfg, part):
    return [f"blk.{l}.{part}.weight" for l in range(cfg["n_layers"])]


def _mats(cfg):
    """export.py's order of the matrices (v1/v2)."""
    names = ["token_embd.weight"]
    for part in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_down", "ffn_up"):
        names += _layers(cfg, part)
    if not cfg["tied"]:
        names.append("output.weight")
    return names


def _norms(cfg):
    return _layers(cfg, "attn_norm") + _layers(cfg, "ffn_norm") + ["output_norm.weight"]


def _ints(cfg, seq_len, legacy):
    v = cfg["vocab_size"]
    if legacy and not cfg["tied"]:
        v = -v
    return struct.pack("<7i", cfg["dim"], cfg["hidden_dim"], cfg["n_layers"], cfg["n_heads"],
                       cfg["n_kv_heads"], v, seq_len)


def rope_tables(seq_len, hs, theta=10000.0):
    """model.py's precompute_freqs_cis: cos and sin [seq_len, hs/2]."""
    freqs = 1.0 / (theta ** (np.arange(0, hs, 2)[: hs // 2].astype(np.float32) / hs))
    t = np.arange(seq_len, dtype=np.float32)
    f = np.outer(t, freqs).astype(np.float32)
    return np.cos(f).astype(np.float32), np.sin(f).astype(np.float32)


def legacy_bytes(w, cfg, seq_len):
    """run.c's .bin: header, weights in memory_map_weights order, rope tables, classifier."""
    out = [_ints(cfg, seq_len, True), w["token_embd.weight"].tobytes()]
    for part in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
                 "ffn_down", "ffn_up"):
        out += [w[n].tobytes() for n in _layers(cfg, part)]
    out.append(w["output_norm.weight"].tobytes())
    cos, sin = rope_tables(seq_len, cfg["dim"] // cfg["n_heads"])
    out += [cos.tobytes(), sin.tobytes()]
    if not cfg["tied"]:
        out.append(w["output.weight"].tobytes())
    return b"".join(out)


def _ak42_header(cfg, seq_len, version, group_size=None):
    h = struct.pack("<Ii", MAGIC, version) + _ints(cfg, seq_len, False) + struct.pack("<B", int(cfg["tied"]))
    if version == 2:
        h += struct.pack("<i", group_size)
    return h + b"\0" * (256 - len(h))


def v1_bytes(w, cfg, seq_len):
    out = [_ak42_header(cfg, seq_len, 1)]
    out += [w[n].tobytes() for n in _norms(cfg) + _mats(cfg)]
    return b"".join(out)


def quantize_q80(x, gs):
    """export.py's quantize_q80: symmetric int8 per group of gs, scale = max|x| / 127."""
    g = x.astype(np.float32).reshape(-1, gs)
    scale = (np.abs(g).max(axis=1) / np.float32(127.0)).astype(np.float32)
    q = np.round(g / scale[:, None]).astype(np.int8)  # round half to even, as torch.round
    return q.reshape(-1), scale


def dequantize_q80(q, scale, gs):
    return (q.reshape(-1, gs).astype(np.float32) * scale[:, None]).reshape(-1).astype(np.float32)


def v2_bytes(w, cfg, seq_len, gs):
    """version2_export; returns (bytes, the weights as the file holds them: dequantized)."""
    out = [_ak42_header(cfg, seq_len, 2, gs)]
    held = {}
    for n in _norms(cfg):
        out.append(w[n].tobytes())
        held[n] = w[n]
    for n in _mats(cfg):
        q, s = quantize_q80(w[n], gs)
        out += [q.tobytes(), s.tobytes()]
        held[n] = dequantize_q80(q, s, gs).reshape(w[n].shape)
    return b"".join(out), held


def read_llama2c(data):
    """An independent reader of all three forms: (config, {name: float32 array})."""
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic == MAGIC:
        version = struct.unpack_from("<i", data, 4)[0]
        dim, hidden, layers, heads, kv, vocab, seq = struct.unpack_from("<7i", data, 8)
        tied = bool(data[36])
        gs = struct.unpack_from("<i", data, 37)[0] if version == 2 else 0
        off = 256
    else:
        version, gs = 0, 0
        dim, hidden, layers, heads, kv, vocab, seq = struct.unpack_from("<7i", data, 0)
        tied = vocab > 0
        vocab = abs(vocab)
        off = 28
    cfg = dict(dim=dim, hidden_dim=hidden, n_layers=layers, n_heads=heads, n_kv_heads=kv,
               vocab_size=vocab, seq_len=seq, tied=tied, version=version, group_size=gs)
    hs = dim // heads
    shapes = {"token_embd": (vocab, dim), "attn_norm": (dim,), "ffn_norm": (dim,),
              "attn_q": (dim, dim), "attn_k": (kv * hs, dim), "attn_v": (kv * hs, dim),
              "attn_output": (dim, dim), "ffn_gate": (hidden, dim), "ffn_down": (dim, hidden),
              "ffn_up": (hidden, dim), "output_norm": (dim,), "output": (vocab, dim)}
    w = {}

    def take(name, quant=False):
        nonlocal off
        shape = shapes[name.split(".")[-2]]
        n = int(np.prod(shape))
        if quant:
            q = np.frombuffer(data, np.int8, n, off)
            s = np.frombuffer(data, np.float32, n // gs, off + n)
            off += n + 4 * (n // gs)
            w[name] = dequantize_q80(q, s, gs).reshape(shape)
        else:
            w[name] = np.frombuffer(data, np.float32, n, off).reshape(shape).copy()
            off += 4 * n

    if version == 0:
        take("token_embd.weight")
        for part in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
                     "ffn_down", "ffn_up"):
            for n in _layers(cfg, part):
                take(n)
        take("output_norm.weight")
        off += 2 * 4 * seq * (hs // 2)
        if not tied:
            take("output.weight")
    else:
        for n in _norms(cfg):
            take(n)
        for n in _mats(cfg):
            take(n, version == 2)
    if off != len(data):
        raise ValueError(f"file has {len(data)} bytes, its header implies {off}")
    return cfg, w


# ---- Hugging Face folders ------------------------------------------------------

def hf_from_adjacent(x, n_heads):
    """Rows of a Q or K weight [n_heads*hs, E] from adjacent-pair rotary order
    (llama2.c, GGUF) to HF's halves order: within each head, rows (2i, 2i+1)
    become (i, i + hs/2). The inverse of llama.cpp's converter permute."""
    rows, cols = x.shape
    hs = rows // n_heads
    return x.reshape(n_heads, hs // 2, 2, cols).transpose(0, 2, 1, 3).reshape(rows, cols)


def adjacent_from_hf(x, n_heads):
    """convert_hf_to_gguf.py's permute: HF halves order to adjacent pairs."""
    rows, cols = x.shape
    hs = rows // n_heads
    return x.reshape(n_heads, 2, hs // 2, cols).transpose(0, 2, 1, 3).reshape(rows, cols)


HF_NAMES = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
            "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
            "ffn_gate": "mlp.gate_proj", "ffn_down": "mlp.down_proj", "ffn_up": "mlp.up_proj"}


def hf_tensors(w, cfg):
    """The HF state dict of a model given in llama.cpp names (adjacent pairs)."""
    out = {"model.embed_tokens.weight": w["token_embd.weight"], "model.norm.weight": w["output_norm.weight"]}
    for l in range(cfg["n_layers"]):
        for part, hf in HF_NAMES.items():
            x = w[f"blk.{l}.{part}.weight"]
            if part == "attn_q":
                x = hf_from_adjacent(x, cfg["n_heads"])
            elif part == "attn_k":
                x = hf_from_adjacent(x, cfg["n_kv_heads"])
            out[f"model.layers.{l}.{hf}.weight"] = x
    if not cfg["tied"]:
        out["lm_head.weight"] = w["output.weight"]
    return out


def _bf16_bytes(x):
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)  # nearest even (finite inputs)
    return r.tobytes()


def safetensors_bytes(tensors, dtype="F32"):
    """The safetensors spec: u64 LE header size, JSON header, packed data."""
    header, blobs, off = {}, [], 0
    for name, x in tensors.items():
        if dtype == "F32":
            b = np.ascontiguousarray(x, np.float32).tobytes()
        elif dtype == "F16":
            b = np.ascontiguousarray(x, np.float16).tobytes()
        elif dtype == "BF16":
            b = _bf16_bytes(x)
        else:
            raise ValueError(dtype)
        header[name] = {"dtype": dtype, "shape": list(x.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def hf_as_stored(x, dtype):
    """What a float32 array becomes when stored in dtype (then read back as f32)."""
    if dtype == "F32":
        return x.astype(np.float32)
    if dtype == "F16":
        return x.astype(np.float16).astype(np.float32)
    u = np.frombuffer(_bf16_bytes(x), np.uint16).astype(np.uint32) << 16
    return u.view(np.float32).reshape(x.shape)


def write_hf_folder(folder, w, cfg, seq_len, dtype="F32", rms_eps=1e-5, rope_theta=10000.0, bos=1, eos=2):
    os.makedirs(folder, exist_ok=True)
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": cfg["dim"], "intermediate_size": cfg["hidden_dim"],
        "num_hidden_layers": cfg["n_layers"], "num_attention_heads": cfg["n_heads"],
        "num_key_value_heads": cfg["n_kv_heads"], "rms_norm_eps": rms_eps, "rope_theta": rope_theta,
        "max_position_embeddings": seq_len, "vocab_size": cfg["vocab_size"],
        "tie_word_embeddings": bool(cfg["tied"]), "bos_token_id": bos, "eos_token_id": eos,
        "hidden_act": "silu", "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype],
    }
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(hf_tensors(w, cfg), dtype))


def tokenizer_bin_bytes(n):
    """A llama2.c tokenizer.bin of n pieces (int32 max_token_length, then per
    piece f32 score, i32 length, bytes): <unk>, BOS and EOS as llama2.c's
    export spells them, then distinct short pieces, for models whose text
    does not matter."""
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [("t%d" % i).encode() for i in range(3, n)]
    out = [struct.pack("<i", max(len(p) for p in pieces))]
    for i, p in enumerate(pieces):
        out.append(struct.pack("<fi", -float(i), len(p)) + p)
    return b"".join(out)


def read_gguf_f32(data):
    """A GGUF v2/v3 read from the spec (tests/tools/gguf_table.py): the
    metadata {key: value} and {name: float32 array in numpy order} for the
    F32 tensors."""
    g = gguf_table.parse(data)
    return g.kv, {n: gguf_table.f32(g, n) for n, t in g.tensors.items() if t.type == 0}

