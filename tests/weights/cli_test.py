#!/usr/bin/python3
"""`tinygpt inspect`, `init` and `convert` from the outside: exit codes
(0 ok, 1 runtime, 2 usage), one-line errors, no output left behind on
failure, inspect --json keys, and init's statistics against GPT-2's
initialisation (read back with the independent GGUF reader of hf_oracle).

usage: cli_test.py TINYGPT WEIGHTS_DUMP
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from gguf_table import n_elements, read_table  # noqa: E402

TG, DUMP = sys.argv[1], sys.argv[2]
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def run(*args):
    return subprocess.run([TG, *args], capture_output=True)


def expect(args, code, needle=b""):
    r = run(*args)
    check(r.returncode == code, f"{' '.join(args)}: exit {r.returncode}, want {code} ({r.stderr!r})")
    if code:
        check(needle in r.stderr, f"{' '.join(args)}: stderr {r.stderr!r} lacks {needle!r}")
        check(r.stderr.startswith(b"tinygpt "), f"{' '.join(args)}: error not prefixed: {r.stderr!r}")
    return r


def gguf_tensor_offsets(path):
    """name -> (absolute file offset of its data, GGML type), from the GGUF
    spec (tests/tools/gguf_table.py)."""
    return {n: (t.offset, t.type) for n, t in read_table(path).tensors.items()}


def raw_bytes(path, t):
    with open(path, "rb") as f:
        f.seek(t.offset)
        return f.read(t.nbytes)


def patch_f32(src, dst, name, index, value):
    """Copies the GGUF src to dst with element `index` of F32 tensor `name` set to value."""
    at, typ = gguf_tensor_offsets(src)[name]
    assert typ == 0, f"{name} is not F32"
    d = bytearray(open(src, "rb").read())
    struct.pack_into("<f", d, at + 4 * index, value)
    open(dst, "wb").write(bytes(d))


def reverse_data(src, dst):
    """Rewrites the GGUF `src` with its data section in the reverse order of
    the tensor infos (still valid GGUF: readers find tensors by offset, but
    llama.cpp's writer packs them in order). The infos are located by their
    length-prefixed names; names and sizes come from `inspect --json`."""
    j = json.loads(run("inspect", "--json", src).stdout)
    d = bytearray(open(src, "rb").read())
    at = {}
    for t in j["tensors"]:
        key = struct.pack("<Q", len(t["name"])) + t["name"].encode()
        q = d.find(key) + len(key)
        nd = struct.unpack_from("<I", d, q)[0]
        at[t["name"]] = q + 4 + 8 * nd + 4  # the info's offset field
    a = j["alignment"]
    data0 = (max(at.values()) + 8 + a - 1) // a * a
    blobs, off = b"", 0
    for t in reversed(j["tensors"]):
        struct.pack_into("<Q", d, at[t["name"]], off)
        blob = bytes(d[data0 + t["offset"]:data0 + t["offset"] + t["bytes"]])
        pad = (-len(blob)) % a
        blobs += blob + b"\0" * pad
        off += len(blob) + pad
    open(dst, "wb").write(bytes(d[:data0]) + blobs)


with tempfile.TemporaryDirectory() as tmp:
    p = lambda name: os.path.join(tmp, name)
    m = p("m.gguf")
    base = ["init", "--layers", "2", "--heads", "2", "--embd", "16", "--ctx", "32", "--byte-vocab"]

    # usage errors: 2, nothing written
    for args, needle in [
        (["inspect"], b"PATH"),
        (["inspect", "--bogus", m], b"unknown option"),
        (["inspect", m, m], b"more than one"),
        (["init"], b"required"),
        (base, b"-o"),
        (base + ["-o"], b"needs a value"),
        (["init", "--layers", "0", "--heads", "2", "--embd", "16", "--ctx", "8", "--byte-vocab", "-o", m], b"--layers"),
        (["init", "--layers", "x", "--heads", "2", "--embd", "16", "--ctx", "8", "--byte-vocab", "-o", m], b"--layers"),
        (["init", "--layers", "1", "--heads", "3", "--embd", "16", "--ctx", "8", "--byte-vocab", "-o", m], b"multiple"),
        (["init", "--layers", "1", "--heads", "2", "--embd", "16", "--ctx", "8", "-o", m], b"exactly one"),
        (base + ["--vocab-from", m, "-o", m], b"exactly one"),
        (base + ["--dtype", "q4", "-o", m], b"--dtype"),
        (base + ["--seed", "-1", "-o", m], b"--seed"),
        (["convert"], b"required"),
        (["convert", tmp], b"required"),
        (["convert", tmp, "-o", m, "--dtype", "f8"], b"--dtype"),
        (["convert", tmp, "-o", m, "--what"], b"unknown option"),
        # the option parser (tools/cli.c)
        (["inspect", "--bogus", "--help"], b"unknown option '--bogus'"),
        (["inspect", "-", m], b"more than one PATH"),
        (["convert", tmp, "--output"], b"--output needs a value"),
        (["convert", tmp, tmp, "-o", m], b"more than one input"),
        (base + ["-o", m, "--bogus"], b"unknown option '--bogus'"),
        (base + ["--layers", "1025", "-o", m], b"--layers: '1025' is not an integer in [1, 1024]"),
    ]:
        expect(args, 2, needle)
        check(not os.path.exists(m), f"{args}: wrote {m}")
    for cmd in ("inspect", "init", "convert"):
        r = expect([cmd, "--help"], 0)
        check(r.stdout.startswith(b"usage: tinygpt " + cmd.encode()), f"{cmd} --help: {r.stdout!r}")

    # runtime errors: 1
    expect(["inspect", p("missing.gguf")], 1, b"no such file")
    expect(["convert", p("missing"), "-o", m], 1, b"missing")
    expect(["init", "--layers", "1", "--heads", "1", "--embd", "4", "--ctx", "4", "--vocab-from", p("nope"), "-o", m],
           1, b"nope")
    expect(base + ["-o", "/nonexistent-dir/m.gguf"], 1, b"/nonexistent-dir/m.gguf")
    for name, content, needle in [("empty.gguf", b"", b"empty file"), ("lfs.gguf", b"version https://git-lfs.github.com/spec/v1\n", b"Git LFS"),
                                  ("page.gguf", b"<html></html>", b"HTML")]:
        open(p(name), "wb").write(content)
        expect(["inspect", p(name)], 1, needle)
        expect(["inspect", "--json", p(name)], 1, needle)
        expect(["convert", p(name), "-o", m], 1, needle)
    expect(["inspect", tmp], 1, b"not a model")
    # an empty or under-4-byte file is no format at all: every command that
    # takes a model says, in one line, what a model can be (exit 1)
    open(p("t.txt"), "w").write("hello there\n")
    for name, content in [("zero.gguf", b""), ("short.bin", b"GG")]:
        f = p(name)
        open(f, "wb").write(content)
        for args in (["generate", "-m", f, "-p", "x", "-n", "1"], ["eval", "-m", f, "-f", p("t.txt")],
                     ["tokenize", "-m", f, "-p", "x"], ["bench", "-m", f], ["profile", "-m", f, "-p", "x", "-n", "1"],
                     ["attention", "-m", f, "-p", "x"], ["compare", f, f, "-f", p("t.txt")],
                     ["serve", "-m", f, "--port", "0"], ["inspect", f], ["inspect", "--json", f],
                     ["quantize", f, m, "--type", "q8_0"], ["convert", f, "-o", m],
                     base[:-1] + ["--vocab-from", f, "-o", m],
                     ["train", "-f", p("t.txt"), "-o", m, "--tokenizer-from", f]):
            r = expect(args, 1, b"GGUF")
            for what in (b"llama2.c", b"Hugging Face folder"):
                check(what in r.stderr, f"{' '.join(args)}: {r.stderr!r} does not name {what!r}")
            check(r.stderr.count(b"\n") == 1, f"{' '.join(args)}: not one line: {r.stderr!r}")
        # a vocabulary is asked for: the same, with the vocabulary files
        for args in (base[:-1] + ["--arch", "llama", "--vocab-from", f, "-o", m],
                     ["train", "-f", p("t.txt"), "-o", m, "--arch", "llama", "--tokenizer-from", f]):
            r = expect(args, 1, b"tokenizer.bin")
            check(b"GGUF" in r.stderr and b"tokenizer.json" in r.stderr, f"{' '.join(args)}: {r.stderr!r}")
        os.remove(f)
    os.remove(p("t.txt"))
    check(not os.path.exists(m), "a failed command left an output")

    # init --vocab-from a Llama's vocabulary without --arch llama names the fix
    ll, tb = p("ll.gguf"), p("tokenizer.bin")
    with open(tb, "wb") as f:  # a llama2.c tokenizer.bin: max length, then (score, length, bytes) per piece
        f.write(struct.pack("<i", 6))
        for i, piece in enumerate([b"<unk>", b"<s>", b"</s>"] + [b"<0x%02X>" % k for k in range(256)] + [b"\xe2\x96\x81a"]):
            f.write(struct.pack("<fi", -float(i), len(piece)) + piece)
    expect(base[:-1] + ["--arch", "llama", "--vocab-from", tb, "-o", ll], 0)
    for v in (ll, tb):
        expect(base[:-1] + ["--vocab-from", v, "-o", m], 1, b"add --arch llama")
        check(not os.path.exists(m), f"init --vocab-from {v}: wrote {m}")
    os.remove(ll)
    os.remove(tb)

    # init: deterministic by seed, GPT-2 statistics
    expect(base + ["-o", m, "--seed", "5"], 0)
    expect(base + ["-o", p("m2.gguf"), "--seed", "5"], 0)
    expect(base + ["-o", p("m3.gguf"), "--seed", "6"], 0)
    a, b, c = (open(x, "rb").read() for x in (m, p("m2.gguf"), p("m3.gguf")))
    check(a == b, "init with the same seed differs")
    check(a != c, "init with another seed is the same")
    # no temporary files left beside the outputs
    check(sorted(os.listdir(tmp)) == sorted(["m.gguf", "m2.gguf", "m3.gguf", "empty.gguf", "lfs.gguf", "page.gguf"]),
          f"leftovers: {os.listdir(tmp)}")

    r = subprocess.run([DUMP, m, p("d.bin")], capture_output=True, text=True)
    check(r.returncode == 0, f"dump: {r.stderr}")
    info = json.loads(r.stdout)
    w = np.fromfile(p("d.bin"), dtype="<f4")
    L, E, C, V, F = 2, 16, 32, 257, 64
    check(info["tied"] == 1 and info["n_vocab"] == V and info["n_ff"] == F, f"init config {info}")
    o = 0

    def take(n):
        global o
        o += n
        return w[o - n:o]

    def normal(x, std, what):
        # the sample std of n normals is within ~4.5 standard errors (std/sqrt(2n))
        n = len(x)
        s = float(np.sqrt(np.mean(x.astype(np.float64) ** 2)))
        check(abs(s - std) <= 4.5 * std / np.sqrt(2 * n), f"{what}: std {s}, want {std}")
        check(abs(float(np.mean(x))) <= 4.5 * std / np.sqrt(n), f"{what}: mean {np.mean(x)}")

    normal(take(V * E), 0.02, "token_embd")
    normal(take(C * E), 0.02, "position_embd")
    res = 0.02 / np.sqrt(2 * L)
    for l in range(L):
        check(np.all(take(E) == 1) and np.all(take(E) == 0), f"blk.{l}.attn_norm")
        normal(take(3 * E * E), 0.02, f"blk.{l}.attn_qkv")
        check(np.all(take(3 * E) == 0), "qkv bias")
        normal(take(E * E), res, f"blk.{l}.attn_output (residual, scaled)")
        check(np.all(take(E) == 0), "proj bias")
        check(np.all(take(E) == 1) and np.all(take(E) == 0), f"blk.{l}.ffn_norm")
        normal(take(F * E), 0.02, f"blk.{l}.ffn_up")
        check(np.all(take(F) == 0), "up bias")
        normal(take(E * F), res, f"blk.{l}.ffn_down (residual, scaled)")
        check(np.all(take(E) == 0), "down bias")
    check(np.all(take(E) == 1) and np.all(take(E) == 0), "output_norm")
    check(np.array_equal(take(V * E), w[:V * E]), "output is not token_embd")
    check(o == len(w), "dump length")

    # inspect: text and JSON
    r = expect(["inspect", m], 0)
    check(b"layers 2, heads 2, head size 8, embedding 16" in r.stdout, f"inspect text: {r.stdout[:400]!r}")
    r = expect(["inspect", "--json", m], 0)
    j = json.loads(r.stdout)
    for k, v in {"architecture": "gpt2", "n_layer": 2, "n_head": 2, "n_embd": 16, "n_ctx": 32, "n_vocab": 257,
                 "n_params": info["n_params"], "head_size": 8, "vocab_only": False}.items():
        check(j.get(k) == v, f"inspect --json {k} = {j.get(k)}, want {v}")
    check(len(j["tensors"]) == 5 + 12 * L and j["tensors"][0] == {"name": "token_embd.weight", "shape": [V, E],
                                                                  "type": "F32", "bytes": V * E * 4, "offset": 0,
                                                                  "resident_bytes": V * E * 4},
          f"inspect tensors {j['tensors'][:1]}")
    check(j["problems"] == [] and j["tokenizer"]["pre"] == "gpt-2", f"inspect problems {j['problems']}")
    check(j["metadata"]["general.architecture"] == "gpt2", "metadata")

    # inspect of f16/bf16/q8_0/q4_0 files: every tensor's type, bytes and
    # offset as the file's tensor table (tests/tools/gguf_table.py) has them;
    # resident = those bytes where the model keeps the tensor in place (F32,
    # the matrices), 4 per element where it converts to f32 (an f16/bf16
    # position_embd); and the totals.
    m32 = p("m32.gguf")
    expect(["init", "--layers", "2", "--heads", "2", "--embd", "64", "--ctx", "16", "--byte-vocab",
            "-o", m32], 0)
    for typ in ("f16", "bf16", "q8_0", "q4_0"):
        tq = p(f"m32-{typ}.gguf")
        expect(["quantize", m32, tq, "--type", typ], 0)
        tab = read_table(tq)
        jq = json.loads(expect(["inspect", "--json", tq], 0).stdout)
        got = {t["name"]: t for t in jq["tensors"]}
        check(list(got) == tab.order, f"inspect {typ}: tensor names/order")
        want_res = 0
        for name, x in tab.tensors.items():
            in_place = x.type == 0 or (len(x.dims) == 2 and name != "position_embd.weight")
            res = x.nbytes if in_place else 4 * n_elements(x)
            if name == "output.weight" and tab.kv.get("tinygpt.tied_embeddings") == 1 and \
                    raw_bytes(tq, x) == raw_bytes(tq, tab.tensors["token_embd.weight"]):
                res = 0  # tied: the model reads token_embd's bytes instead
            want_res += res
            g = got.get(name, {})
            check(g.get("type", "").lower() == x.type_name and g.get("bytes") == x.nbytes and
                  g.get("offset") == x.offset - tab.data_start and g.get("resident_bytes") == res and
                  g.get("shape") == list(reversed(x.dims)),
                  f"inspect {typ} {name}: {g} vs table {x} (resident {res})")
        check(jq["tensor_bytes"] == sum(x.nbytes for x in tab.tensors.values()) and
              jq["resident_bytes"] == want_res, f"inspect {typ} totals {jq['tensor_bytes']} {jq['resident_bytes']}")
        check(typ != "f16" or tab.tensors["position_embd.weight"].type == 1,
              "an f16 file keeps position_embd f16 (the converted case is covered)")
        check(got["output.weight"]["resident_bytes"] == 0, f"inspect {typ}: init's tied output.weight is not read")
        txt = expect(["inspect", tq], 0).stdout.decode()
        tot = [x for x in txt.splitlines() if x.strip().startswith("total ")]
        check(len(tot) == 1 and f"{jq['tensor_bytes']} bytes" in tot[0] and f"{want_res} resident" in tot[0],
              f"inspect {typ} text total: {tot}")

    # Hostile block-typed files (issue #15): a Q8_0/Q4_0 row that is not a
    # multiple of 32, a block tensor cut short, an unknown type code. Every
    # command that loads the file says so in one line and exits 1.
    for typ in ("q8_0", "q4_0"):
        src = p(f"m32-{typ}.gguf")
        tab = read_table(src)
        up = "blk.0.ffn_up.weight"
        dims_at, type_at = tab.info[up]
        raw = open(src, "rb").read()
        last = tab.tensors[tab.order[-1]]
        cases = []
        bad = bytearray(raw)
        struct.pack_into("<Q", bad, dims_at, 48)  # 64 -> 48 elements a row
        cases.append(("row48", bytes(bad), b"block size"))
        cases.append(("cut", raw[:last.offset + last.nbytes // 2], b"past the end"))
        bad = bytearray(raw)
        struct.pack_into("<I", bad, type_at, 99)
        cases.append(("type99", bytes(bad), b"unknown tensor type 99"))
        for label, data, needle in cases:
            f = p(f"hostile-{typ}-{label}.gguf")
            open(f, "wb").write(data)
            for args in (["inspect", f], ["generate", "-m", f, "-p", "a", "-n", "1"],
                         ["profile", "-m", f, "-p", "ab", "-n", "1", "--no-roofline"]):
                r = expect(args, 1, needle)
                check(r.stderr.count(b"\n") == 1, f"{typ} {label} {args[0]}: not one line: {r.stderr!r}")

    # tensors not packed in order: loaded through their offsets (the same
    # scores as the packed file), and inspect warns (llama.cpp wants them packed)
    reverse_data(m, p("rev.gguf"))
    check(open(p("rev.gguf"), "rb").read() != a, "reverse_data changed nothing")
    r = expect(["inspect", p("rev.gguf")], 0)
    check(b"not packed in order" in r.stdout + r.stderr, f"inspect gave no layout warning: {r.stdout[-300:]!r}")
    j = json.loads(expect(["inspect", "--json", p("rev.gguf")], 0).stdout)
    check(len(j["warnings"]) == 1 and "not packed in order" in j["warnings"][0], f"warnings {j['warnings']}")
    check(j["tensors"][-1]["offset"] == 0, "the last tensor's data should come first")
    open(p("t.txt"), "w").write("ROMEO: But soft, what light through yonder window breaks?\n" * 3)
    ev = [json.loads(expect(["eval", "-m", f, "-f", p("t.txt"), "--json"], 0).stdout) for f in (m, p("rev.gguf"))]
    check(ev[0] == ev[1], f"eval differs between packed and reversed layouts: {ev}")


    # ---- non-finite weights (issue #16): rejected at load, naming the tensor
    # and the first bad index; --no-check loads them and the run stops at the
    # first non-finite logit; inspect still describes the file and lists them.
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "weights",
                           "shakespeare-4h.gguf")
    inf_m, nan_m = p("inf.gguf"), p("nan.gguf")
    patch_f32(shipped, inf_m, "output.weight", 5, float("inf"))
    patch_f32(shipped, nan_m, "output_norm.weight", 3, float("nan"))
    for args, needles in [
        (["generate", "-m", inf_m, "-p", "ROMEO:", "-n", "4"], [b"'output.weight'", b"+inf", b"index 5", b"--no-check"]),
        (["eval", "-m", nan_m, "-f", p("t.txt")], [b"'output_norm.weight'", b"NaN", b"index 3"]),
        (["compare", shipped, nan_m, "-f", p("t.txt")], [b"'output_norm.weight'"]),
        (["attention", "-m", inf_m], [b"'output.weight'"]),
        (["convert", inf_m, "-o", p("inf2.gguf")], [b"'output.weight'"]),
        (["bench", "-m", nan_m, "-p", "4", "-n", "4", "-r", "1", "--no-roofline"], [b"'output_norm.weight'"]),
        (["profile", "-m", nan_m, "-n", "2", "--no-roofline"], [b"'output_norm.weight'"]),
    ]:
        r = expect(args, 1)
        check(all(n in r.stderr for n in needles), f"{args[0]}: {r.stderr!r} lacks {needles}")
    check(not os.path.exists(p("inf2.gguf")), "convert wrote a file from non-finite weights")
    # --no-check: loads, and the forward pass rejects the first bad logit
    for args in (["generate", "-m", inf_m, "-p", "ROMEO:", "-n", "4", "--no-check"],
                 ["generate", "-m", nan_m, "-p", "ROMEO:", "-n", "4", "--no-check", "--temp", "0"],
                 ["eval", "-m", nan_m, "-f", p("t.txt"), "--no-check", "--json"],
                 ["profile", "-m", inf_m, "-n", "2", "--no-roofline", "--no-check"]):
        r = expect(args, 1, b"not finite")
        check(b"logit" in r.stderr, f"{args}: {r.stderr!r}")
        check(b"nan" not in r.stdout.lower() and b"inf" not in r.stdout.lower(), f"{args}: stdout {r.stdout!r}")
    r = expect(["inspect", inf_m], 1, b"output.weight")
    check(b"layers 4, heads 4" in r.stdout and b"problems:      tensor 'output.weight' holds a non-finite value (+inf) at index 5"
          in r.stdout, f"inspect of a +inf model: {r.stdout[-400:]!r}")
    r = run("inspect", "--json", nan_m)
    j = json.loads(r.stdout)
    check(r.returncode == 1 and j["n_layer"] == 4 and j["problems"] ==
          ["tensor 'output_norm.weight' holds a non-finite value (NaN) at index 3"], f"inspect --json: {j.get('problems')}")
    expect(["inspect", shipped], 0)
    # a corrupted first merge (its result no longer a token): inspect's
    # tokenizer build finds it, so 'problems: none' means the model runs
    d = bytearray(open(shipped, "rb").read())
    key = b"tokenizer.ggml.merges"
    q = d.find(struct.pack("<Q", len(key)) + key) + 8 + len(key) + 4 + 4 + 8  # type, elem type, count
    n0 = struct.unpack_from("<Q", d, q)[0]
    first = bytes(d[q + 8:q + 8 + n0])
    sp = first.index(b" ")
    d[q + 8 + sp + 1] = ord("~") if first[sp + 1:sp + 2] != b"~" else ord("|")
    open(p("badmerge.gguf"), "wb").write(bytes(d))
    r = expect(["inspect", p("badmerge.gguf")], 1, b"the tokenizer cannot be built: tokenizer: merge 0")
    check(b"layers 4, heads 4" in r.stdout, f"inspect describes the model: {r.stdout[:300]!r}")
    expect(["generate", "-m", p("badmerge.gguf"), "-p", "ROMEO:", "-n", "2"], 1, b"merge 0")

    # f16 init, convert GGUF -> GGUF (re-encode), vocab-only GGUF
    expect(base + ["--dtype", "f16", "-o", p("h.gguf")], 0)
    r = expect(["inspect", "--json", p("h.gguf")], 0)
    types = {t["name"]: t["type"] for t in json.loads(r.stdout)["tensors"]}
    check(types["blk.0.ffn_up.weight"] == "F16" and types["blk.0.ffn_up.bias"] == "F32", f"f16 types {types}")
    expect(["convert", p("h.gguf"), "-o", p("h32.gguf")], 0)
    # write -> read -> write is byte-identical (all tensors and metadata survive)
    expect(["convert", m, "-o", p("again.gguf")], 0)
    check(open(p("again.gguf"), "rb").read() == a, "init -> convert is not byte-identical")
    expect(["convert", p("h.gguf"), "-o", p("h-again.gguf"), "--dtype", "f16"], 0)
    check(open(p("h-again.gguf"), "rb").read() == open(p("h.gguf"), "rb").read(), "f16 round trip not byte-identical")
    r = expect(["inspect", "--json", p("h32.gguf")], 0)
    check(all(t["type"] == "F32" for t in json.loads(r.stdout)["tensors"]), "re-encode to f32")
    expect(["init", "--layers", "1", "--heads", "1", "--embd", "4", "--ctx", "4", "--vocab-from", m, "-o", p("v.gguf")], 0)
    r = expect(["inspect", "--json", p("v.gguf")], 0)
    check(json.loads(r.stdout)["n_vocab"] == 257, "vocab-from")

    # quantize: every type, the LM head kept apart, metadata and tokenizer kept,
    # the same greedy text as f32 from q8_0, bad input
    expect(["init", "--layers", "1", "--heads", "2", "--embd", "64", "--ctx", "16", "--byte-vocab",
            "-o", p("w64.gguf")], 0)
    src = json.loads(expect(["inspect", "--json", p("w64.gguf")], 0).stdout)
    for typ, ggml in (("f16", "F16"), ("bf16", "BF16"), ("q8_0", "Q8_0"), ("q4_0", "Q4_0"), ("f32", "F32")):
        r = expect(["quantize", p("w64.gguf"), p("w-" + typ + ".gguf"), "--type", typ, "--keep-output", "f32"], 0)
        check(b"MB ->" in r.stdout, f"quantize {typ}: no size summary: {r.stdout!r}")
        j = json.loads(expect(["inspect", "--json", p("w-" + typ + ".gguf")], 0).stdout)
        types = {t["name"]: t["type"] for t in j["tensors"]}
        check(types["blk.0.ffn_up.weight"] == ggml and types["blk.0.ffn_up.bias"] == "F32" and
              types["output.weight"] == "F32", f"quantize {typ}: types {types}")
        check(types["position_embd.weight"] == ("F32" if typ.startswith("q") or typ == "f32" else ggml),
              f"quantize {typ}: position_embd is {types['position_embd.weight']}")
        check(j["n_vocab"] == src["n_vocab"] and j["n_embd"] == 64, f"quantize {typ}: config {j}")
    expect(["quantize", p("w64.gguf"), p("bad.gguf"), "--type", "q5_0"], 2, b"--type")
    expect(["quantize", p("w64.gguf")], 2, b"required")
    expect(["quantize", p("missing.gguf"), p("bad.gguf"), "--type", "q8_0"], 1, b"missing")
    # a width that is not a multiple of 32 (m: n_embd 16, n_ff 64): the
    # matrices with rows of 16 fall back to f16, as a Llama's do, and the
    # summary says how many; rows of 64 (ffn_down) are still q8_0
    mj = json.loads(expect(["inspect", "--json", m], 0).stdout)
    check(mj["n_embd"] % 32 != 0, f"m.gguf has width {mj['n_embd']}, the fallback case needs another")
    r = expect(["quantize", m, p("fb.gguf"), "--type", "q8_0"], 0)
    j = json.loads(expect(["inspect", "--json", p("fb.gguf")], 0).stdout)
    types = {t["name"]: t["type"] for t in j["tensors"]}
    mats = {t["name"]: t for t in j["tensors"] if len(t["shape"]) == 2}  # shape [rows, cols]
    want = {n: ("Q8_0" if t["shape"][1] % 32 == 0 else "F16") for n, t in mats.items()
            if n != "position_embd.weight"}
    check(want and all(types[n] == w for n, w in want.items()), f"fallback types {types}, want {want}")
    n_fb = sum(w == "F16" for w in want.values())
    check(n_fb > 0 and f"{n_fb} matri".encode() in r.stdout and b"kept in f16" in r.stdout,
          f"fallback summary {r.stdout!r} ({n_fb} fell back)")
    expect(["generate", "-m", p("fb.gguf"), "-p", "ab", "-n", "4", "--temp", "0"], 0)
    expect(["quantize", p("w64.gguf"), p("bad.gguf"), "--type", "q9_0"], 2, b"--type")
    check(not os.path.exists(p("bad.gguf")), "a failed quantize left its output")
    gen = [expect(["generate", "-m", f, "-p", "ab", "-n", "8", "--temp", "0"], 0).stdout
           for f in (p("w64.gguf"), p("w-q8_0.gguf"))]
    check(len(gen[0]) > 2, f"generate printed {gen[0]!r}")

print(f"cli_test: {failures} failed")
sys.exit(1 if failures else 0)
