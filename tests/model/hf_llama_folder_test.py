#!/usr/bin/python3
"""hf_llama_folder_test.py — a Hugging Face LlamaForCausalLM folder with its
tokenizer.json (and no tokenizer.bin), end to end.

The folder is written here, independently of tinygpt: stories260K's
weights (read from stories260K.bin by tests/weights/llama_files.py) as
config.json + model.safetensors (the safetensors layout written by hand,
Q/K rows permuted to HF's halves order), and a tokenizer.json in Hugging
Face's format built from tok512.bin's pieces and scores the way
transformers' SentencePiece converter does it: a BPE model with byte
fallback, the vocab {piece: id} with '▁' for the space, the merges every
split of a piece into two pieces of the vocab, ordered by the merged
piece's score (best first), <unk>/<s>/</s> as special added tokens, the
normalizer prepending '▁' and replacing spaces, a template post-processor
putting <s> first. Then:

  * `tinygpt tokenize -m FOLDER` ids equal llama2.c's encode on tok512.bin
    (tests/model/spm_oracle.py) for spm_oracle's prompts and 3 KB of
    TinyStories (merge ranks from scores give the same merges);
  * `tinygpt generate -m FOLDER` greedy, 120 tokens, three prompts (and
    none), identical token for token to the PyTorch reference
    (tests/model/llama_ref.py, float64) on the .bin's weights;
  * its text equals the pieces of those ids decoded by the format's rules
    ('▁' a space, <0xXX> its byte, the dummy-prefix space after BOS gone);
  * inspect names the tokenizer (SentencePiece-style BPE, 512 tokens);
  * `tinygpt quantize FOLDER --type f32` gives a GGUF with the same greedy
    tokens (Q/K rows permuted, the vocabulary inside).

usage: hf_llama_folder_test.py TINYGPT SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "weights"))
import llama_files as lf  # noqa: E402
import llama_ref  # noqa: E402
import spm_oracle  # noqa: E402

N = 120
PROMPTS = [None, b"Once upon a time", b"Tom and Lily went to the park. Tom saw", b"The little dog"]
SPECIAL = {0: "<unk>", 1: "<s>", 2: "</s>"}


def hf_pieces(raw):
    """tok512.bin's pieces as a SentencePiece model spells them: '▁' for
    the space llama2.c's export wrote, BOS/EOS/UNK by name."""
    out = [b.decode("utf-8").replace(" ", "\u2581") for b in raw]
    for i, s in SPECIAL.items():
        out[i] = s
    return out


def tokenizer_json(pieces, scores):
    vocab = {p: i for i, p in enumerate(pieces)}
    merges = []
    for i, piece in enumerate(pieces):
        if i in SPECIAL or (piece.startswith("<0x") and len(piece) == 6):
            continue
        local = [(piece[:k], piece[k:]) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab]
        local.sort(key=lambda lr: (vocab[lr[0]], vocab[lr[1]]))
        merges += [(l, r, scores[i]) for l, r in local]
    merges.sort(key=lambda m: m[2], reverse=True)  # stable: ties keep vocab order
    return {
        "version": "1.0",
        "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, s in SPECIAL.items()],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [[l, r] for l, r, _ in merges]},
    }


def decode(raw, ids):
    """The text of generated ids: '▁' -> ' ', <0xXX> -> the byte."""
    out = b""
    for i in ids:
        p = raw[i]
        if p.startswith(b"<0x") and len(p) == 6:
            out += bytes([int(p[3:5], 16)])
        else:
            out += p
    return out


def main():
    exe, src = sys.argv[1], sys.argv[2]
    d = os.path.join(spm_oracle.shared_dir(src), "data", "stories260K")
    model, tok = os.path.join(d, "stories260K.bin"), os.path.join(d, "tok512.bin")
    if not os.path.exists(model):
        return spm_oracle.missing_data("hf_llama_folder_test", model)
    cfg, w = lf.read_llama2c(open(model, "rb").read())
    raw, scores = spm_oracle.read_tokenizer_bin(tok)[:2]
    pieces = hf_pieces(raw)
    ref = llama_ref.Llama(w, cfg, eps=1e-5, theta=10000.0, pairs="adjacent")
    failures, checks = [], 0

    def check(ok, what):
        nonlocal checks
        checks += 1
        if not ok:
            failures.append(what)
        return ok

    with tempfile.TemporaryDirectory(prefix="tg-hfl-") as tmp:
        folder = os.path.join(tmp, "stories260K-hf")
        lf.write_hf_folder(folder, w, cfg, cfg["seq_len"], "F32", rms_eps=1e-5)
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer_json(pieces, scores), f, ensure_ascii=False)
        check(not os.path.exists(os.path.join(folder, "tokenizer.bin")), "the folder has a tokenizer.bin")
        r = subprocess.run([exe, "inspect", folder], capture_output=True, text=True)
        check(r.returncode == 0 and "SentencePiece-style BPE (llama), 512 tokens" in r.stdout and
              "kv heads 4 (GQA)" in r.stdout, "inspect: exit %d %r %r" % (r.returncode, r.stdout[-400:], r.stderr))
        # the weights as a PyTorch pickle instead: each command says so in one line
        st, pt = os.path.join(folder, "model.safetensors"), os.path.join(folder, "pytorch_model.bin")
        os.rename(st, pt)
        for cmd in (["inspect", folder], ["generate", "-m", folder, "-p", "Once", "-n", "2"]):
            r = subprocess.run([exe] + cmd, capture_output=True, text=True)
            check(r.returncode == 1 and r.stderr.count("\n") == 1 and
                  "no model.safetensors; it holds pytorch_model.bin, a PyTorch pickle" in r.stderr,
                  "%s with pytorch_model.bin only: exit %d %r" % (cmd[0], r.returncode, r.stderr))
        os.rename(pt, st)

        texts = list(spm_oracle.PROMPTS)
        stories = os.path.join(spm_oracle.shared_dir(src), "data", "tinystories", "tinystories_val.txt")
        if os.path.isfile(stories):
            texts.append(open(stories, "rb").read(3000))
        path = os.path.join(tmp, "prompt.txt")
        for text in texts:
            with open(path, "wb") as f:
                f.write(text)
            r = subprocess.run([exe, "tokenize", "-m", folder, "--no-parse-special", "--json", "-f", path],
                               capture_output=True, timeout=120)
            want = spm_oracle.encode(raw, scores, text)
            if not check(r.returncode == 0, "tokenize %r: exit %d %s" % (text[:30], r.returncode, r.stderr[-300:])):
                continue
            got = json.loads(r.stdout)["ids"]
            k = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            check(got == want, "tokenize %r: differs at %d: tinygpt %s, llama2.c encode %s" %
                  (text[:30], k, got[k:k + 6], want[k:k + 6]))

        for prompt in PROMPTS:
            ids = [1] if prompt is None else spm_oracle.encode(raw, scores, prompt)
            want, gap = ref.greedy(ids, N)
            cmd = [exe, "generate", "-m", folder, "--temp", "0", "-n", str(N), "--ignore-eos", "--json"]
            cmd += ["--prompt-ids", "1"] if prompt is None else ["-p", prompt.decode()]
            r = subprocess.run(cmd, capture_output=True, text=True)
            label = "no text" if prompt is None else repr(prompt.decode())
            if not check(r.returncode == 0, "generate %s: exit %d %s" % (label, r.returncode, r.stderr.strip())):
                continue
            j = json.loads(r.stdout)
            got = [t["id"] for t in j["samples"][0]["tokens"]]
            check(j["prompt_ids"] == ids, "generate %s: prompt ids %s, llama2.c encode %s" % (label, j["prompt_ids"],
                                                                                            ids))
            k = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
            check(got == want, "generate %s: first difference at %d of %d (got %s, reference %s; smallest top-2 "
                  "gap %.3g)" % (label, k, len(want), got[k:k + 5], want[k:k + 5], gap))
            # the plain text: the prompt as given, then the pieces decoded
            r = subprocess.run([exe, "generate", "-m", folder, "--temp", "0", "-n", str(N), "--ignore-eos"] +
                               (["--prompt-ids", "1"] if prompt is None else ["-p", prompt.decode()]),
                               capture_output=True)
            text = decode(raw, want)
            if prompt is None and text.startswith(b" "):
                text = text[1:]  # the dummy-prefix space after BOS
            check(r.returncode == 0 and r.stdout.startswith((prompt or b"") + text),
                  "generate %s text: %r, want %r" % (label, r.stdout[:120], ((prompt or b"") + text)[:120]))
            print("%s: %d greedy tokens, smallest top-2 gap %.3g: %r..." % (label, len(want), gap, text[:60]))
            if prompt == PROMPTS[1]:
                # quantize of the folder (f32: Q/K rows permuted to GGUF's adjacent order,
                # the tokenizer.json written as a llama vocabulary) generates the same
                gg = os.path.join(tmp, "quantized.gguf")
                r = subprocess.run([exe, "quantize", folder, gg, "--type", "f32"], capture_output=True, text=True)
                if check(r.returncode == 0, "quantize the folder: exit %d %s" % (r.returncode, r.stderr.strip())):
                    r = subprocess.run([exe, "generate", "-m", gg, "--temp", "0", "-n", str(N), "--ignore-eos",
                                        "--json", "-p", prompt.decode()], capture_output=True, text=True)
                    j = json.loads(r.stdout) if r.returncode == 0 else {"samples": [{"tokens": []}]}
                    check([t["id"] for t in j["samples"][0]["tokens"]] == want,
                          "quantized folder: greedy tokens differ from the reference")
    for f in failures:
        print("FAIL:", f)
    print("hf_llama_folder_test: %d checks, %d failed" % (checks, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
