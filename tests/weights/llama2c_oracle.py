#!/usr/bin/python3
"""llama2.c checkpoints written from the format's definition (llama_files.py:
run.c's legacy .bin, export.py's ak42 v1 and v2) and read back through
weights/llama2c.c (l2c_dump): every tensor bit for bit under its llama.cpp
name and shape, for MHA, GQA and MQA, tied and untied, odd sizes; v2 as
q * scale rounded once to f32, as numpy computes it. Then the shared
stories260K.bin against the independent reader of llama_files.py.

usage: llama2c_oracle.py L2C_DUMP
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_files as lf  # noqa: E402

DUMP = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
STORIES = os.path.join(HERE, "..", "..", "..", "..", "shared", "data", "stories260K", "stories260K.bin")
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
    for name, shape, _kind in meta["tensors"]:
        n = int(np.prod(shape))
        tensors[name] = flat[off:off + n].reshape(shape)
        off += n
    check(off == flat.size, f"{path}: dump has {flat.size} floats, the tensor list {off}")
    return meta, tensors, None


def compare(label, meta, got, want, cfg):
    for k in ("dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "tied"):
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
                if form == "v2":
                    check(meta["group_size"] == gs, f"{label}: group_size {meta['group_size']}")
                    # the int8 really lost precision: the test is not comparing f32 with f32
                    d = np.abs(want["blk.0.attn_q.weight"] - w["blk.0.attn_q.weight"]).max()
                    check(d > 0, f"{label}: v2 weights equal the f32 ones")
                compare(label, meta, got, want, cfg)
                # the independent reader agrees with the writer (so both follow one definition)
                rcfg, rw = lf.read_llama2c(data)
                compare(label + " (python reader)", meta, rw, want, cfg)

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
    else:
        print("note: ../shared stories260K.bin not found; skipped it")

print(f"llama2c_oracle: {n_files} files, {failures} failures")
sys.exit(1 if failures else 0)
