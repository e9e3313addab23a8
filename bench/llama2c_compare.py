#!/usr/bin/python3
"""llama2c_compare.py — stories260K decode speed: tinygpt against llama2.c's
run.c, one thread, interleaved runs on the same machine (a same-run ratio).

run.c is not part of tinygpt: build it yourself for the measurement only,

    git clone https://github.com/karpathy/llama2.c /tmp/llama2.c
    gcc -O3 -march=native -o /tmp/llama2.c/run /tmp/llama2.c/run.c -lm

and pass its path (or set LLAMA2C_RUN). Each round runs both programs on
the same greedy generation (temperature 0, N steps after BOS, no prompt)
and records (a) the tok/s each prints and (b) the CPU time its process
used (getrusage of the child: on a shared machine a process waiting for a
core does not bill it), also for a 2-step run of each, so that
(cpu(N) - cpu(2)) / (N - 2) is the CPU time of one decode step without the
start-up (loading, tokenizer, allocation). The report is the median of
each and the ratios.

usage: llama2c_compare.py RUN TINYGPT MODEL.bin TOKENIZER.bin [--rounds 9] [--steps 256]
"""
import os
import re
import subprocess
import sys


def cpu_of(cmd):
    """(output, CPU seconds) of one child run, from its rusage."""
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        out = os.open(cpu_of.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(fd)
        os.execv(cmd[0], cmd)
    _, status, ru = os.wait4(pid, 0)
    with open(cpu_of.log) as f:
        text = f.read()
    if status != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), status, text[-300:]))
    return text, ru.ru_utime + ru.ru_stime


cpu_of.log = "/tmp/llama2c_compare.%d.log" % os.getpid()


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def main():
    args = sys.argv[1:]
    rounds, steps = 9, 256
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    if "--steps" in args:
        i = args.index("--steps")
        steps = int(args[i + 1])
        del args[i:i + 2]
    if len(args) == 3 and os.environ.get("LLAMA2C_RUN"):
        args = [os.environ["LLAMA2C_RUN"]] + args
    if len(args) != 4:
        print(__doc__)
        return 2
    run_c, tinygpt, model, tok = args
    # run.c: -n counts every forward step (BOS included); tinygpt: -n the
    # generated tokens after the BOS prompt id, so both run `steps` forwards
    c_cmd = [run_c, model, "-z", tok, "-t", "0", "-n", str(steps), "-i", ""]
    t_cmd = [tinygpt, "generate", "-m", model, "--tokenizer", tok, "--temp", "0", "-t", "1",
             "--prompt-ids", "1", "-n", str(steps - 1), "--ignore-eos"]
    c_short = c_cmd[:c_cmd.index("-n") + 1] + ["2"] + c_cmd[c_cmd.index("-n") + 2:]
    t_short = t_cmd[:t_cmd.index("-n") + 1] + ["1"] + t_cmd[t_cmd.index("-n") + 2:]
    c_tps, t_tps, c_cpu, t_cpu, c0, t0 = [], [], [], [], [], []
    for r in range(rounds):
        for which in ((0, 1) if r % 2 == 0 else (1, 0)):  # alternate who goes first
            if which == 0:
                text, cpu = cpu_of(c_cmd)
                m = re.search(r"achieved tok/s: ([0-9.]+)", text)
                c_tps.append(float(m.group(1)))
                c_cpu.append(cpu)
                c0.append(cpu_of(c_short)[1])
            else:
                text, cpu = cpu_of(t_cmd)
                m = re.search(r"generated: \d+ tokens?, ([0-9.]+) tok/s", text)
                t_tps.append(float(m.group(1)))
                t_cpu.append(cpu)
                t0.append(cpu_of(t_short)[1])
    print("stories260K greedy decode, %d steps, 1 thread, %d interleaved rounds (medians)" % (steps, rounds))
    cs = (median(c_cpu) - median(c0)) / (steps - 2)  # CPU seconds per decode step
    ts = (median(t_cpu) - median(t0)) / (steps - 2)
    print("  llama2.c run.c : %8.0f tok/s printed; CPU %.1f ms start-up, %.1f us/step = %8.0f tok/s"
          % (median(c_tps), 1e3 * median(c0), 1e6 * cs, 1 / cs))
    print("  tinygpt        : %8.0f tok/s printed; CPU %.1f ms start-up, %.1f us/step = %8.0f tok/s"
          % (median(t_tps), 1e3 * median(t0), 1e6 * ts, 1 / ts))
    print("  ratio          : %8.2fx printed, %.2fx by CPU time per decode step (target 3x)"
          % (median(t_tps) / median(c_tps), cs / ts))
    os.unlink(cpu_of.log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
