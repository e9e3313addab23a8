#!/usr/bin/python3
"""Model paths that are not regular files, from the outside: a FIFO (as a
GGUF, as a member of a Hugging Face folder, as a tokenizer source, as a
training checkpoint) must be refused at once with a one-line error, never
waited on; /dev/zero must be refused, not read without end; a folder that
is no Hugging Face folder must say so. Every run has a timeout, so a
regression fails here instead of hanging the suite.

usage: special_files_test.py TINYGPT
"""
import os
import shutil
import subprocess
import sys
import tempfile

TG = sys.argv[1]
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MODEL = os.path.join(SRC, "weights", "shakespeare-4h.gguf")
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def expect(args, code, needle):
    what = " ".join(args)
    try:
        r = subprocess.run([TG, *args], capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        check(False, f"{what}: still running after 20 s (blocked on a FIFO, or reading without end)")
        return
    check(r.returncode == code, f"{what}: exit {r.returncode}, want {code} ({r.stderr!r})")
    check(needle in r.stderr, f"{what}: stderr {r.stderr!r} lacks {needle!r}")
    check(r.stderr.count(b"\n") == 1 and r.stderr.startswith(b"tinygpt "), f"{what}: not one line: {r.stderr!r}")


with tempfile.TemporaryDirectory() as d:
    fifo = os.path.join(d, "model.gguf")
    os.mkfifo(fifo)
    text = os.path.join(d, "text.txt")
    with open(text, "w") as f:
        f.write("ROMEO: But soft, what light through yonder window breaks? " * 20)
    out = os.path.join(d, "out.gguf")
    FIFO = b"is a FIFO, not a regular file"
    expect(["generate", "-m", fifo, "-p", "hi", "-n", "1"], 1, FIFO)
    expect(["eval", "-m", fifo, "-f", text], 1, FIFO)
    expect(["inspect", fifo], 1, FIFO)
    expect(["convert", fifo, "-o", out], 1, FIFO)
    expect(["init", "--layers", "1", "--heads", "1", "--embd", "8", "--ctx", "8",
            "--vocab-from", fifo, "-o", out], 1, FIFO)
    expect(["train", "-f", text, "-o", out, "--tokenizer-from", fifo, "--steps", "1"], 1, FIFO)
    expect(["train", "-f", text, "-o", out, "--resume", fifo], 1, FIFO)
    check(not os.path.exists(out), "a refused run left an output")

    # a device: refused, not read
    expect(["generate", "-m", "/dev/zero", "-p", "hi", "-n", "1"], 1, b"is a character device, not a regular file")
    expect(["inspect", "/dev/zero"], 1, b"not a regular file")
    expect(["train", "-f", text, "-o", out, "--resume", "/dev/zero"], 1, b"is a character device")

    # a folder that is no Hugging Face folder (empty, or a config.json of
    # neither kind): the error says what a model can be -- it named only
    # GGUF files and GPT-2 folders
    empty = os.path.join(d, "empty")
    os.mkdir(empty)
    other = os.path.join(d, "other")
    os.mkdir(other)
    with open(os.path.join(other, "config.json"), "w") as f:
        f.write('{"model_type": "mistral"}')
    ACCEPTED = b"give a GGUF file, a llama2.c .bin checkpoint, or a Hugging Face GPT-2 or Llama folder"
    for folder in (empty, other):
        for args in (["generate", "-m", folder, "-p", "hi", "-n", "1"], ["inspect", folder],
                     ["convert", folder, "-o", out]):
            expect(args, 1, folder.encode() + b": a folder without vocab.json (GPT-2) or a config.json "
                   b"naming llama (Llama): not a model (" + ACCEPTED + b")")
    check(not os.path.exists(out), "convert of no model left an output")
    # the same empty folder as a vocabulary: it said "vocab.json: No such file or directory"
    for args in (["tokenize", "--tokenizer", empty, "-p", "hi"],
                 ["generate", "--tokenizer", empty, "-p", "hi", "-n", "1"]):
        expect(args, 1, empty.encode() + b": a folder with neither tokenizer.json nor vocab.json + merges.txt")

    # Hugging Face folders with one member a FIFO: each file in turn
    for member in ["vocab.json", "config.json", "merges.txt", "model.safetensors"]:
        hf = os.path.join(d, "hf-" + member)
        os.mkdir(hf)
        for name in ["vocab.json", "config.json", "merges.txt", "model.safetensors"]:
            p = os.path.join(hf, name)
            if name == member:
                os.mkfifo(p)
            else:
                with open(p, "w") as f:
                    f.write({"vocab.json": '{"a": 0, "b": 1}', "config.json":
                             '{"n_layer": 1, "n_head": 1, "n_embd": 4, "n_positions": 8, "vocab_size": 2}',
                             "merges.txt": "#version: 0.2\na b\n", "model.safetensors": ""}[name])
        want = (member + ": is a FIFO").encode()
        if member in ("config.json", "model.safetensors"):  # (the others are read after the empty weights)
            expect(["generate", "-m", hf, "-p", "a", "-n", "1"], 1, want)
        if member != "model.safetensors":
            expect(["init", "--layers", "1", "--heads", "1", "--embd", "8", "--ctx", "8",
                    "--vocab-from", hf, "-o", out], 1, want)

if failures:
    print(f"{failures} failure(s)")
    sys.exit(1)
print("ok")
