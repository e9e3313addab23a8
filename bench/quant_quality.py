#!/usr/bin/python3
"""quant_quality.py — what each weight type costs in quality (issue #15,
"Quality, reported"; the figures of weights/README.md "Weight types"):

  1. the shipped 4-head model (weights/shakespeare-4h.gguf) quantized by
     `tinygpt quantize` to f16, bf16, q8_0, q4_0 (and q4_0 with a q8_0 LM
     head): held-out nats/byte by `tinygpt eval -f val.txt --json` (the last
     111,539 bytes of Tiny Shakespeare), and the logits of its first N
     tokens against the f32 file's (in windows of its 256-token context,
     each from position 0);
  2. a GPT-2-small-shaped model (L12 H12 E768 C1024 V50257, tied head, 124 M
     parameters) from `tinygpt init` (GPT-2's initialisation, seed 1) whose
     final layernorm gain is set to GAIN: a random model's logits are nearly
     uniform over 50,257 tokens (std ~0.55), which makes every KL tiny and
     says nothing; the gain scales the logits (the gain is f32 in every type,
     so it scales the matrices' rounding error with them) until the f32
     model is about as sure of its next token as a trained one (its mean
     entropy is printed). The text is the first N tokens of the held-out
     bytes (byte tokens: the model's vocabulary has no merges).

For each type: max |Δlogit| over the N×V logits and mean over positions of
KL(f32 ‖ type) = Σ_v p_v (log p_v − log q_v), in float64 from the float32
logits of the Python binding (one prefill of N tokens, one thread).

usage (from the repository root, after `ninja -C build`):
  /usr/bin/python3 bench/quant_quality.py [--build build] [--tokens 1000]
      [--gain 8] [--work DIR] [--skip-small] [--skip-shipped]
Prints a Markdown table per model; the 124 M model needs ~2.5 GB of disk in
DIR (default: a temporary directory) and ~3 GB of memory.
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from gguf_table import read_table  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "model"))
import gpt_oracle as go  # noqa: E402  (the byte tokens and GGUF key/value writer)

TYPES = [("f16", []), ("bf16", []), ("q8_0", []), ("q4_0", []),
         ("q4_0", ["--keep-output", "q8_0"])]


def sh(*args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def matrix_bytes(path):
    """Bytes of the 2-D tensors but position_embd (the matrices a type
    rewrites), from the file's own tensor table."""
    t = read_table(path)
    return sum(x.nbytes for x in t.tensors.values()
               if len(x.dims) == 2 and x.name != "position_embd.weight")


def logits(path, ids, threads):
    import tinygpt
    m = tinygpt.Model(path, threads=threads)
    try:  # windows of the model's context, each from position 0
        ctx = m.info["n_ctx"]
        return np.concatenate([np.array(m.logits(ids[i:i + ctx]), dtype=np.float64)
                               for i in range(0, len(ids), ctx)])
    finally:
        m.close()


def log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def compare(ref, got):
    lp, lq = log_softmax(ref), log_softmax(got)
    p = np.exp(lp)
    kl = (p * (lp - lq)).sum(axis=1)
    return float(np.abs(got - ref).max()), float(kl.mean()), float(kl.max())


def entropy(ref):
    lp = log_softmax(ref)
    return float(-(np.exp(lp) * lp).sum(axis=1).mean())


def run_model(tg, f32_path, work, tag, label, ids, threads, val=None):
    """Quantizes f32_path to every type and prints one table row per type."""
    ref = logits(f32_path, ids, threads)
    rows = [("f32", "", f32_path)]
    for typ, extra in TYPES:
        name = typ + ("-" + "-".join(x.strip("-") for x in extra) if extra else "")
        out = os.path.join(work, f"{tag}-{name}.gguf")
        sh(tg, "quantize", f32_path, out, "--type", typ, *extra)
        rows.append((typ, " ".join(extra), out))
    print(f"\n{label}: {len(ids)} tokens; f32 mean entropy {entropy(ref):.3f} nats, "
          f"logit std {ref.std():.3f}, mean max p {np.exp(log_softmax(ref)).max(axis=1).mean():.3f}")
    head = "| type | matrices (MB) |" + (" nats/byte | vs f32 |" if val else "") + \
        " max abs Δlogit | mean KL(f32 ‖ type) | max KL |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    base = None
    for typ, extra, path in rows:
        mb = matrix_bytes(path) / 1e6
        cells = [f"{typ} {extra}".strip(), f"{mb:.2f}"]
        if val:
            npb = json.loads(sh(tg, "eval", "-m", path, "-f", val, "--json", "-t", str(threads)))
            npb = npb["nats_per_byte"]
            base = npb if base is None else base
            cells += [f"{npb:.4f}", "" if typ == "f32" else f"{npb - base:+.4f}"]
        if typ == "f32":
            cells += ["0", "0", "0"]
        else:
            d, kl, klmax = compare(ref, logits(path, ids, threads))
            cells += [f"{d:.4f}", f"{kl:.3g}", f"{klmax:.3g}"]
        print("| " + " | ".join(cells) + " |", flush=True)


def vocab_gguf(path, V):
    """A vocabulary-only GGUF of V tokens (256 byte tokens in GPT-2's
    byte-to-unicode order, filler pieces, <|endoftext|> last; no merges) for
    `tinygpt init --vocab-from`."""
    toks = go.vocab_tokens(257)[:256] + [f"<filler{i}>" for i in range(V - 257)] + ["<|endoftext|>"]
    kvs = [go.gguf_kv("general.architecture", go.GGUF_STR, "gpt2"),
           go.gguf_kv("tokenizer.ggml.model", go.GGUF_STR, "gpt2"),
           go.gguf_kv("tokenizer.ggml.tokens", go.GGUF_ARR, (go.GGUF_STR, toks)),
           go.gguf_kv("tokenizer.ggml.merges", go.GGUF_ARR, (go.GGUF_STR, [])),
           go.gguf_kv("tokenizer.ggml.eos_token_id", go.GGUF_U32, V - 1)]
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))


def set_f32(path, name, value):
    """Every element of the F32 tensor `name` set to value, in place."""
    t = read_table(path).tensors[name]
    assert t.type == 0, f"{name} is not F32"
    with open(path, "r+b") as f:
        f.seek(t.offset)
        f.write(np.full(t.nbytes // 4, value, dtype="<f4").tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--tokens", type=int, default=1000)
    ap.add_argument("--gain", type=float, default=8.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--work")
    ap.add_argument("--skip-small", action="store_true")
    ap.add_argument("--skip-shipped", action="store_true")
    a = ap.parse_args()
    tg = os.path.join(a.build, "tools", "tinygpt")
    sys.path.insert(0, os.path.join(a.build, "python"))
    shared = os.path.join(ROOT, "..", "shared")  # beside the repository, or two up from a worktree
    if not os.path.isdir(shared):
        shared = os.path.join(ROOT, "..", "..", "shared")
    text = open(os.path.join(shared, "data", "tinyshakespeare", "input.txt"), "rb").read()
    held = text[-111539:]
    with tempfile.TemporaryDirectory(dir=a.work) as work:
        val = os.path.join(work, "val.txt")
        open(val, "wb").write(held)
        if not a.skip_shipped:
            import tinygpt
            ship = os.path.join(ROOT, "weights", "shakespeare-4h.gguf")
            m = tinygpt.Model(ship, threads=1)
            ids = list(m.encode(held.decode("utf-8")))[:a.tokens]
            m.close()
            run_model(tg, ship, work, "4h", "shakespeare-4h", ids, a.threads, val)
        if not a.skip_small:
            voc = os.path.join(work, "vocab50257.gguf")
            vocab_gguf(voc, 50257)
            small = os.path.join(work, "gpt2-small.gguf")
            sh(tg, "init", "--layers", "12", "--heads", "12", "--embd", "768", "--ctx", "1024",
               "--vocab-from", voc, "--seed", "1", "-o", small)
            set_f32(small, "output_norm.weight", a.gain)
            ids = list(held[:a.tokens])  # ids = the bytes' values (< 256)
            run_model(tg, small, work, "small", f"gpt2-small (random, ln_f gain {a.gain:g})", ids,
                      a.threads)


if __name__ == "__main__":
    main()
