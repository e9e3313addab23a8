#!/usr/bin/python3
"""llama2.c checkpoints written from the format's definition (llama_files.py:
run.c's legacy .bin, export.py's ak42 v1 and v2) and read back through
weights/llama2c.c's tensor set (reader_dump): every tensor bit for bit under its llama.cpp
name and shape, for MHA, GQA and MQA, tied and untied, odd sizes; v2 as
q * scale rounded once to f32, as numpy computes it. Then the shared
stories260K.bin against the independent reader of llama_files.py.

usage: llama2c_oracle.py READER_DUMP
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_files as lf  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model"))
import spm_oracle  # noqa: E402  (shared_dir, missing_data)

DUMP = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
# shared/ beside the source tree (or a folder of worktrees further up, or
# $TINYGPT_SHARED); the path was four levels up, which is no layout's, so
# this check had never run
STORIES = os.path.join(spm_oracle.shared_dir(os.path.join(HERE, "..", "..")), "data", "stories260K", "stories260K.bin")
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def dump(path, tmp):
    out = os.path.join(tmp, "dump.bin")
    r = subprocess.run([DUMP, path, out], capture_output=True, text=True)
    if r.returncode != 0:
        return None, None, r.stderr.strip()
    meta = json.loads(r.stdout)
    flat = np.fromfile(out, np.float32)
    tensors, off = {}, 0
    for name, shape, _type in meta["tensors"]:
        n = int(np.prod(shape))
        tensors[name] = flat[off:off + n].reshape(shape)
        off += n
    check(off == flat.size, f"{path}: dump has {flat.size} floats, the tensor list {off}")
    return meta, tensors, None


def compare(label, meta, got, want, cfg):
    for k in ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "tied"):
        if k == "tied" and label.startswith("HF"):
            continue
        check(meta[k] == cfg[k], f"{label}: {k} {meta[k]} != {cfg[k]}")
    check(set(got) == set(want), f"{label}: tensors {sorted(set(got) ^ set(want))} differ")
    for name, x in want.items():
        if name not in got:
            continue
        y = got[name]
        check(y.shape == x.shape, f"{label}: {name} shape {y.shape} != {x.shape}")
        if y.shape == x.shape:
            check(np.array_equal(y.view(np.uint32), x.astype(np.float32).view(np.uint32)),
                  f"{label}: {name} differs (max |d| {np.abs(y - x).max()})")


rng = np.random.default_rng(11)
shapes = [  # dim, hidden, layers, heads, kv_heads, vocab, seq
    (16, 40, 2, 4, 4, 37, 9),    # MHA
    (24, 52, 3, 4, 2, 50, 7),    # GQA, odd vocab and seq
    (12, 20, 1, 2, 1, 11, 5),    # MQA, head size 6
]
n_files = 0
with tempfile.TemporaryDirectory() as tmp:
    for dim, hidden, layers, heads, kv, vocab, seq in shapes:
        for tied in (True, False):
            w, cfg = lf.random_llama(rng, dim, hidden, layers, heads, kv, vocab, tied)
            gs = 4 if dim % 8 else 8
            files = {
                "legacy": (lf.legacy_bytes(w, cfg, seq), w),
                "v1": (lf.v1_bytes(w, cfg, seq), w),
                "v2": lf.v2_bytes(w, cfg, seq, gs),
            }
            for form, (data, want) in files.items():
                label = f"{form} dim {dim} heads {heads}/{kv} {'tied' if tied else 'untied'}"
                path = os.path.join(tmp, f"{form}.bin")
                with open(path, "wb") as f:
                    f.write(data)
                meta, got, err = dump(path, tmp)
                if err:
                    check(False, f"{label}: {err}")
                    continue
                n_files += 1
                check(meta["version"] == {"legacy": 0, "v1": 1, "v2": 2}[form], f"{label}: version {meta['version']}")
                check(meta["seq_len"] == seq, f"{label}: seq_len {meta['seq_len']}")
                # llama2.c's constants: model.py's norm_eps, precompute_freqs_cis's theta, Meta's pairs
                check((meta["arch"], meta["rope_pairs"], meta["head_dim"], meta["rope_dim"]) ==
                      (1, "adjacent", dim // heads, dim // heads), f"{label}: rope/arch {meta}")
                check(np.float32(meta["eps"]) == np.float32(1e-5) and meta["rope_theta"] == 10000, f"{label}: eps {meta['eps']} theta {meta['rope_theta']}")
                check(all(t == 0 for _, _, t in meta["tensors"]), f"{label}: a view is not F32")
                if form == "v2":
                    check(meta["group_size"] == gs, f"{label}: group_size {meta['group_size']}")
                    # the int8 really lost precision: the test is not comparing f32 with f32
                    d = np.abs(want["blk.0.attn_q.weight"] - w["blk.0.attn_q.weight"]).max()
                    check(d > 0, f"{label}: v2 weights equal the f32 ones")
                compare(label, meta, got, want, cfg)
                # the independent reader agrees with the writer (so both follow one definition)
                rcfg, rw = lf.read_llama2c(data)
                compare(label + " (python reader)", meta, rw, want, cfg)

    # ---- Hugging Face Llama folders: names mapped, types kept, rows not permuted
    for dim, hidden, layers, heads, kv, vocab, seq in shapes:
        for tied in (True, False):
            w, cfg = lf.random_llama(rng, dim, hidden, layers, heads, kv, vocab, tied)
            hf = lf.hf_tensors(w, cfg)
            for dtype, code in (("F32", 0), ("F16", 1), ("BF16", 30)):
                label = f"HF {dtype} dim {dim} heads {heads}/{kv} {'tied' if tied else 'untied'}"
                folder = os.path.join(tmp, f"hf_{dtype}_{dim}_{tied}")
                lf.write_hf_folder(folder, w, cfg, seq, dtype, rms_eps=1e-6, rope_theta=50000.0, bos=3, eos=4)
                meta, got, err = dump(folder, tmp)
                if err:
                    check(False, f"{label}: {err}")
                    continue
                n_files += 1
                check((meta["rope_pairs"], meta["seq_len"], meta["bos"], meta["eos"]) == ("halves", seq, 3, 4),
                      f"{label}: {meta}")
                check(np.float32(meta["eps"]) == np.float32(1e-6) and meta["rope_theta"] == 50000, f"{label}: eps {meta['eps']} theta {meta['rope_theta']}")
                check(all(t == code for _, _, t in meta["tensors"]), f"{label}: types {meta['tensors']}")
                # the views hold the HF rows as they are (halves order): the writer permutes, not the reader
                want = {}
                for name in w:
                    part = name.split(".")[-2]
                    x = w[name]
                    if part == "attn_q":
                        x = lf.hf_from_adjacent(x, heads)
                    elif part == "attn_k":
                        x = lf.hf_from_adjacent(x, kv)
                    want[name] = lf.hf_as_stored(x, dtype)
                compare(label, meta, got, want, cfg)
                if dtype == "F32" and dim == 24:
                    check(not np.array_equal(got["blk.0.attn_q.weight"], w["blk.0.attn_q.weight"]),
                          f"{label}: the permutation is the identity here: the test proves nothing")
                    q = got["blk.0.attn_q.weight"]
                    check(np.array_equal(lf.adjacent_from_hf(q, heads), w["blk.0.attn_q.weight"]),
                          f"{label}: llama.cpp's permute does not undo hf_from_adjacent")

    # hostile folders: one line naming the problem, exit 1
    w, cfg = lf.random_llama(rng, 16, 40, 2, 4, 2, 20, True)
    base = os.path.join(tmp, "hostile")

    def hostile(edit_cfg, edit_tensors, needle):
        import shutil
        shutil.rmtree(base, ignore_errors=True)
        lf.write_hf_folder(base, w, cfg, 8)
        cj = json.load(open(os.path.join(base, "config.json")))
        edit_cfg(cj)
        json.dump(cj, open(os.path.join(base, "config.json"), "w"))
        t = lf.hf_tensors(w, cfg)
        edit_tensors(t)
        open(os.path.join(base, "model.safetensors"), "wb").write(lf.safetensors_bytes(t))
        meta, got, err = dump(base, tmp)
        check(err is not None and needle in err and "\n" not in err, f"hostile HF ({needle}): got {err!r}")

    nop = lambda x: None  # noqa: E731
    hostile(lambda c: c.update(num_key_value_heads=3), nop, "num_key_value_heads 3 does not divide")
    hostile(lambda c: c.update(rope_scaling={"type": "linear", "factor": 2.0}), nop, "'rope_scaling' is set")
    hostile(lambda c: c.update(num_attention_heads=3, num_key_value_heads=1), nop,
            "hidden_size 16 is not a multiple of num_attention_heads 3")
    hostile(lambda c: c.update(attention_bias=True), nop, "'attention_bias' is set")
    hostile(lambda c: c.update(hidden_act="gelu"), nop, "hidden_act must be \"silu\"")
    hostile(lambda c: c.update(hidden_size=-16), nop, "'hidden_size' is not an integer")
    hostile(lambda c: c.pop("num_hidden_layers"), nop, "'num_hidden_layers' is missing")
    hostile(lambda c: c.update(rms_norm_eps=0), nop, "'rms_norm_eps' is not a positive")
    hostile(lambda c: c.update(num_hidden_layers=1), nop, "is for layer 1 but config.json has num_hidden_layers 1")
    hostile(nop, lambda t: t.update({"model.layers.0.self_attn.q_proj.bias": np.zeros(16, np.float32)}),
            "'model.layers.0.self_attn.q_proj.bias' is not one of LlamaForCausalLM's")
    hostile(nop, lambda t: t.update({"model.layers.01.mlp.up_proj.weight": np.zeros(4, np.float32)}),
            "is not one of LlamaForCausalLM's")

    if os.path.exists(STORIES):
        data = open(STORIES, "rb").read()
        rcfg, rw = lf.read_llama2c(data)
        meta, got, err = dump(STORIES, tmp)
        if err:
            check(False, f"stories260K.bin: {err}")
        else:
            n_files += 1
            compare("stories260K.bin", meta, got, rw, rcfg)
            check((meta["dim"], meta["n_layers"], meta["n_heads"], meta["n_kv_heads"], meta["vocab_size"]) ==
                  (64, 5, 8, 4, 512), f"stories260K.bin: config {meta}")
    elif spm_oracle.missing_data("llama2c_oracle", STORIES) != 77:
        check(False, "stories260K.bin is required (TINYGPT_REQUIRE_DATA)")

print(f"llama2c_oracle: {n_files} files, {failures} failures")
sys.exit(1 if failures else 0)
