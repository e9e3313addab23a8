#!/usr/bin/python3
"""lcpp_test.py — tinygpt against a real llama.cpp (npm node-llama-cpp's
prebuilt libllama, driven by lcpp_oracle.c; install.sh), on files written by
tinygpt's own commands.

  gpt2:  the shipped shakespeare-{1h,4h}.gguf and a random `tinygpt init`
         model: tokenization of prompts (ASCII, Unicode, whitespace runs,
         "<|endoftext|>"), logits at every position (prefill and decode, every
         ISA of this CPU), greedy 100 tokens from several prompts.
  llama: stories260K through `tinygpt convert`, random GQA/MQA and untied
         llama2.c checkpoints and an HF Llama folder through `convert`: llama.cpp
         loads each; tokenization, logits, greedy 200 tokens (stories260K);
         llama.cpp's f16/q8_0/q4_0 quantization of stories260K -> tinygpt.
  types: `tinygpt quantize` to f16/bf16/q8_0/q4_0 -> llama.cpp's greedy text;
         llama.cpp's llama_model_quantize of the f32 file -> tinygpt loads it and
         agrees with llama.cpp; the two quantizers' bytes compared.

Tolerances. llama.cpp runs with flash attention off (its f32 attention; the
default path rounds to f16, below), an f32 KV cache and one thread. Its
CPU GELU is a lookup table in f16 (input and output rounded: relative 2^-11
each), and with f16/bf16/q8_0/q4_0 weights it rounds the activations to the
weights' dot-product type (f16 2^-11, bf16 2^-8, q8_0 blocks ~2^-8), which
tinygpt does not all do. So a logit row may differ by
    tol = max|logit| * (eps32 L (E + pos + 1) + 4 u sqrt(L))
with eps32 = 2^-24 (the n eps bound of an f32 sum, n = E inputs and pos+1
keys, in each of L layers: the sums cancel, so a bound relative to the
result rather than to sum |terms| needs the worst case, not sqrt(n)) and u
the unit of the coarsest rounding on llama.cpp's side that tinygpt's f32
path does not share (2^-11 for GPT-2's GELU, 0 for Llama in f32, the type's
activation rounding for typed weights). Greedy texts must match token for
token until a step where tinygpt's own top-1/top-2 gap is below 2 tol (each
side may be off by tol: a near tie may flip); there the divergence, its
position and the gap are printed, and the comparison of that prompt stops.

usage: lcpp_test.py gpt2|llama|types INSTALL_SH CC WORK TINYGPT GPT_DUMP SOURCE_ROOT
"""
import json
import math
import os
import subprocess
import sys

import numpy as np

MODE, INSTALL, CC, WORK, TINYGPT, DUMP, SRC = sys.argv[1:4] + [os.path.abspath(a) for a in sys.argv[4:8]]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(SRC, "tests", "weights"))
import llama_files as lf  # noqa: E402  (random llama2.c checkpoints, HF folders)
sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
import gguf_table  # noqa: E402

EPS32 = 2.0 ** -24
U_GELU = 2.0 ** -11
# llama.cpp's activation rounding for each weight type's dot products (ggml
# vec_dot_type: f16 -> f16, bf16 -> bf16, q8_0/q4_0 -> q8_0 blocks)
U_TYPE = {"f32": 0.0, "f16": 2.0 ** -11, "bf16": 2.0 ** -8, "q8_0": 2.0 ** -8, "q4_0": 2.0 ** -8}
ORACLE = os.path.join(WORK, "llamacpp", "lcpp_oracle")
TMP = os.path.join(WORK, "lcpp_" + MODE)
checks, failures, notes = 0, [], []


def shared_dir():
    env = os.environ.get("TINYGPT_SHARED")
    for d in ([env] if env else []) + [os.path.join(SRC, "..", "shared"), os.path.join(SRC, "..", "..", "shared")]:
        if os.path.isdir(os.path.join(d, "data")):
            return os.path.join(d, "data")
    return None


def run(cmd, what):
    r = subprocess.run(cmd, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s exited %d: %s" % (what, " ".join(cmd[:3]), r.returncode,
                                                      r.stderr.decode(errors="replace").strip()[-400:]))
    return r.stdout.decode()


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)
        print("FAIL:", what)
    return ok


def lcpp(*args):
    return run([ORACLE, "--flash", "off"] + list(args), "llama.cpp")


def write_ids(ids, name):
    p = os.path.join(TMP, name + ".i32")
    np.asarray(ids, np.int32).tofile(p)
    return p


def ours_tokens(model, text, tok=None):
    p = os.path.join(TMP, "text.txt")
    with open(p, "wb") as f:
        f.write(text)
    extra = ["--tokenizer", tok] if tok else []
    return [int(x) for x in run([TINYGPT, "tokenize", "-m", model, "-f", p] + extra, "tinygpt tokenize").split()]


def lcpp_tokens(model, text):
    p = os.path.join(TMP, "text.txt")
    with open(p, "wb") as f:
        f.write(text)
    return [int(x) for x in lcpp("tokenize", model, p).split()]


def ours_logits(model, ids, isa=None, chunks=None):
    out = os.path.join(TMP, "ours.f32")
    args = [DUMP, model, write_ids(ids, "ours"), out, "-t", "1"]
    if isa:
        args += ["--isa", isa]
    if chunks:
        args += ["--chunks", chunks]
    run(args, "gpt_dump")
    return np.fromfile(out, np.float32).reshape(len(ids), -1)


def lcpp_logits(model, ids, chunk=None):
    out = os.path.join(TMP, "lcpp.f32")
    lcpp(*((["--chunk", str(chunk)] if chunk else []) + ["logits", model, write_ids(ids, "lcpp"), out]))
    return np.fromfile(out, np.float32).reshape(len(ids), -1)


def rel_tol(L, E, pos, u):
    """the tolerance over max|logit| of a row at position pos (module doc)"""
    return EPS32 * L * (E + pos + 1) + 4 * u * math.sqrt(L)


def compare_logits(what, got, ref, L, E, u):
    """got (llama.cpp) against ref (tinygpt), row by row; returns the worst
    error as a fraction of the tolerance"""
    pos = np.arange(len(ref))
    scale = np.abs(ref.astype(np.float64)).max(axis=1)
    tol = scale * np.array([rel_tol(L, E, p, u) for p in pos])
    err = np.abs(got.astype(np.float64) - ref).max(axis=1)
    ratio = err / tol
    r = int(np.argmax(ratio))
    check(np.all(np.isfinite(got)) and ratio[r] <= 1.0,
          "%s: logits row %d off by %.3g (tolerance %.3g, max|logit| %.3g)" % (what, r, err[r], tol[r], scale[r]))
    return float(ratio.max()), float((err / scale).max())


def ours_greedy(model, prompt_ids, n, tok=None):
    """tinygpt generate --temp 0: [(id, top1 - top2 logit gap)]"""
    cmd = [TINYGPT, "generate", "-m", model, "--prompt-ids", ",".join(map(str, prompt_ids)), "--temp", "0",
           "-n", str(n), "--ignore-eos", "--json", "--top-logprobs", "2", "--no-echo", "-t", "1"]
    if tok:
        cmd += ["--tokenizer", tok]
    doc = json.loads(run(cmd, "tinygpt generate"))
    out = []
    for t in doc["samples"][0]["tokens"]:
        top = t["top_logprobs"]
        out.append((t["id"], top[0]["logprob"] - top[1]["logprob"]))
    return out


def lcpp_greedy(model, prompt_ids, n):
    rows = lcpp("greedy", model, write_ids(prompt_ids, "prompt"), str(n)).split("\n")
    return [(int(a), float(b)) for a, b in (r.split() for r in rows if r)]


def forced_greedy(what, model, prompt_ids, ours, L, E, u):
    """llama.cpp's argmax at every step of tinygpt's greedy text (both fed the
    same tokens): equal to tinygpt's choice unless tinygpt's gap is below
    the tie threshold. Returns the number of such tie flips."""
    seq = list(prompt_ids) + [t for t, _ in ours]
    mine = ours_logits(model, seq[:-1], chunks=str(len(seq) - 1))
    theirs = lcpp_logits(model, seq[:-1])
    flips = 0
    for i, (tok, gap) in enumerate(ours):
        row = len(prompt_ids) - 1 + i
        b = int(np.argmax(theirs[row]))
        if b == tok:
            continue
        thr = 2 * np.abs(mine[row]).max() * rel_tol(L, E, row, u)
        flips += 1
        check(gap < thr, "%s, same tokens fed: step %d: tinygpt %d, llama.cpp %d; tinygpt's gap %.4g is not "
              "below the tie threshold %.4g" % (what, i, tok, b, gap, thr))
    return flips


def compare_greedy(what, model, prompt_ids, n, L, E, u, tok=None):
    ours = ours_greedy(model, prompt_ids, n, tok)
    theirs = lcpp_greedy(model, prompt_ids, n)
    flips = forced_greedy(what, model, prompt_ids, ours, L, E, u)
    if flips:
        notes.append("%s: fed tinygpt's text, llama.cpp's argmax differs at %d of %d steps, all near ties"
                     % (what, flips, n))
    check(len(ours) == n and len(theirs) == n, "%s: %d and %d tokens, not %d" % (what, len(ours), len(theirs), n))
    for i, ((a, gap), (b, lgap)) in enumerate(zip(ours, theirs)):
        if a == b:
            continue
        # our logits at that step, for the scale of the tie threshold
        seq = list(prompt_ids) + [t for t, _ in ours[:i]]
        row = ours_logits(model, seq, chunks=str(len(seq)))[-1]
        thr = 2 * np.abs(row).max() * rel_tol(L, E, len(seq) - 1, u)
        ok = check(gap < thr, "%s: step %d: tinygpt %d, llama.cpp %d; tinygpt's top-2 gap %.4g is not below the "
                   "tie threshold %.4g" % (what, i, a, b, gap, thr))
        if ok:
            notes.append("%s: diverges at step %d of %d on a near tie (tinygpt %d, llama.cpp %d; gaps %.3g / %.3g, "
                         "threshold %.3g); the rest not compared" % (what, i, n, a, b, gap, lgap, thr))
        return i
    print("ok: %s: %d greedy tokens identical" % (what, n))
    return n


def model_shape(model):
    info = lcpp("info", model)
    kv = dict(line.split(": ", 1) for line in info.splitlines() if ": " in line)
    return int(kv["n_layer"]), int(kv["n_embd"]), int(kv["n_vocab"])


def logits_all_isas(what, model, ids, u, with_decode=True):
    L, E, _ = model_shape(model)
    isas = run([DUMP, "--isas"], "gpt_dump").split()
    theirs = lcpp_logits(model, ids)
    theirs_dec = lcpp_logits(model, ids, chunk=1) if with_decode else None
    worst = []
    for isa in isas:
        ours = ours_logits(model, ids, isa=isa, chunks=str(len(ids)))
        worst.append(compare_logits("%s [%s prefill]" % (what, isa), theirs, ours, L, E, u))
        if with_decode:
            ours_d = ours_logits(model, ids, isa=isa, chunks="1")
            worst.append(compare_logits("%s [%s decode]" % (what, isa), theirs_dec, ours_d, L, E, u))
    w = max(worst)
    print("ok: %s: logits at %d positions, %s, prefill%s: worst %.2f of the tolerance (max |diff| / max|logit| %.2g)"
          % (what, len(ids), "/".join(isas), " and decode" if with_decode else "", w[0], w[1]))


GPT2_PROMPTS = [
    b"ROMEO:\n",
    b"First Citizen:\nBefore we proceed any further, hear me speak.\n",
    "na\u00efve caf\u00e9 \u2014 \u201cquoted\u201d \u65e5\u672c\u8a9e \U0001F389 \u00c6sop".encode(),
    b"   \n\n\n   lead  and\ttrail \t  \r\n  ",
    b"it's I'll they're 123 4567 x<|endoftext|>y",
    b"",
]


def test_gpt2():
    sh = os.path.join(SRC, "weights")
    rand = os.path.join(TMP, "rand-gpt2.gguf")
    run([TINYGPT, "init", "--layers", "3", "--heads", "2", "--embd", "96", "--ctx", "128", "--vocab-from",
         os.path.join(sh, "shakespeare-4h.gguf"), "--seed", "7", "-o", rand], "tinygpt init")
    text = open(os.path.join(HERE, "..", "model", "data", "torture.txt"), "rb").read()[:1500]
    for name in ("shakespeare-1h.gguf", "shakespeare-4h.gguf", rand):
        model = os.path.join(sh, name)
        short = os.path.basename(model)
        for p in GPT2_PROMPTS + [text]:
            a, b = ours_tokens(model, p), lcpp_tokens(model, p)
            check(a == b, "%s: tokenization of %r: tinygpt %s, llama.cpp %s" % (short, p[:40], a[:20], b[:20]))
        print("ok: %s: tokenization of %d texts identical" % (short, len(GPT2_PROMPTS) + 1))
        L, E, _ = model_shape(model)
        ctx = 128 if model == rand else 256
        ids = ours_tokens(model, open(os.path.join(shared_dir(), "tinyshakespeare", "input.txt"), "rb").read(4000))
        logits_all_isas(short, model, ids[:ctx], U_GELU)
        for p in GPT2_PROMPTS[:4]:
            pid = ours_tokens(model, p) or [0]
            n = min(100, ctx - len(pid))
            compare_greedy("%s greedy from %r" % (short, p[:20]), model, pid, n, L, E, U_GELU)


def stories():
    d = shared_dir()
    if not d or not os.path.isfile(os.path.join(d, "stories260K", "stories260K.bin")):
        return None, None
    return os.path.join(d, "stories260K", "stories260K.bin"), os.path.join(d, "stories260K", "tok512.bin")


LLAMA_PROMPTS = [
    b"Once upon a time",
    b"",
    b"The sun was shining. Tom and Lily went to the park",
    "A caf\u00e9, na\u00efve \u65e5\u672c \U0001F600!".encode(),
    b"  two  spaces\n\nand\tnewlines  ",
]


def convert(src, dst, tok, dtype=None):
    cmd = [TINYGPT, "convert", src, "-o", dst, "--tokenizer", tok] + (["--dtype", dtype] if dtype else [])
    run(cmd, "tinygpt convert")


def test_llama():
    bin_, tok = stories()
    if not bin_:
        print("SKIP: ../shared/data/stories260K is missing")
        sys.exit(77)
    st = os.path.join(TMP, "stories260K.gguf")
    convert(bin_, st, tok)
    for p in LLAMA_PROMPTS:
        a, b = ours_tokens(st, p), lcpp_tokens(st, p)
        check(a == b, "stories260K: tokenization of %r: tinygpt %s, llama.cpp %s" % (p[:40], a[:20], b[:20]))
    print("ok: stories260K: tokenization of %d texts identical (BOS first)" % len(LLAMA_PROMPTS))
    story = open(os.path.join(shared_dir(), "tinystories", "tinystories_val.txt"), "rb").read(4000)
    ids = ours_tokens(st, story)[:512]
    logits_all_isas("stories260K", st, ids, 0.0)
    L, E, _ = model_shape(st)
    for p in LLAMA_PROMPTS[:3]:
        compare_greedy("stories260K greedy from %r" % p[:20], st, ours_tokens(st, p), 200, L, E, 0.0)
    # llama.cpp's quantizer on the converted stories260K (llama.cpp-made
    # f16/q8_0/q4_0 Llama files; ffn_down's rows of 172 are not whole blocks,
    # so llama.cpp keeps those in f16): tinygpt loads each, agrees
    for typ in ("f16", "q8_0", "q4_0"):
        q = os.path.join(TMP, "stories260K-lcpp-%s.gguf" % typ)
        run([ORACLE, "quantize", st, q, typ], "llama_model_quantize")
        u = U_TYPE[typ]
        logits_all_isas("stories260K, llama.cpp quantize %s" % typ, q, ids[:256], u, with_decode=False)
        for p in LLAMA_PROMPTS[:2]:
            compare_greedy("stories260K llama.cpp %s greedy from %r" % (typ, p[:20]), q, ours_tokens(st, p), 200,
                           L, E, u)
    # random llama2.c checkpoints (GQA, MQA, untied) and an HF folder, converted
    rng = np.random.default_rng(20261202)
    shapes = [  # dim, hidden, layers, heads, kv_heads, tied
        (64, 172, 2, 8, 2, True),    # GQA 4:1, head size 8
        (96, 200, 2, 6, 1, False),   # MQA, head size 16, untied classifier
        (48, 100, 3, 4, 4, True),    # MHA, head size 12
    ]
    for dim, hidden, layers, heads, kvh, tied in shapes:
        w, cfg = lf.random_llama(rng, dim, hidden, layers, heads, kvh, 512, tied, scale=0.2)
        name = "llama2c-%dx%d-h%d-kv%d%s" % (layers, dim, heads, kvh, "" if tied else "-untied")
        src = os.path.join(TMP, name + ".bin")
        with open(src, "wb") as f:
            f.write(lf.legacy_bytes(w, cfg, 96))
        dst = os.path.join(TMP, name + ".gguf")
        convert(src, dst, tok)
        info = lcpp("info", dst)
        check("n_head_kv: %d\n" % kvh in info, "%s: llama.cpp reads n_head_kv %d: %s" % (name, kvh, info[:300]))
        logits_all_isas(name, dst, ids[:96], 0.0)
        if (dim, kvh) == (64, 2):
            hf = os.path.join(TMP, name + "-hf")
            lf.write_hf_folder(hf, w, cfg, 96)
            dst2 = os.path.join(TMP, name + "-hf.gguf")
            convert(hf, dst2, tok)
            logits_all_isas(name + " (HF folder)", dst2, ids[:96], 0.0, with_decode=False)
    # Llamas trained by `tinygpt train --arch llama` (a few steps): GQA and
    # untied with llama2.c's tokenizer.bin, MQA tied with a learned
    # byte-level BPE (a gpt2 vocabulary in a llama file)
    text = os.path.join(TMP, "train.txt")
    with open(text, "wb") as f:
        f.write(open(os.path.join(shared_dir(), "tinystories", "tinystories_val.txt"), "rb").read(60000))
    for name, extra, kvh in (("trained-gqa-untied", ["--kv-heads", "2", "--untied", "--tokenizer-from", tok], 2),
                             ("trained-mqa-bpe", ["--kv-heads", "1", "--vocab", "300"], 1)):
        dst = os.path.join(TMP, name + ".gguf")
        run([TINYGPT, "train", "--arch", "llama", "-f", text, "-o", dst, "--layers", "2", "--heads", "4",
             "--embd", "64", "--ctx", "64", "--batch", "4", "--steps", "10", "--eval-every", "10"] + extra,
            "tinygpt train")
        info = lcpp("info", dst)
        check("n_head_kv: %d\n" % kvh in info, "%s: llama.cpp reads n_head_kv %d: %s" % (name, kvh, info[:300]))
        for p in LLAMA_PROMPTS:
            a, b = ours_tokens(dst, p), lcpp_tokens(dst, p)
            check(a == b, "%s: tokenization of %r: tinygpt %s, llama.cpp %s" % (name, p[:40], a[:20], b[:20]))
        tids = ours_tokens(dst, story)[:64]
        logits_all_isas(name, dst, tids, 0.0)
        L2, E2, _ = model_shape(dst)
        compare_greedy("%s greedy from %r" % (name, LLAMA_PROMPTS[0]), dst, ours_tokens(dst, LLAMA_PROMPTS[0]),
                       40, L2, E2, 0.0)


def q_bytes_compare(ours, theirs):
    """tensor by tensor: identical bytes, or how many blocks differ"""
    a, b = read_gguf(ours), read_gguf(theirs)
    rows = []
    for name in a:
        if name not in b:
            rows.append("%s: only in tinygpt's" % name)
            continue
        (ta, da), (tb, db) = a[name], b[name]
        if ta != tb:
            rows.append("%s: type %d vs %d" % (name, ta, tb))
        elif da != db:
            bs = {8: 34, 2: 18}.get(ta, 2)
            na = np.frombuffer(da, np.uint8).reshape(-1, bs) if len(da) % bs == 0 else None
            nb = np.frombuffer(db, np.uint8).reshape(-1, bs) if len(db) % bs == 0 else None
            nd = int(np.any(na != nb, axis=1).sum()) if na is not None and nb is not None else -1
            rows.append("%s: %d of %d blocks differ" % (name, nd, len(da) // bs))
    return rows


def read_gguf(path):
    """{name: (ggml type, data bytes)} from the GGUF spec (tests/tools/gguf_table.py), for the
    byte comparison (no bytes for a type the table does not size)"""
    g = gguf_table.read_gguf(path)
    return {n: (t.type, gguf_table.raw(g, n) if t.nbytes is not None else b"") for n, t in g.tensors.items()}


def test_types():
    sh = os.path.join(SRC, "weights", "shakespeare-4h.gguf")
    L, E, _ = model_shape(sh)
    ids = ours_tokens(sh, open(os.path.join(shared_dir(), "tinyshakespeare", "input.txt"), "rb").read(2000))[:128]
    prompts = [ours_tokens(sh, p) for p in GPT2_PROMPTS[:3]]
    for typ in ("f16", "bf16", "q8_0", "q4_0"):
        u = U_GELU + U_TYPE[typ]
        ours_q = os.path.join(TMP, "ours-%s.gguf" % typ)
        run([TINYGPT, "quantize", sh, ours_q, "--type", typ], "tinygpt quantize")
        logits_all_isas("tinygpt quantize %s" % typ, ours_q, ids, u, with_decode=False)
        for i, p in enumerate(prompts):
            compare_greedy("tinygpt quantize %s, greedy from prompt %d" % (typ, i), ours_q, p, 100, L, E, u)
        # llama.cpp's own quantizer on the f32 file: every tensor in TYPE
        # (--pure; by default it puts the tied token_embd/output in q6_K for
        # q4_0, a type tinygpt does not read: checked below)
        theirs_q = os.path.join(TMP, "lcpp-%s.gguf" % typ)
        run([ORACLE, "quantize", sh, theirs_q, typ, "--pure"], "llama_model_quantize")
        logits_all_isas("llama.cpp quantize %s" % typ, theirs_q, ids, u, with_decode=False)
        for i, p in enumerate(prompts):
            compare_greedy("llama.cpp quantize %s, greedy from prompt %d" % (typ, i), theirs_q, p, 100, L, E, u)
        diff = q_bytes_compare(ours_q, theirs_q)
        notes.append("bytes, tinygpt quantize vs llama_model_quantize --pure, %s: %s" %
                     (typ, "identical tensor data" if not diff else "; ".join(diff[:6])))
    # llama.cpp's default mixture for q4_0: output.weight would be q6_K, which
    # needs rows of 256; at E = 128 llama.cpp falls back to q8_0 for it
    mix = os.path.join(TMP, "lcpp-q4_0-default.gguf")
    run([ORACLE, "quantize", sh, mix, "q4_0"], "llama_model_quantize")
    types = {n: t for n, (t, _) in read_gguf(mix).items()}
    notes.append("llama.cpp's default q4_0 mixture: output.weight type %d, token_embd %d (ggml: 8 = q8_0, 2 = q4_0)"
                 % (types.get("output.weight", -1), types.get("token_embd.weight", -1)))
    u = U_GELU + U_TYPE["q4_0"]
    logits_all_isas("llama.cpp quantize q4_0 (default mixture)", mix, ids, u, with_decode=False)
    for i, p in enumerate(prompts):
        compare_greedy("llama.cpp quantize q4_0 (default mixture), greedy from prompt %d" % i, mix, p, 100, L, E, u)


def main():
    os.makedirs(TMP, exist_ok=True)
    r = subprocess.run(["bash", INSTALL, os.path.join(WORK, "llamacpp"), CC], capture_output=True, text=True)
    if r.returncode == 77:
        print(r.stdout.strip())
        sys.exit(77)
    if r.returncode != 0:
        print("llama.cpp install failed:", r.stdout, r.stderr)
        sys.exit(1)
    print(open(os.path.join(WORK, "llamacpp", "VERSION")).read().strip())
    print([line for line in lcpp("info", os.path.join(SRC, "weights", "shakespeare-1h.gguf")).splitlines()
           if line.startswith("backend")][0])
    if not shared_dir():
        required = bool(os.environ.get("TINYGPT_REQUIRE_DATA"))
        print("%s: ../shared/data is missing (or $TINYGPT_SHARED; README.md, 'Data for the tour and the tests')"
              % ("FAIL" if required else "SKIP"))
        sys.exit(1 if required else 77)
    {"gpt2": test_gpt2, "llama": test_llama, "types": test_types}[MODE]()
    for n in notes:
        print("note:", n)
    print("%d checks, %d failed" % (checks, len(failures)))
    sys.exit(1 if failures or not checks else 0)


if __name__ == "__main__":
    main()
