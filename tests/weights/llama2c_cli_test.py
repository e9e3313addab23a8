#!/usr/bin/python3
"""`tinygpt inspect` (and every command that loads a model) on llama2.c
files and Hugging Face Llama folders: valid ones are described (architecture
llama, n_kv_head, the rope convention, types, resident bytes); hostile ones —
a small file truncated at every byte of its header fields and at intervals after them,
sizes that disagree with the file, negative or zero dims, n_kv_heads not
dividing n_heads, an unknown ak42 version or group size — give one line on
stderr naming the problem and exit 1, never a signal.

usage: llama2c_cli_test.py TINYGPT [COMMAND ...]
  COMMAND: extra loading commands to run on the hostile files, as
  "generate -n 1 -p x -m" (the path is appended)
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_files as lf  # noqa: E402

EXE = sys.argv[1]
EXTRA = [c.split() for c in sys.argv[2:]]
failures, runs = [], 0


def run(args):
    global runs
    runs += 1
    return subprocess.run([EXE] + args, capture_output=True, text=True, errors="replace", timeout=60)


def expect_error(path, needle, label, extra=True):
    for cmd in [["inspect"]] + (EXTRA if extra else []):
        r = run(cmd + [path])
        lines = r.stderr.strip().splitlines()
        if r.returncode != 1 or len(lines) != 1 or needle not in r.stderr:
            failures.append(f"{label}: {' '.join(cmd)} exit {r.returncode}, stderr {r.stderr.strip()[:300]!r} "
                            f"(want exit 1 and one line with {needle!r})")


def n_of(shape):
    n = 1
    for x in shape:
        n *= x
    return n


def check_resident(label, j, want):
    """inspect --json's resident bytes per tensor and in total against want
    {name: bytes}, counted here from the format (the loader's rule: a matrix
    stays in its type where its data is aligned for it, every vector and an
    unaligned matrix become f32; Q8_0 is 34 bytes per 32 weights), and the
    text table's total row."""
    got = {t["name"]: t.get("resident_bytes") for t in j["tensors"]}
    if got != want:
        bad = {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}
        failures.append(f"inspect {label}: resident bytes (got, want) {dict(list(bad.items())[:6])}")
    if j.get("resident_bytes") != sum(want.values()) or j.get("tensor_bytes") != sum(t["bytes"] for t in j["tensors"]):
        failures.append(f"inspect {label}: totals {j.get('tensor_bytes')} {j.get('resident_bytes')}, "
                        f"want resident {sum(want.values())}")
    r = run(["inspect", j["path"]])
    tot = [x.split() for x in r.stdout.splitlines() if x.strip().startswith("total ")]
    if tot != [["total", str(j.get("tensor_bytes")), "bytes", str(sum(want.values())), "resident"]]:
        failures.append(f"inspect {label}: text total row {tot}")


def safetensors_table(path):
    """{(file offset of the data, shape): dtype} from the safetensors header."""
    d = open(path, "rb").read()
    n = struct.unpack_from("<Q", d, 0)[0]
    h = json.loads(d[8:8 + n])
    return {(8 + n + v["data_offsets"][0], tuple(v["shape"])): v["dtype"]
            for k, v in h.items() if k != "__metadata__"}


def main():
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        # ---- valid files: what inspect says
        w, cfg = lf.random_llama(rng, 16, 24, 2, 4, 2, 10, False)
        v2, _ = lf.v2_bytes(w, cfg, 6, 8)
        n_el = sum(x.size for x in w.values())
        for form, data, fmt in (("legacy", lf.legacy_bytes(w, cfg, 6), "legacy .bin"),
                                ("v1", lf.v1_bytes(w, cfg, 6), "ak42 v1"), ("v2", v2, "ak42 v2")):
            p = os.path.join(tmp, form + ".bin")
            open(p, "wb").write(data)
            r = run(["inspect", "--json", p])
            if r.returncode != 0:
                failures.append(f"inspect {form}: exit {r.returncode}: {r.stderr.strip()}")
                continue
            j = json.loads(r.stdout)
            want = {"architecture": "llama", "n_layer": 2, "n_head": 4, "n_kv_head": 2, "head_size": 4, "n_embd": 16,
                    "n_ff": 24, "n_ctx": 6, "n_vocab": 10, "tied": False, "rope_pairs": "adjacent",
                    "resident_bytes": 4 * n_el, "file_bytes": len(data), "problems": []}
            for k, v in want.items():
                if j.get(k) != v:
                    failures.append(f"inspect {form}: {k} = {j.get(k)!r}, want {v!r}")
            if fmt not in j["format"]:
                failures.append(f"inspect {form}: format {j['format']!r}")
            types = {t["type"] for t in j["tensors"] if len(t["shape"]) == 2}
            if types != ({"I8+F32 as F32"} if form == "v2" else {"F32"}):  # GS 8: not Q8_0
                failures.append(f"inspect {form}: matrix types {types}")
            if form == "v2" and "dequantized to f32" not in j.get("note", ""):
                failures.append(f"inspect v2 does not say the int8 groups are dequantized: {j.get('note')!r}")
            check_resident(form, j, {t["name"]: 4 * n_of(t["shape"]) for t in j["tensors"]})
        # ak42 v2 with groups of 32 and rows of 32k: its matrices run as Q8_0
        w32, cfg32 = lf.random_llama(rng, 32, 64, 2, 4, 2, 10, False)
        p = os.path.join(tmp, "v2-32.bin")
        open(p, "wb").write(lf.v2_bytes(w32, cfg32, 6, 32)[0])
        r = run(["inspect", "--json", p])
        if r.returncode != 0:
            failures.append(f"inspect v2 gs 32: exit {r.returncode}: {r.stderr.strip()}")
        else:
            j = json.loads(r.stdout)
            names = {t["name"]: tuple(t["shape"]) for t in j["tensors"]}
            if names != {k: x.shape for k, x in w32.items()}:
                failures.append(f"inspect v2 gs 32: tensors {names}")
            check_resident("v2 gs 32", j, {k: n_of(x.shape) // 32 * 34 if x.ndim == 2 else 4 * x.size
                                           for k, x in w32.items()})
        folder = os.path.join(tmp, "hf")
        lf.write_hf_folder(folder, w, cfg, 6, "BF16")
        r = run(["inspect", "--json", folder])
        if r.returncode != 0:
            failures.append(f"inspect HF: exit {r.returncode}: {r.stderr.strip()}")
        else:
            j = json.loads(r.stdout)
            # resident: the BF16 matrices as they are, the norms as f32 (check_resident below)
            n_vec = sum(x.size for x in w.values() if x.ndim == 1)
            if (j["rope_pairs"], j["n_kv_head"], j["resident_bytes"]) != ("halves", 2, 2 * n_el + 2 * n_vec):
                failures.append(f"inspect HF: {j['rope_pairs']}, {j['n_kv_head']}, {j['resident_bytes']}")
            if {t["type"] for t in j["tensors"]} != {"BF16"}:
                failures.append(f"inspect HF: types {[t['type'] for t in j['tensors']]}")
        for dt, size in (("BF16", 2), ("F32", 4)):
            folder = os.path.join(tmp, "hf-" + dt)
            lf.write_hf_folder(folder, w, cfg, 6, dt)
            table = safetensors_table(os.path.join(folder, "model.safetensors"))
            r = run(["inspect", "--json", folder])
            if r.returncode != 0:
                failures.append(f"inspect HF {dt}: exit {r.returncode}: {r.stderr.strip()}")
                continue
            j = json.loads(r.stdout)
            want = {}
            for t in j["tensors"]:
                at = (t["offset"], tuple(t["shape"]))
                if table.get(at) != dt:
                    failures.append(f"inspect HF {dt}: {t['name']} at {at} is not a {dt} tensor of the file")
                in_place = len(t["shape"]) == 2 and at[0] % size == 0
                want[t["name"]] = size * n_of(t["shape"]) if in_place else 4 * n_of(t["shape"])
            if len(j["tensors"]) != len(table):
                failures.append(f"inspect HF {dt}: {len(j['tensors'])} tensors, the file has {len(table)}")
            check_resident("HF " + dt, j, want)

        # the same model converted to a llama GGUF (tokenizer.bin given): inspect reads the GGUF side
        tokp = os.path.join(tmp, "tok.bin")
        open(tokp, "wb").write(lf.tokenizer_bin_bytes(10))
        gg = os.path.join(tmp, "m.gguf")
        r = run(["convert", os.path.join(tmp, "legacy.bin"), "--tokenizer", tokp, "-o", gg])
        if r.returncode != 0:
            failures.append(f"convert legacy: {r.stderr.strip()}")
        else:
            r = run(["inspect", "--json", gg])
            j = json.loads(r.stdout) if r.returncode == 0 else {}
            got = (j.get("architecture"), j.get("n_kv_head"), j.get("rope_pairs"), j.get("tied"),
                   (j.get("tokenizer") or {}).get("model"), (j.get("tokenizer") or {}).get("n_tokens"))
            if got != ("llama", 2, "adjacent", False, "llama", 10):
                failures.append(f"inspect of the converted GGUF: exit {r.returncode}, {got} {r.stderr.strip()}")
            elif j:
                check_resident("converted GGUF", j, {t["name"]: 4 * n_of(t["shape"]) for t in j["tensors"]})
        # the 32-wide model as a q8_0 GGUF: matrices stay Q8_0, vectors f32
        gq = os.path.join(tmp, "m32-q8.gguf")
        r = run(["convert", os.path.join(tmp, "v2-32.bin"), "--tokenizer", tokp, "-o", gq, "--dtype", "q8_0"])
        r = run(["inspect", "--json", gq]) if r.returncode == 0 else r
        if r.returncode != 0:
            failures.append(f"convert/inspect a q8_0 llama GGUF: {r.stderr.strip()}")
        else:
            j = json.loads(r.stdout)
            if {t["type"] for t in j["tensors"] if len(t["shape"]) == 2} != {"Q8_0"}:
                failures.append(f"q8_0 llama GGUF: matrix types {[t['type'] for t in j['tensors']]}")
            check_resident("q8_0 GGUF", j, {t["name"]: n_of(t["shape"]) // 32 * 34 if len(t["shape"]) == 2
                                            else 4 * n_of(t["shape"]) for t in j["tensors"]})

        # a checkpoint holds no tokenizer: every command that encodes text says
        # so and how to give one (one line, exit 1), inspect says it has none
        legacy = os.path.join(tmp, "legacy.bin")
        txt = os.path.join(tmp, "t.txt")
        open(txt, "w").write("a b c")
        for cmd, how in ((["generate", "-p", "x", "-n", "1", "-m"], "--tokenizer PATH"),
                         (["eval", "-f", txt, "-m"], "--tokenizer PATH"),
                         (["tokenize", "-p", "x", "-m"], "--tokenizer PATH"),
                         (["attention", "-p", "x", "-m"], "--tokenizer PATH"),
                         (["compare", "-f", txt, legacy], "convert --tokenizer")):
            r = run(cmd + [legacy])
            lines = r.stderr.strip().splitlines()
            if r.returncode != 1 or len(lines) != 1 or f"{legacy} holds no tokenizer" not in r.stderr or how not in r.stderr:
                failures.append(f"{cmd[0]} of a checkpoint without --tokenizer: exit {r.returncode}, "
                                f"stderr {r.stderr.strip()[:300]!r} (want one line naming it, with {how!r})")
        r = run(["inspect", legacy])
        if r.returncode != 0 or "tokenizer:     none in the file" not in r.stdout:
            failures.append(f"inspect of a checkpoint does not say it holds no tokenizer: {r.stdout[:400]!r}")
        r = run(["generate", "-p", "x", "-n", "1", "--tokenizer", tokp, "-m", legacy])
        if r.returncode != 0:
            failures.append(f"generate with --tokenizer: exit {r.returncode}: {r.stderr.strip()[:300]}")
        # a tokenizer that is not the model's: refused, not run into garbage (the
        # checkpoint's ids and the GGUF's own tokenizer: size and kind)
        tok9 = os.path.join(tmp, "tok9.bin")
        open(tok9, "wb").write(lf.tokenizer_bin_bytes(9))
        g2 = os.path.join(tmp, "gpt2.gguf")
        r = run(["init", "--layers", "1", "--heads", "1", "--embd", "8", "--ctx", "8", "--byte-vocab", "-o", g2])
        if r.returncode != 0:
            failures.append(f"init a byte-vocab GPT-2: {r.stderr.strip()}")
        for model, tk, needle in ((legacy, tok9, "9 tokens, but the model has 10 token ids"),
                                  (gg, tok9, "9 tokens of SentencePiece-style BPE, but the model's own tokenizer "
                                             "has 10 of SentencePiece-style BPE"),
                                  (gg, g2, "257 tokens of gpt2 byte-level BPE, but the model's own tokenizer "
                                           "has 10 of SentencePiece-style BPE"),
                                  (g2, tokp, "10 tokens of SentencePiece-style BPE, but the model's own tokenizer "
                                             "has 257 of gpt2 byte-level BPE")):
            for cmd in (["generate", "-p", "x", "-n", "1"], ["eval", "-f", txt]):
                r = run(cmd + ["--tokenizer", tk, "-m", model])
                if r.returncode != 1 or r.stderr.count("\n") != 1 or needle not in r.stderr \
                        or f"not a tokenizer of {model}" not in r.stderr:
                    failures.append(f"{cmd[0]} -m {os.path.basename(model)} --tokenizer {os.path.basename(tk)}: "
                                    f"exit {r.returncode}, {r.stderr.strip()[:300]!r} (want one line with {needle!r})")
        for model, tk in ((gg, tokp), (g2, g2)):  # its own tokenizer, given again: fine
            r = run(["generate", "-p", "x", "-n", "1", "--tokenizer", tk, "-m", model])
            if r.returncode != 0:
                failures.append(f"generate -m {os.path.basename(model)} with its own tokenizer: {r.stderr.strip()[:300]}")

        # ---- hostile files
        small_w, small_cfg = lf.random_llama(rng, 8, 12, 1, 2, 1, 6, True)
        forms = {"legacy": lf.legacy_bytes(small_w, small_cfg, 3), "v1": lf.v1_bytes(small_w, small_cfg, 3),
                 "v2": lf.v2_bytes(small_w, small_cfg, 3, 4)[0]}
        p = os.path.join(tmp, "bad.bin")
        for form, data in forms.items():
            # every byte of the header, then every 61st of the rest (test_llama2c.c
            # cuts the library's parse at every byte of whole files; this is the CLI)
            # (ak42: every byte of its fields, 0..44, then the padding every 13th)
            hdr = 28 if form == "legacy" else 44
            cuts = list(range(hdr + 4)) + ([] if form == "legacy" else list(range(48, 260, 13)))
            for n in cuts + list(range(260 if form != "legacy" else 32, len(data), 61)):
                open(p, "wb").write(data[:n])
                needle = "truncated" if form != "legacy" and n >= 8 else ""
                expect_error(p, needle, f"{form} truncated to {n} bytes", extra=n % 7 == 0)
            open(p, "wb").write(data + b"\0" * 4)
            expect_error(p, "4 bytes after the last tensor" if form != "legacy" else "implies", f"{form} + 4 bytes")

        def with_header(form, field, value):
            d = bytearray(forms[form])
            off = (0 if form == "legacy" else 8) + 4 * field
            struct.pack_into("<i", d, off, value)
            return bytes(d)

        names = ["dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"]
        for form in ("v1", "v2"):
            for f, name in enumerate(names):
                for v in (0, -3):
                    open(p, "wb").write(with_header(form, f, v))
                    expect_error(p, f"{name} {v} is not positive", f"{form} {name} = {v}")
            open(p, "wb").write(with_header(form, 4, 3))
            expect_error(p, "n_kv_heads 3 does not divide n_heads 2", f"{form} n_kv_heads 3")
            open(p, "wb").write(with_header(form, 2, 1000))
            expect_error(p, "truncated: the header implies", f"{form} 1000 layers")
        d = bytearray(forms["v1"])
        struct.pack_into("<i", d, 4, 7)
        open(p, "wb").write(bytes(d))
        expect_error(p, "ak42 version 7 is not one we know", "ak42 version 7")
        for gs, needle in ((0, "group_size 0 is not in"), (-8, "group_size -8 is not in"),
                           (5, "not a multiple of group_size 5")):
            d = bytearray(forms["v2"])
            struct.pack_into("<i", d, 37, gs)
            open(p, "wb").write(bytes(d))
            expect_error(p, needle, f"ak42 group size {gs}")
        # a legacy header whose sizes are 4 bytes off is not a llama2.c file: said so
        open(p, "wb").write(forms["legacy"][:-4])
        full = len(forms["legacy"])
        expect_error(p, f"nor a llama2.c checkpoint (its 7-int header implies {full} bytes, the file has {full - 4})",
                     "legacy 4 bytes short")
        # a text file: neither a GGUF nor a checkpoint, both said
        open(p, "w").write("\n\nGREMIO:\nGood morrow, neighbour Baptista.\n")
        expect_error(p, "not a GGUF file (magic 0a 0a 47 52, expected 'GGUF'), nor a llama2.c checkpoint (dim ",
                     "a text file")

    for f in failures[:40]:
        print("FAIL:", f)
    print(f"llama2c_cli_test: {runs} runs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
