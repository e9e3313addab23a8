#!/usr/bin/python3
"""llama_test.py — the Python binding (and so libtinygpt) on a Llama model:
stories260K (../shared, llama2.c) converted to a llama GGUF by the CLI.

  * info says llama, 8 query heads over 4 KV heads, head size 8, and its
    parameter count is the tensor table's sum (llama.cpp's names);
  * encode equals `tinygpt tokenize` (BOS first), logits are finite [T, V],
    attention rows [L, H, T, T] are causal distributions;
  * greedy generation equals `tinygpt generate --temp 0` on the same file.

usage: llama_test.py BUILD SRC TINYGPT SANITIZE (exit 77: ../shared absent)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

BUILD, SRC, TG, SANITIZE = sys.argv[1:5]
if SANITIZE != "none" and "TG_PY_ASAN" not in os.environ:  # as binding_test.py
    cc = shutil.which("cc") or "gcc"
    rt = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                        text=True).stdout.strip()
    env = dict(os.environ, TG_PY_ASAN="1", LD_PRELOAD=rt,
               ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    os.execve(sys.executable, [sys.executable] + sys.argv, env)
sys.path.insert(0, os.path.join(BUILD, "python"))
import tinygpt  # noqa: E402

sys.path.insert(0, os.path.join(SRC, "tests", "model"))
import spm_oracle  # noqa: E402  (shared_dir, missing_data)

S = os.path.join(spm_oracle.shared_dir(SRC), "data", "stories260K")
fails = []


def check(ok, what):
    if not ok:
        fails.append(what)
        print("FAIL", what)


def cli(*args):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run([TG, *args], capture_output=True, text=True, env=env)
    if r.returncode:
        sys.exit("tinygpt %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def main():
    if not os.path.exists(os.path.join(S, "stories260K.bin")):
        return spm_oracle.missing_data("llama_test", os.path.join(S, "stories260K.bin"))
    with tempfile.TemporaryDirectory() as tmp:
        gguf = os.path.join(tmp, "s.gguf")
        cli("convert", os.path.join(S, "stories260K.bin"), "--tokenizer",
            os.path.join(S, "tok512.bin"), "-o", gguf)
        # the checkpoint itself holds no tokenizer: opening it says so and the way out
        b = os.path.join(S, "stories260K.bin")
        try:
            tinygpt.Model(b)
            check(False, "opening a llama2.c checkpoint (no tokenizer) did not fail")
        except tinygpt.Error as e:
            check(b + " holds no tokenizer" in str(e) and "convert" in str(e) and "\n" not in str(e),
                  "opening a checkpoint without a tokenizer: %r" % str(e))
        m = tinygpt.Model(gguf)
        i = m.info
        check(i["arch"] == "llama", "arch %r" % i["arch"])
        check((i["n_head"], i["n_kv_head"], i["head_size"], i["n_layer"]) == (8, 4, 8, 5),
              "shape %r" % ((i["n_head"], i["n_kv_head"], i["head_size"], i["n_layer"]),))
        check(i["n_tensors"] == 47, "tensors %d" % i["n_tensors"])
        # 260,032: llama2.c's count for stories260K (embedding 512x64 tied,
        # 5 x (wq 64x64, wk 32x64, wv 32x64, wo 64x64, w1/w3 172x64, w2 64x172,
        # two norms of 64), output norm 64)
        n = 512 * 64 + 5 * (64 * 64 * 2 + 32 * 64 * 2 + 172 * 64 * 3 + 2 * 64) + 64
        check(i["n_params"] == n, "params %d vs %d" % (i["n_params"], n))
        text = "Once upon a time, a little cat"
        ids = [int(x) for x in m.encode(text)]
        ref = json.loads(cli("tokenize", "-m", gguf, "-p", text, "--json"))
        ref_ids = ref["ids"] if isinstance(ref, dict) else ref
        check(ids == ref_ids, "encode %r vs tokenize %r" % (ids, ref_ids))
        check(ids[0] == i["bos"], "BOS first")
        lg = m.logits(ids)
        check(lg.shape == (len(ids), 512) and np.all(np.isfinite(lg)), "logits %r" % (lg.shape,))
        a = m.attention(ids)
        T = len(ids)
        check(a.shape == (5, 8, T, T), "attention %r" % (a.shape,))
        check(np.allclose(a.sum(axis=3), 1, atol=1e-5) and
              np.all(np.triu(a, 1) == 0), "attention rows causal distributions")
        got = "".join(m.generate("Once upon a time", 60, temperature=0))
        want = cli("generate", "-m", gguf, "-p", "Once upon a time", "--temp", "0", "-n", "60",
                   "--no-echo")
        if want.endswith("\n") and not got.endswith("\n"):
            want = want[:-1]  # the CLI ends its output with a newline
        check(got == want, "greedy text differs:\n%r\n%r" % (got, want))
        # A sampled BOS ends the text (llama2.c's stories end with it): the
        # run that ignores it shows where it comes; the normal run stops
        # there, in the binding and the command alike.
        p = "The sun"
        d = json.loads(cli("generate", "-m", gguf, "-p", p, "--temp", "0", "-n", "480",
                           "--ignore-eos", "--json"))
        free = [t["id"] for t in d["samples"][0]["tokens"]]
        cut = free.index(i["bos"]) if i["bos"] in free else None
        check(cut is not None, "no BOS in 480 greedy tokens after %r (pick another prompt)" % p)
        if cut is not None:
            d = json.loads(cli("generate", "-m", gguf, "-p", p, "--temp", "0", "-n", "480",
                               "--json"))
            ids_stop = [t["id"] for t in d["samples"][0]["tokens"]]
            check(ids_stop == free[:cut], "generate stops at BOS: %d tokens, BOS at %d"
                  % (len(ids_stop), cut))
            got = "".join(m.generate(p, 480, temperature=0))
            want = cli("generate", "-m", gguf, "-p", p, "--temp", "0", "-n", "480", "--no-echo")
            if want.endswith("\n") and not got.endswith("\n"):
                want = want[:-1]
            check(got == want, "binding stops at BOS as the command does")
    print("%d failures" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
