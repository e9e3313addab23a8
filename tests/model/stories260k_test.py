#!/usr/bin/python3
"""stories260K (llama2.c's 260K-parameter TinyStories model, ../shared):
greedy generation, 200 tokens, with and without a text prompt, identical
token for token to the PyTorch reference (tests/model/llama_ref.py, float64)
running the weights read from stories260K.bin by tests/weights/llama_files.py
(the format's definition, not our C); prompt ids against the llama2.c encode
reference of tests/model/spm_oracle.py. Then the same through
`tinygpt convert stories260K.bin --tokenizer tok512.bin` -> llama GGUF, with
the vocabulary now inside the GGUF.

usage: stories260k_test.py TINYGPT SOURCE_DIR
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

N = 200
PROMPTS = [None, b"Once upon a time", b"Tom and Lily went to the park. Tom saw", b"The little dog"]


def generate(exe, model, prompt, tok=None):
    cmd = [exe, "generate", "-m", model, "--temp", "0", "-n", str(N), "--ignore-eos", "--json"]
    if tok:
        cmd += ["--tokenizer", tok]
    cmd += ["--prompt-ids", "1"] if prompt is None else ["-p", prompt.decode()]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    j = json.loads(r.stdout)
    return j["prompt_ids"], [t["id"] for t in j["samples"][0]["tokens"]]


def main():
    exe, src = sys.argv[1], sys.argv[2]
    shared = spm_oracle.shared_dir(src)
    d = os.path.join(shared, "data", "stories260K") if shared else None
    if not d or not os.path.exists(os.path.join(d, "stories260K.bin")):
        return spm_oracle.missing_data("stories260k_test", os.path.join(shared, "data", "stories260K", "stories260K.bin"))
    model, tok = os.path.join(d, "stories260K.bin"), os.path.join(d, "tok512.bin")
    cfg, w = lf.read_llama2c(open(model, "rb").read())
    ref = llama_ref.Llama(w, cfg, eps=1e-5, theta=10000.0, pairs="adjacent")
    pieces, scores = spm_oracle.read_tokenizer_bin(tok)[:2]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        gguf = os.path.join(tmp, "stories260K.gguf")
        r = subprocess.run([exe, "convert", model, "--tokenizer", tok, "-o", gguf], capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"convert: {r.stderr.strip()}")
            gguf = None
        for prompt in PROMPTS:
            ids = [1] if prompt is None else spm_oracle.encode(pieces, scores, prompt)
            want, gap = ref.greedy(ids, N)
            label = "no text" if prompt is None else repr(prompt.decode())
            print(f"{label}: reference {len(want)} tokens, smallest top-2 logit gap {gap:.3g}: "
                  f"{b''.join(pieces[i] for i in want)[:80]!r}...")
            for what, m, t in (("stories260K.bin", model, tok), ("converted GGUF", gguf, None)):
                if m is None:
                    continue
                try:
                    got_prompt, got = generate(exe, m, prompt, t)
                except RuntimeError as e:
                    failures.append(f"{what} {label}: {e}")
                    continue
                if got_prompt != ids:
                    failures.append(f"{what} {label}: prompt ids {got_prompt} != reference {ids}")
                if got != want:
                    k = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
                    failures.append(f"{what} {label}: {len(got)} tokens, first difference at {k} "
                                    f"(got {got[k:k + 5]}, reference {want[k:k + 5]})")
    for f in failures:
        print("FAIL:", f)
    print(f"stories260k_test: {len(PROMPTS)} prompts x 2 models, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
