#!/usr/bin/python3
"""task_sweep.py — the 1-vs-N-head experiment on synthetic tasks.

Trains one model per (task, layers, heads, seed) with `tinygpt train --task`
as independent processes, -j at a time (each single-threaded, under
`nice -n 19`), scores each with `tinygpt eval --task --json` on fresh
sequences, appends one CSV row per run, and draws accuracy against heads
(mean ± sd over seeds, one line per task and depth) as SVG.

  bench/task_sweep.py run  --out DIR [-j 2] [--tasks ...] [--layers 1,2] [--heads 1,2,4,8]
                           [--seeds 1-5] [--steps 1500] [--embd 64] [--batch 32] [--lr 3e-3]
                           [--eval-seqs 2000] [--task-opts NAME=K=V;K=V ...] [--embd-for L=E]
  bench/task_sweep.py plot DIR/sweep.csv [MORE.csv ...] -o DIR/sweep.svg [--merged ALL.csv]
                                                    (also prints a Markdown table)

Runs already in the CSV (same task, options, shape, budget and seed) are
skipped, so an interrupted sweep continues where it stopped and one can
widen it later. Model files go to DIR/models and are deleted after scoring
unless --keep.
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ["task", "opts", "layers", "heads", "embd", "params", "steps", "batch", "lr", "seed",
          "wall_s", "accuracy", "sequence_accuracy", "loss", "chance", "eval_seqs"]
TASKS = ["marked-tuple", "pair-lookup", "offsets", "assoc-recall", "induction"]


def seeds_of(s):
    out = []
    for part in s.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def key_of(row):
    return (row["task"], row["opts"], int(row["layers"]), int(row["heads"]), int(row["embd"]),
            int(row["steps"]), int(row["batch"]), float(row["lr"]), int(row["seed"]))


def run_one(a, exe, task, opts, L, H, E, seed):
    mdir = os.path.join(a.out, "models")
    os.makedirs(mdir, exist_ok=True)
    tag = f"{task}-L{L}-H{H}-E{E}-S{a.steps}-seed{seed}" + (f"-{abs(hash(opts)) % 10**6}" if opts else "")
    model = os.path.join(mdir, tag + ".gguf")
    cmd = ["nice", "-n", "19", exe, "train", "--task", task, "-o", model, "--layers", str(L),
           "--heads", str(H), "--embd", str(E), "--steps", str(a.steps), "--batch", str(a.batch),
           "--lr", str(a.lr), "--seed", str(seed), "--eval-every", str(max(a.steps // 10, 1)), "-t", "1"]
    if opts:
        cmd += ["--task-opts", opts]
    t0 = time.time()
    tr = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if tr.returncode != 0:
        return None, f"train failed ({tr.returncode}): {' '.join(cmd)}\n{tr.stderr[-2000:]}"
    params = 0
    for line in tr.stderr.splitlines():
        if " parameters, " in line:
            params = int(line.split("train: ")[1].split()[0])
    ev = subprocess.run(["nice", "-n", "19", exe, "eval", "-m", model, "-n", str(a.eval_seqs),
                         "--seed", str(1000 + seed), "--json"], capture_output=True, text=True)
    if ev.returncode != 0:
        return None, f"eval failed: {ev.stderr}"
    j = json.loads(ev.stdout)
    if not a.keep:
        for p in (model, model[:-5] + ".csv"):
            if os.path.exists(p):
                os.remove(p)
    row = {"task": task, "opts": j["opts"], "layers": L, "heads": H, "embd": E, "params": params,
           "steps": a.steps, "batch": a.batch, "lr": a.lr, "seed": seed, "wall_s": f"{wall:.1f}",
           "accuracy": f"{j['accuracy']:.5f}", "sequence_accuracy": f"{j['sequence_accuracy']:.5f}",
           "loss": f"{j['loss']:.5f}", "chance": f"{j['chance']:.6g}", "eval_seqs": a.eval_seqs}
    return row, None


def cmd_run(a):
    exe = os.path.abspath(a.exe)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "sweep.csv")
    done = set()
    if os.path.exists(path):
        with open(path) as f:
            for row in csv.DictReader(f):
                done.add(key_of(row))
    topts = {}
    for spec in a.task_opts or []:
        name, _, o = spec.partition("=")
        topts[name] = o.replace(";", ",")
    embd_for = {}
    for spec in a.embd_for or []:
        l, _, e = spec.partition("=")
        embd_for[int(l)] = int(e)
    # canonical options string, as the model records it
    canon = {}
    for t in a.tasks.split(","):
        cmd = [exe, "task", t, "--sample", "0", "--json"] + (["--task-opts", topts[t]] if t in topts else [])
        canon[t] = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)["opts"]
    jobs = []
    # seeds outermost: a partial sweep has every cell at a few seeds first
    for seed in seeds_of(a.seeds):
        for t in a.tasks.split(","):
            for L in [int(x) for x in a.layers.split(",")]:
                for H in [int(x) for x in a.heads.split(",")]:
                    E = embd_for.get(L, a.embd)
                    k = (t, canon[t], L, H, E, a.steps, a.batch, float(a.lr), seed)
                    if k not in done:
                        jobs.append((t, topts.get(t, ""), L, H, E, seed))
    print(f"{len(jobs)} runs to do ({len(done)} already in {path}), {a.jobs} at a time", file=sys.stderr)
    new = not os.path.exists(path)
    f = open(path, "a", newline="")
    w = csv.DictWriter(f, FIELDS)
    if new:
        w.writeheader()
        f.flush()
    failures = 0
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futs = [pool.submit(run_one, a, exe, *j) for j in jobs]
        for fu in futs:
            row, errmsg = fu.result()
            if row is None:
                failures += 1
                print(errmsg, file=sys.stderr)
                continue
            w.writerow(row)
            f.flush()
            print(f"{row['task']} L{row['layers']} H{row['heads']} seed {row['seed']}: "
                  f"accuracy {row['accuracy']} ({row['wall_s']} s)", file=sys.stderr)
    f.close()
    return 1 if failures else 0


def mean_sd(xs):
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else float("nan")
    return m, sd


def cmd_plot(a):
    rows, seen = [], set()
    for path in a.csv:  # several CSVs (e.g. of sweeps run on several machines): each run once
        for r in csv.DictReader(open(path)):
            if key_of(r) not in seen:
                seen.add(key_of(r))
                rows.append(r)
    if a.merged:
        with open(a.merged, "w", newline="") as f:
            w = csv.DictWriter(f, FIELDS)
            w.writeheader()
            w.writerows(rows)
    cells = {}
    for r in rows:
        k = (r["task"], r["opts"], int(r["layers"]), int(r["embd"]), int(r["steps"]), int(r["heads"]))
        cells.setdefault(k, []).append(r)
    lines = {}
    print("| task | options | layers | width | steps | heads | params | seeds | accuracy mean ± sd | min-max | chance | wall s (mean) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in sorted(cells):
        rs = cells[k]
        acc = [float(r["accuracy"]) for r in rs]
        m, sd = mean_sd(acc)
        wall = sum(float(r["wall_s"]) for r in rs) / len(rs)
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {k[5]} | {rs[0]['params']} | {len(rs)} | "
              f"{100 * m:.1f} ± {100 * sd:.1f} | {100 * min(acc):.1f}-{100 * max(acc):.1f} | "
              f"{100 * float(rs[0]['chance']):.1f} | {wall:.0f} |")
        lines.setdefault(k[:5], []).append((k[5], m, sd if sd == sd else 0.0, len(rs)))
    W, Hh, x0, y0, pw, ph = 900, 460, 60, 30, 480, 380
    hs = sorted({h for v in lines.values() for h, *_ in v})
    xpos = {h: x0 + pw * (i + 0.5) / len(hs) for i, h in enumerate(hs)}
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
              "#7f7f7f", "#bcbd22"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{Hh}" font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>',
           f'<text x="{x0}" y="18">answer accuracy (mean ± sd over seeds) against heads, equal width (lines at 100% overlap)</text>']
    for i in range(6):
        y = y0 + ph - ph * i / 5
        out.append(f'<line x1="{x0}" x2="{x0 + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{20 * i}%</text>')
    for h in hs:
        out.append(f'<text x="{xpos[h]:.1f}" y="{y0 + ph + 16}" text-anchor="middle">{h}</text>')
    out.append(f'<text x="{x0 + pw / 2}" y="{y0 + ph + 34}" text-anchor="middle">heads</text>')
    for i, (k, pts) in enumerate(sorted(lines.items())):
        c = colors[i % len(colors)]
        dash = ' stroke-dasharray="5,3"' if k[2] > 1 else ""
        pts.sort()
        Y = lambda v: y0 + ph - ph * v
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="' +
                   " ".join(f"{xpos[h]:.1f},{Y(m):.1f}" for h, m, sd, n in pts) + '"/>')
        for h, m, sd, n in pts:
            out.append(f'<line x1="{xpos[h]:.1f}" x2="{xpos[h]:.1f}" y1="{Y(min(1, m + sd)):.1f}" '
                       f'y2="{Y(max(0, m - sd)):.1f}" stroke="{c}"/>')
            out.append(f'<circle cx="{xpos[h]:.1f}" cy="{Y(m):.1f}" r="3" fill="{c}"/>')
        ly = y0 + 10 + 16 * i
        out.append(f'<line x1="{x0 + pw + 12}" x2="{x0 + pw + 36}" y1="{ly}" y2="{ly}" stroke="{c}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{x0 + pw + 40}" y="{ly + 4}">{k[0]}, {k[2]} layer{"s" if k[2] > 1 else ""}, E{k[3]}, {k[4]} steps</text>')
    out.append("</svg>")
    tmp = a.o + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, a.o)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--exe", default=os.path.join(ROOT, "build", "tools", "tinygpt"))
    r.add_argument("-j", "--jobs", type=int, default=2)
    r.add_argument("--tasks", default=",".join(TASKS))
    r.add_argument("--task-opts", action="append", help="NAME=K=V;K=V")
    r.add_argument("--layers", default="1,2")
    r.add_argument("--heads", default="1,2,4,8")
    r.add_argument("--seeds", default="1-5")
    r.add_argument("--steps", type=int, default=1500)
    r.add_argument("--embd", type=int, default=64)
    r.add_argument("--embd-for", action="append", help="L=E: width for L layers (equal-parameter runs)")
    r.add_argument("--batch", type=int, default=32)
    r.add_argument("--lr", type=float, default=3e-3)
    r.add_argument("--eval-seqs", type=int, default=2000)
    r.add_argument("--keep", action="store_true")
    q = sub.add_parser("plot")
    q.add_argument("csv", nargs="+")
    q.add_argument("-o", required=True)
    q.add_argument("--merged", help="also write the deduplicated rows of all CSVs here")
    a = p.parse_args()
    return cmd_run(a) if a.cmd == "run" else cmd_plot(a)


if __name__ == "__main__":
    sys.exit(main())
