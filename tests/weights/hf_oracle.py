#!/usr/bin/python3
"""Hugging Face GPT-2 folders against PyTorch, and tinygpt's GGUF against
llama.cpp's conventions.

For each variant (F32/F16/BF16 safetensors, with or without the
`transformer.` prefix, with or without lm_head.weight) this script writes a
folder the way transformers does (Conv1D weights stored [in, out]; the
safetensors file written by hand, since Debian has no `safetensors` module),
then checks that

  * loading the folder gives exactly PyTorch's tensors, Conv1D transposed
    (and a Conv1D forward pass, x @ W + b, equals ours, x @ W'^T + b);
  * `tinygpt convert` gives a GGUF that loads to the same bits (and with
    --dtype f16 to torch's own f32->f16 rounding);
  * the GGUF, read by the independent reader below, follows llama.cpp's
    gpt2 layout: v3, 32-byte alignment, tensors packed in order (gguf.cpp
    rejects anything else), the key names and types, the tensor names, ne
    in innermost-first order, F32 for 1-D tensors, output.weight present,
    tokenizer.ggml.pre = "gpt-2", tokens/merges as in vocab.json/merges.txt.

usage: hf_oracle.py TINYGPT WEIGHTS_DUMP
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import gguf_table  # noqa: E402

TINYGPT, DUMP = sys.argv[1], sys.argv[2]
L, H, E, C = 2, 2, 8, 16
F = 4 * E
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


# ---- a Hugging Face folder ------------------------------------------------------

def byte_tokens():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return [chr(table[b]) for b in range(256)]


def vocab():
    toks = byte_tokens() + ["\u0120t", "he", "\u0120the"] + ["<|endoftext|>"]
    merges = ["\u0120 t", "h e", "\u0120t he"]
    return toks, merges


def state_dict(gen):
    V = len(vocab()[0])
    sd = {"wte.weight": torch.randn(V, E, generator=gen), "wpe.weight": torch.randn(C, E, generator=gen)}
    for i in range(L):
        p = f"h.{i}."
        sd[p + "ln_1.weight"] = torch.randn(E, generator=gen)
        sd[p + "ln_1.bias"] = torch.randn(E, generator=gen)
        sd[p + "attn.bias"] = torch.tril(torch.ones(C, C)).view(1, 1, C, C)  # the mask buffer: ignored
        sd[p + "attn.c_attn.weight"] = torch.randn(E, 3 * E, generator=gen)  # Conv1D [in, out]
        sd[p + "attn.c_attn.bias"] = torch.randn(3 * E, generator=gen)
        sd[p + "attn.c_proj.weight"] = torch.randn(E, E, generator=gen)
        sd[p + "attn.c_proj.bias"] = torch.randn(E, generator=gen)
        sd[p + "ln_2.weight"] = torch.randn(E, generator=gen)
        sd[p + "ln_2.bias"] = torch.randn(E, generator=gen)
        sd[p + "mlp.c_fc.weight"] = torch.randn(E, F, generator=gen)
        sd[p + "mlp.c_fc.bias"] = torch.randn(F, generator=gen)
        sd[p + "mlp.c_proj.weight"] = torch.randn(F, E, generator=gen)
        sd[p + "mlp.c_proj.bias"] = torch.randn(E, generator=gen)
    sd["ln_f.weight"] = torch.randn(E, generator=gen)
    sd["ln_f.bias"] = torch.randn(E, generator=gen)
    return sd


ST_DTYPE = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors):
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        b = tensor_bytes(t)
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def write_folder(d, sd, dtype, prefix, lm_head):
    toks, merges = vocab()
    cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": L, "n_head": H, "n_embd": E,
           "n_positions": C, "n_ctx": C, "vocab_size": len(toks), "layer_norm_epsilon": 1e-5,
           "activation_function": "gelu_new", "n_inner": None, "bos_token_id": len(toks) - 1,
           "eos_token_id": len(toks) - 1}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    with open(os.path.join(d, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({t: i for i, t in enumerate(toks)}, f, ensure_ascii=False)
    with open(os.path.join(d, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    out = {prefix + k: v.to(dtype) for k, v in sd.items()}
    if lm_head is not None:
        out["lm_head.weight"] = lm_head.to(dtype)
    write_safetensors(os.path.join(d, "model.safetensors"), out)


def expected(sd, dtype, lm_head):
    """Our slot order and layout: Conv1D weights transposed to [out, in]."""
    g = lambda k: sd[k].to(dtype).float()
    out = [g("wte.weight"), g("wpe.weight")]
    for i in range(L):
        p = f"h.{i}."
        out += [g(p + "ln_1.weight"), g(p + "ln_1.bias"), g(p + "attn.c_attn.weight").t(), g(p + "attn.c_attn.bias"),
                g(p + "attn.c_proj.weight").t(), g(p + "attn.c_proj.bias"), g(p + "ln_2.weight"), g(p + "ln_2.bias"),
                g(p + "mlp.c_fc.weight").t(), g(p + "mlp.c_fc.bias"), g(p + "mlp.c_proj.weight").t(),
                g(p + "mlp.c_proj.bias")]
    out += [g("ln_f.weight"), g("ln_f.bias"), (lm_head if lm_head is not None else sd["wte.weight"]).to(dtype).float()]
    return out


def dump(path, tmp):
    b = os.path.join(tmp, "dump.bin")
    r = subprocess.run([DUMP, path, b], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return np.fromfile(b, dtype="<f4"), json.loads(r.stdout)


def flat(ts):
    return np.concatenate([t.contiguous().numpy().ravel() for t in ts]).astype("<f4")


# ---- an independent GGUF reader ----------------------------------------------------

def read_gguf(path):
    """(version, {key: (type, value; an array (element type, [values]))},
    [(name, ne, type, data offset)], data start, the bytes), from the GGUF
    spec (tests/tools/gguf_table.py)."""
    g = gguf_table.read_gguf(path)
    kv = {k: (t, (et, g.kv[k]) if et is not None else g.kv[k]) for k, (t, et) in g.kv_types.items()}
    tensors = [(n, g.tensors[n].dims, g.tensors[n].type, g.tensors[n].offset - g.data_start) for n in g.order]
    return g.version, kv, tensors, g.data_start, g.data


def llama_names():
    names = ["token_embd.weight", "position_embd.weight"]
    for i in range(L):
        for part in ["attn_norm", "attn_qkv", "attn_output", "ffn_norm", "ffn_up", "ffn_down"]:
            names += [f"blk.{i}.{part}.weight", f"blk.{i}.{part}.bias"]
    return names + ["output_norm.weight", "output_norm.bias", "output.weight"]


def check_gguf_layout(path, exp, f16, label):
    ver, kv, tensors, data_off, d = read_gguf(path)
    toks, merges = vocab()
    V = len(toks)
    check(ver == 3, f"{label}: GGUF version {ver}")
    U32, F32, STR, ARR, I32 = 4, 6, 8, 9, 5
    want = {"general.architecture": (STR, "gpt2"), "gpt2.block_count": (U32, L), "gpt2.context_length": (U32, C),
            "gpt2.embedding_length": (U32, E), "gpt2.feed_forward_length": (U32, F),
            "gpt2.attention.head_count": (U32, H), "tokenizer.ggml.model": (STR, "gpt2"),
            "tokenizer.ggml.pre": (STR, "gpt-2"), "tokenizer.ggml.bos_token_id": (U32, V - 1),
            "tokenizer.ggml.eos_token_id": (U32, V - 1), "general.file_type": (U32, 1 if f16 else 0)}
    for k, v in want.items():
        check(kv.get(k) == v, f"{label}: key {k} = {kv.get(k)}, want {v}")
    eps = kv.get("gpt2.attention.layer_norm_epsilon")
    check(eps is not None and eps[0] == F32 and abs(eps[1] - 1e-5) < 1e-12, f"{label}: layer_norm_epsilon {eps}")
    check(kv.get("tokenizer.ggml.tokens") == (ARR, (STR, toks)), f"{label}: tokenizer.ggml.tokens differ")
    check(kv.get("tokenizer.ggml.merges") == (ARR, (STR, merges)), f"{label}: tokenizer.ggml.merges differ")
    tt = kv.get("tokenizer.ggml.token_type")
    check(tt is not None and tt[1][0] == I32 and tt[1][1] == [1] * (V - 1) + [3], f"{label}: token_type {tt and tt[1][1][-3:]}")
    names = [t[0] for t in tensors]
    check(sorted(names) == sorted(llama_names()), f"{label}: tensor names {names}")
    # packed in order at 32 bytes, as gguf.cpp requires
    size = 0
    by_name = {}
    for name, ne, typ, off in tensors:
        check(off == size, f"{label}: {name} at offset {off}, gguf.cpp expects {size}")
        n = int(np.prod(ne))
        nbytes = n * (2 if typ == 1 else 4)
        size += (nbytes + 31) // 32 * 32
        by_name[name] = (ne, typ, off)
    check(data_off + size <= len(d), f"{label}: data past the end")
    # ne innermost first; 1-D tensors F32; matrices F16 when asked
    for (name, t) in zip(llama_names(), exp):
        ne, typ, off = by_name[name]
        check(ne == list(reversed(t.shape)), f"{label}: {name} ne {ne} vs numpy {list(t.shape)}")
        want_t = 1 if (f16 and t.dim() == 2) else 0
        check(typ == want_t, f"{label}: {name} type {typ}, want {want_t}")
        n = t.numel()
        raw = np.frombuffer(d, dtype="<f2" if typ == 1 else "<f4", count=n, offset=data_off + off).astype("<f4")
        ref = t.contiguous().numpy().ravel()
        if typ == 1:
            ref = torch.from_numpy(ref).half().float().numpy()
        check(np.array_equal(raw.view("<u4"), ref.astype("<f4").view("<u4")), f"{label}: {name} data differs")


# ---- the variants -----------------------------------------------------------------

def run_variant(dtype, prefix, untied):
    label = f"{ST_DTYPE[dtype]} prefix={prefix!r} lm_head={untied}"
    gen = torch.Generator().manual_seed(1234)
    sd = state_dict(gen)
    lm = torch.randn(len(vocab()[0]), E, generator=gen) if untied else None
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "hf")
        os.mkdir(folder)
        write_folder(folder, sd, dtype, prefix, lm)
        exp = expected(sd, dtype, lm)
        got, info = dump(folder, tmp)
        check(got is not None, f"{label}: folder does not load: {info}")
        if got is None:
            return
        check(np.array_equal(got.view("<u4"), flat(exp).view("<u4")), f"{label}: folder tensors differ from PyTorch's")
        check(info["tied"] == (0 if untied else 1), f"{label}: tied {info['tied']}")
        check(info["n_vocab"] == len(vocab()[0]) and info["n_merges"] == 3 and info["bos"] == len(vocab()[0]) - 1,
              f"{label}: vocab {info}")
        # the meaning of the transpose: a Conv1D forward equals ours
        x = torch.randn(3, E, generator=gen)
        w_hf = sd["h.0.attn.c_attn.weight"].to(dtype).float()
        b = sd["h.0.attn.c_attn.bias"].to(dtype).float()
        off = (len(vocab()[0]) + C) * E + 2 * E
        w_ours = torch.from_numpy(got[off:off + 3 * E * E].copy()).view(3 * E, E)
        y_hf, y_ours = x @ w_hf + b, x @ w_ours.t() + b
        tol = E * 2 ** -23 * (x.abs() @ w_hf.abs() + b.abs()).max().item() * 4
        check((y_hf - y_ours).abs().max().item() <= tol, f"{label}: Conv1D forward differs")

        for f16 in (False, True):
            out = os.path.join(tmp, "m.gguf")
            args = [TINYGPT, "convert", folder, "-o", out] + (["--dtype", "f16"] if f16 else [])
            r = subprocess.run(args, capture_output=True, text=True)
            check(r.returncode == 0, f"{label}: convert exit {r.returncode}: {r.stderr}")
            if r.returncode:
                continue
            g, ginfo = dump(out, tmp)
            check(g is not None, f"{label}: converted GGUF does not load: {ginfo}")
            if g is None:
                continue
            # a tied folder gets an explicit output.weight (llama.cpp convention)
            ref = exp if not f16 else [t.half().float() if t.dim() == 2 else t for t in exp]
            check(np.array_equal(g.view("<u4"), flat(ref).view("<u4")), f"{label}: converted (f16={f16}) tensors differ")
            check(ginfo["tied"] == info["tied"], f"{label}: tied lost in conversion")
            check_gguf_layout(out, exp, f16, f"{label} gguf f16={f16}")


def hostile_folders():
    """Broken folders: each a clean one-line error and exit 1."""
    gen = torch.Generator().manual_seed(7)
    sd = state_dict(gen)
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "hf")
        os.mkdir(folder)

        def expect_error(what, needle):
            r = subprocess.run([TINYGPT, "inspect", folder], capture_output=True, text=True)
            check(r.returncode == 1, f"{what}: inspect exit {r.returncode}")
            check(needle in r.stderr and r.stderr.count("\n") == 1, f"{what}: stderr {r.stderr!r} lacks {needle!r}")
            r = subprocess.run([TINYGPT, "convert", folder, "-o", os.path.join(tmp, "x.gguf")], capture_output=True,
                               text=True)
            check(r.returncode == 1 and needle in r.stderr, f"{what}: convert exit {r.returncode} {r.stderr!r}")
            check(not os.path.exists(os.path.join(tmp, "x.gguf")), f"{what}: convert left an output")

        write_folder(folder, sd, torch.float32, "", None)
        cfg = json.load(open(os.path.join(folder, "config.json")))

        def with_cfg(**kw):
            c = dict(cfg, **kw)
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump(c, f)

        with_cfg(n_embd=12)
        expect_error("n_embd mismatch", "'wte.weight' has shape [260, 8], expected [260, 12]")
        with_cfg(n_head=3)
        expect_error("heads", "not a multiple of the head count 3")
        with_cfg(model_type="bert")
        expect_error("model_type", "model_type")
        # a config that says llama is read as a Llama config (weights/hf_llama.c),
        # and this GPT-2 one lacks its keys
        with_cfg(model_type="llama")
        expect_error("model_type llama", "'hidden_size' is missing")
        with_cfg(activation_function="relu")
        expect_error("activation", "activation_function")
        with_cfg(n_layer=3)
        expect_error("missing layer", "tensor 'h.2.ln_1.weight' is missing")
        with_cfg(n_layer=-1)
        expect_error("negative", "n_layer")
        with_cfg(n_layer="2")
        expect_error("string", "n_layer")
        # inconsistent data (issue #16): each was accepted silently before
        with_cfg(n_layer=1)
        expect_error("layers past n_layer", "'h.1.attn.bias' is for layer 1 but config.json has n_layer 1")
        with_cfg(bos_token_id=5000)
        expect_error("bos out of range", "bos_token_id = 5000 is not a token id (vocabulary of 260)")
        with_cfg(eos_token_id=260)
        expect_error("eos out of range", "eos_token_id = 260 is not a token id")
        text = json.dumps(cfg)
        with open(os.path.join(folder, "config.json"), "w") as f:
            f.write(text[:-1] + ', "n_layer": 1}')  # Python's json would take this last value
        expect_error("duplicate key", 'key "n_layer" appears twice')
        with open(os.path.join(folder, "config.json"), "w") as f:
            f.write(text[:-1] + ', "model_type": "gpt2\\u0000llama"}')
        expect_error("NUL in a string", "\\u0000")
        with open(os.path.join(folder, "config.json"), "w") as f:
            f.write(text[:-1] + ', "note": "a\\\\u0000 is fine escaped"}')
        r = subprocess.run([TINYGPT, "inspect", folder], capture_output=True, text=True)
        check(r.returncode == 0, f"an escaped backslash before u0000 is no NUL: {r.stderr!r}")
        with_cfg()
        vj = os.path.join(folder, "vocab.json")
        vtext = open(vj, encoding="utf-8").read()
        open(vj, "w", encoding="utf-8").write(vtext[:-1] + ', "!": 7}')
        expect_error("duplicate token", 'vocab.json: key "!" appears twice')
        open(vj, "w", encoding="utf-8").write(vtext)
        nan_sd = dict(sd)
        nan_sd["h.0.ln_1.weight"] = nan_sd["h.0.ln_1.weight"].clone()
        nan_sd["h.0.ln_1.weight"][2] = float("nan")
        write_safetensors(os.path.join(folder, "model.safetensors"), nan_sd)
        expect_error("NaN weight", "tensor 'h.0.ln_1.weight' holds a non-finite value (NaN) at index 2")
        write_safetensors(os.path.join(folder, "model.safetensors"), sd)
        with_cfg()
        with open(os.path.join(folder, "config.json"), "w") as f:
            f.write("{\"n_layer\": 2,")
        expect_error("bad json", "not valid JSON")
        with_cfg()
        bad = dict(sd)
        bad["h.1.mlp.c_fc.weight"] = bad["h.1.mlp.c_fc.weight"].t()  # stored [out, in]: wrong for Conv1D
        write_safetensors(os.path.join(folder, "model.safetensors"), bad)
        expect_error("untransposed Conv1D", "'h.1.mlp.c_fc.weight' has shape [32, 8], expected [8, 32]")
        st = os.path.join(folder, "model.safetensors")
        write_safetensors(st, sd)
        good = open(st, "rb").read()
        open(st, "wb").write(good[:-1])
        expect_error("truncated safetensors", "data bytes")
        open(st, "wb").write(struct.pack("<Q", 1 << 40) + good[8:])
        expect_error("header length", "header length")
        open(st, "wb").write(b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n")
        expect_error("LFS pointer", "")
        open(st, "wb").write(good)
        # weights in a format tinygpt does not read: the error says which, not "no such file"
        pt = os.path.join(folder, "pytorch_model.bin")
        os.rename(st, pt)
        expect_error("pytorch_model.bin instead", "no model.safetensors; it holds pytorch_model.bin, a PyTorch pickle")
        idx = os.path.join(folder, "model.safetensors.index.json")
        os.rename(pt, os.path.join(folder, "model-00001-of-00002.safetensors"))
        open(idx, "w").write('{"metadata": {}, "weight_map": {}}')
        expect_error("sharded safetensors", "sharded over several safetensors files (model.safetensors.index.json)")
        os.remove(idx)
        os.rename(os.path.join(folder, "model-00001-of-00002.safetensors"), st)
        os.remove(os.path.join(folder, "merges.txt"))
        expect_error("no merges.txt", "merges.txt")


for dtype in (torch.float32, torch.float16, torch.bfloat16):
    for prefix in ("", "transformer."):
        run_variant(dtype, prefix, untied=(prefix == "transformer."))
run_variant(torch.float32, "", untied=True)
hostile_folders()
print(f"hf_oracle: {failures} failed")
sys.exit(1 if failures else 0)
