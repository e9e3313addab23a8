#!/usr/bin/python3
"""probe_overhead.py — does the probe hook cost anything when it is off?

Alternates the two builds of bench/probe_overhead.c — `hooks` (the model as
shipped: probe calls compiled in, no probe attached) and `none` (gpt.c and
attention.c rebuilt with -DTG_NO_PROBE) — ROUNDS times, in A B B A order so
drift in the machine's load hits both alike. Each process runs the same
generation REPS times; the figure per process is its median CPU time (one
thread: CPU time is what the work costs, unaffected by being descheduled
on a shared machine). The verdict compares the medians over all processes,
and a third variant, `profiled` (the profiler attached), shows what
profiling itself costs.

usage: probe_overhead.py HOOKS_EXE NONE_EXE [--rounds N] [--reps N] [-m MODEL]
"""
import json
import statistics
import subprocess
import sys


def run(exe, extra, reps):
    out = subprocess.run([exe, "--reps", str(reps)] + extra, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def main():
    hooks, none = sys.argv[1], sys.argv[2]
    rounds, reps, extra = 8, 15, []
    args = sys.argv[3:]
    while args:
        a = args.pop(0)
        if a == "--rounds":
            rounds = int(args.pop(0))
        elif a == "--reps":
            reps = int(args.pop(0))
        elif a == "-m":
            extra += ["-m", args.pop(0)]
        else:
            sys.exit(f"unknown argument {a}")
    med = {"hooks": [], "none": [], "profiled": []}
    wall = {"hooks": [], "none": [], "profiled": []}
    last = {}
    for r in range(rounds):
        order = [("hooks", hooks, []), ("none", none, [])]
        if r % 2:
            order.reverse()
        order = order + order[::-1]           # A B B A
        if r % 4 == 0:
            order.append(("profiled", hooks, ["--profile"]))
        for name, exe, flags in order:
            d = run(exe, flags + extra, reps)
            med[name].append(statistics.median(d["cpu_ms"]))
            wall[name].append(statistics.median(d["wall_ms"]))
            last[name] = d["last_token"]
            tokens = d["tokens"]
    # Same work: the generations must agree token for token at the end.
    if len(set(last.values())) != 1:
        print(f"warning: variants generated different text: {last}")
    h, n, p = (statistics.median(med[k]) for k in ("hooks", "none", "profiled"))
    ratio = h / n
    # Spread of the baseline itself: how far apart two runs of `none` are.
    spread = (max(med["none"]) - min(med["none"])) / n
    print(f"generation of {tokens} tokens x {reps} reps x {len(med['none'])} "
          f"processes per variant, 1 thread, CPU time medians:")
    print(f"  none     (probe compiled out)      {n:9.3f} ms")
    print(f"  hooks    (compiled in, no probe)   {h:9.3f} ms   ratio {ratio:.4f}")
    print(f"  profiled (profiler attached)       {p:9.3f} ms   ratio {p / n:.4f}")
    print(f"  wall-clock medians: none {statistics.median(wall['none']):.3f} ms, "
          f"hooks {statistics.median(wall['hooks']):.3f} ms")
    print(f"  spread of the per-process medians of `none`: {spread:.2%}")
    verdict = "within 1%" if abs(ratio - 1) <= 0.01 else "NOT within 1%"
    print(f"hooks / none = {ratio:.4f}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
