#!/usr/bin/python3
"""kv_heads_test.py — compare and profile report grouped-query attention.

Three random Llamas from `tinygpt init --arch llama` with 8 query heads and
8, 2 and 1 KV heads (MHA, GQA, MQA; head size 8, 2 layers). Checked against
the definitions, not against tinygpt's own numbers:

  * compare --json (and the text): n_kv_head; KV bytes per token =
    L · 2 · KVH · HS · 4 (f32 K and V) and per full context = that · C;
    between two models they differ by exactly n_head / n_kv_head; every
    per-head row names its KV group, head // (H / KVH);
  * profile --json: the same in "config"; --ctx-sweep's kv_bytes per step
    = (ctx + 1) positions · KV bytes per token (the step reads the cache
    and its own new row), in JSON and text (KiB);
  * inspect says the KV heads and the kind (MHA/GQA/MQA);
  * with --kv-type f16 every KV figure counts 2 bytes per element: compare's
    and profile's per token and per context, --ctx-sweep's per step, and
    profile's per-op kv_bytes of attention (half those of the f32 cache,
    op by op and phase by phase), which its roofline divides.

usage: kv_heads_test.py TINYGPT
"""
import json
import os
import subprocess
import sys
import tempfile

EXE = sys.argv[1]
failures, checks = [], 0
L, H, E, C = 2, 8, 64, 64
HS = E // H
# compare's per-head analyses on 64 tokens, not the text's ~430: what is checked
# (configuration, KV bytes, a row per head with its group) does not depend on
# it, and the scalar analyses of 2048 took 5 of this test's 6 seconds a compare
FEW = ("--head-tokens", "64")


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)


def run(*args):
    r = subprocess.run([EXE] + list(args), capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r.stdout


def per_token(kvh, elem=4):
    return L * 2 * kvh * HS * elem


def op_kv(doc):
    """{(phase, op): kv_bytes} of profile --json's op rows, where nonzero."""
    return {(ph["phase"], op["op"]): op["kv_bytes"] for ph in doc["phases"] for op in ph["ops"]
            if op.get("kv_bytes")}


def main():
    with tempfile.TemporaryDirectory(prefix="tg-kvh-") as tmp:
        text = os.path.join(tmp, "text.txt")
        with open(text, "w") as f:
            f.write("Once upon a time there was a little dog who liked to run in the park. " * 6)
        models = {}
        for kvh in (8, 2, 1):
            p = os.path.join(tmp, "kv%d.gguf" % kvh)
            subprocess.run([EXE, "init", "--arch", "llama", "--layers", str(L), "--heads", str(H), "--kv-heads",
                            str(kvh), "--embd", str(E), "--ctx", str(C), "--byte-vocab", "--seed", str(kvh),
                            "-o", p], check=True, capture_output=True)
            models[kvh] = p
            kind = "MHA" if kvh == H else "MQA" if kvh == 1 else "GQA"
            check("kv heads %d (%s)" % (kvh, kind) in run("inspect", p), "inspect kv%d: no 'kv heads %d (%s)'"
                  % (kvh, kvh, kind))
        for a, b in ((8, 2), (8, 1), (2, 1)):
            j = json.loads(run("compare", models[a], models[b], "-f", text, "--json", "--no-agreement",
                               "--isa", "scalar", *FEW))
            ms = j["models"]
            for m, kvh in zip(ms, (a, b)):
                tag = "compare kv%d vs kv%d, model kv%d" % (a, b, kvh)
                check(m["n_kv_head"] == kvh and m["n_head"] == H and m["head_size"] == HS,
                      "%s: n_kv_head %s n_head %s head_size %s" % (tag, m["n_kv_head"], m["n_head"], m["head_size"]))
                check(m["kv_bytes_per_token"] == per_token(kvh), "%s: kv_bytes_per_token %s, want %d" %
                      (tag, m["kv_bytes_per_token"], per_token(kvh)))
                check(m["kv_bytes_per_context"] == per_token(kvh) * C, "%s: kv_bytes_per_context %s, want %d" %
                      (tag, m["kv_bytes_per_context"], per_token(kvh) * C))
                rows = [(r["layer"], r["head"], r["kv_head"]) for r in m["heads"]]
                want = [(l, h, h // (H // kvh)) for l in range(L) for h in range(H)]
                check(rows == want, "%s: per-head KV groups %s, want %s" % (tag, rows, want))
            for key in ("kv_bytes_per_token", "kv_bytes_per_context"):
                check(ms[0][key] * b == ms[1][key] * a and ms[0][key] // ms[1][key] == a // b,
                      "compare kv%d vs kv%d: %s %s vs %s, not a ratio of %d" % (a, b, key, ms[0][key], ms[1][key],
                                                                             a // b))
            txt = run("compare", models[a], models[b], "-f", text, "--no-agreement", "--isa", "scalar", *FEW)
            rows = {ln.split("  ")[0].strip(): ln.split()[-2:] for ln in txt.splitlines()
                    if ln.startswith(("kv heads", "KV bytes/token", "KV bytes/context"))}
            check(rows.get("kv heads") == [str(a), str(b)] and
                  rows.get("KV bytes/token") == [str(per_token(a)), str(per_token(b))] and
                  rows.get("KV bytes/context") == [str(per_token(a) * C), str(per_token(b) * C)],
                  "compare text kv%d vs kv%d: %s" % (a, b, rows))
        for kvh, p in models.items():
            j = json.loads(run("profile", "-m", p, "--json", "--no-roofline", "--isa", "scalar", "-n", "2",
                               "--prompt-tokens", "4"))
            c = j["config"]
            check(c["n_kv_head"] == kvh and c["kv_bytes_per_token"] == per_token(kvh) and
                  c["kv_bytes_per_context"] == per_token(kvh) * C and c["head_size"] == HS,
                  "profile kv%d config %s" % (kvh, c))
            ctxs = (8, 40)
            j = json.loads(run("profile", "-m", p, "--json", "--no-roofline", "--isa", "scalar", "--ctx-sweep",
                               ",".join(map(str, ctxs)), "--sweep-steps", "2"))
            got = [(r["ctx"], r["kv_bytes"]) for r in j["ctx_sweep"]]
            want = [(x, (x + 1) * per_token(kvh)) for x in ctxs]
            check(got == want, "profile --ctx-sweep kv%d: kv_bytes %s, want %s" % (kvh, got, want))
            check(j["config"]["n_kv_head"] == kvh, "profile --ctx-sweep kv%d: config %s" % (kvh, j["config"]))
            txt = run("profile", "-m", p, "--no-roofline", "--isa", "scalar", "--ctx-sweep",
                      ",".join(map(str, ctxs)), "--sweep-steps", "2")
            kib = {}
            for ln in txt.splitlines():
                f = ln.split()
                if f and f[0].isdigit() and int(f[0]) in ctxs:
                    kib[int(f[0])] = f[-1]
            check(kib == {x: "%.1f" % ((x + 1) * per_token(kvh) / 1024) for x in ctxs},
                  "profile --ctx-sweep text kv%d: KV KiB %s" % (kvh, kib))

            # an f16 cache: 2 bytes per element in every KV figure
            f16 = ("--kv-type", "f16")
            args = ("profile", "-m", p, "--json", "--no-roofline", "--isa", "scalar", "-n", "3",
                    "--prompt-tokens", "5")
            j32, j16 = json.loads(run(*args)), json.loads(run(*args, *f16))
            c = j16["config"]
            check(c["kv_bytes_per_token"] == per_token(kvh, 2) and c["kv_bytes_per_context"] == per_token(kvh, 2) * C,
                  "profile --kv-type f16 kv%d config %s" % (kvh, c))
            k32, k16 = op_kv(j32), op_kv(j16)
            check(set(k32) == {(ph, op) for ph in ("prefill", "decode") for op in ("attn_scores", "attn_mix")}
                  and set(k16) == set(k32) and all(k16[x] * 2 == k32[x] for x in k32),
                  "profile --kv-type f16 kv%d: per-op kv_bytes %s, f32 %s" % (kvh, k16, k32))
            j = json.loads(run("profile", "-m", p, "--json", "--no-roofline", "--isa", "scalar", "--ctx-sweep",
                               ",".join(map(str, ctxs)), "--sweep-steps", "2", *f16))
            got = [(r["ctx"], r["kv_bytes"]) for r in j["ctx_sweep"]]
            want = [(x, (x + 1) * per_token(kvh, 2)) for x in ctxs]
            check(got == want, "profile --ctx-sweep --kv-type f16 kv%d: kv_bytes %s, want %s" % (kvh, got, want))
        j = json.loads(run("compare", models[8], models[1], "-f", text, "--json", "--no-agreement", "--isa",
                           "scalar", *FEW, "--kv-type", "f16"))
        got = [(m["kv_bytes_per_token"], m["kv_bytes_per_context"]) for m in j["models"]]
        want = [(per_token(k, 2), per_token(k, 2) * C) for k in (8, 1)]
        check(got == want, "compare --kv-type f16: KV bytes %s, want %s" % (got, want))
    for f in failures:
        print("FAIL", f)
    print("kv_heads_test: %d checks, %d failed" % (checks, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
