#!/usr/bin/env python3
"""serve_bench.py TINYGPT [MODEL] — `tinygpt serve`'s decode speed against
`tinygpt generate` on the same model, prompt, seed and settings, as same-run
ratios of interleaved runs (medians):

 1. one streamed completion of N tokens vs `tinygpt generate -n N` (target
    >= 90%), three ways:
    a. wall, the fair figure: the server's time from sending the request to
       the last event (HTTP, parsing, prefill, N tokens, every event written
       and read) against generate's prefill + decode time for the same
       tokens (from its stats line: its own printing included);
    b. CPU per token: the server process's CPU time (every thread's, from
       /proc/PID/task/*/schedstat, ns) for an N-token request less a 1-token
       one, against generate's (wait4 rusage) for -n N less -n 1: what a
       token costs each, start-up, HTTP and prefill cancelled out;
    c. the client's first-to-last-event rate (the old figure): biased high,
       since the server writes the events of up to 2 ms together, so the
       first event arrives with a batch and the window misses its time;
 2. --parallel 2 -t 2: two streams at once, aggregate tokens/s (from the
    first request sent to the last event), vs one stream on a --parallel 1
    -t 2 server (target >= 1.6x) and vs one stream on the same server;
    b. where that window goes, by CPU time (schedstat): the server's for
       both streams against one stream's alone, this client's own (it runs
       on the same cores), the skews of the requests' starts and ends, and
       the aggregate that server + client CPU on the cores would allow.

Loopback only; SERVE_BENCH_ROUNDS rounds (default 7); a few seconds each.

serve_bench.py TINYGPT --callgrind [MODEL]: instructions instead of time
(valgrind's callgrind, TINYGPT_ISA=avx2 as valgrind cannot decode AVX-512),
immune to the load of a shared machine: `tinygpt generate -n N` less -n 1
against a server answering one streamed N-token request less a 1-token
one (start-up, HTTP and prefill cancel out): instructions per token of
each (~2 minutes)."""
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "serve"))
from serve_util import Server  # noqa: E402

EXE = sys.argv[1]
CALLGRIND = "--callgrind" in sys.argv[2:]
_rest = [a for a in sys.argv[2:] if a != "--callgrind"]
MODEL = _rest[0] if _rest else None
ROUNDS = int(os.environ.get("SERVE_BENCH_ROUNDS", "7"))
N = 240       # tokens: within the shipped models' 256 context, so no crop
PROMPT = "ROMEO:"


def generate(threads, n):
    """(prefill + decode seconds from the stats line, CPU seconds, tokens)."""
    args = [EXE, "generate", "-p", PROMPT, "-n", str(n), "--seed", "1", "-t", str(threads), "--no-echo"]
    if MODEL:
        args += ["-m", MODEL]
    err = subprocess.run(args, capture_output=True).stderr
    m = re.search(r"prompt: (\d+) tokens?, ([0-9.]+) tok/s \| generated: (\d+) tokens?, ([0-9.]+) tok/s", err.decode())
    n_p, r_p, n_g, r_g = int(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4))
    wall = (n_p / r_p if r_p > 0 else 0) + (n_g / r_g if r_g > 0 else 0)
    return wall, n_g


def generate_cpu(threads, n):
    """CPU seconds (user + system) of one `tinygpt generate -n n`."""
    args = [EXE, "generate", "-p", PROMPT, "-n", str(n), "--seed", "1", "-t", str(threads), "--no-echo"]
    if MODEL:
        args += ["-m", MODEL]
    pid = os.posix_spawn(args[0], args, os.environ, file_actions=[
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0), (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
    _, _, ru = os.wait4(pid, 0)
    return ru.ru_utime + ru.ru_stime


def cpu_ns(pid):
    """{thread id: ns on the CPU} of every live thread of pid (schedstat)."""
    out = {}
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                out[t] = int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return out


def cpu_delta_s(before, after):
    """CPU seconds between two cpu_ns snapshots, per thread (a thread that
    ended in between, e.g. the last request's connection, counts in neither; a new one from 0)."""
    return sum(ns - before.get(t, 0) for t, ns in after.items()) * 1e-9


def stream(port, seed, n, out, pid=None, snaps=None):
    """Appends (tokens, t_sent, t_first_event, t_last_event, server CPU s);
    with snaps (and pid), also the server's cpu_ns at the last event."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.connect()
    body = dict(prompt=PROMPT, max_tokens=n, seed=seed, stream=True)
    if MODEL:
        body["model"] = os.path.basename(MODEL.rstrip("/")).removesuffix(".gguf")
    cpu0 = cpu_ns(pid) if pid else {}
    t_sent = time.perf_counter()
    c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    k, t_first, t_last = 0, None, None
    while True:
        line = r.fp.readline()
        if not line:
            break
        if line.startswith(b"data: {"):
            if b'"finish_reason":null' in line:
                k += 1
                t_last = time.perf_counter()
                if t_first is None:
                    t_first = t_last
        elif line.startswith(b"data: [DONE]"):
            t_last = time.perf_counter()
            break
    cpu1 = cpu_ns(pid) if pid else {}  # the connection's thread is still there
    if snaps is not None:
        snaps.append(cpu1)
    c.close()
    out.append((k, t_sent, t_first, t_last, cpu_delta_s(cpu0, cpu1)))


def one(port, n=N, pid=None):
    out = []
    stream(port, 1, n, out, pid)
    return out[0]


def two_streams(port, pid=None, detail=None):
    """Aggregate tokens/s of two streams at once. With pid and a detail list,
    also appends (server CPU s over both streams, this client's CPU s, the
    requests' start skew s, their last events' skew s): where the window goes
    (a connection's thread ends with it, so each stream snapshots every
    thread at its last event and the latest snapshot of each thread counts)."""
    out, snaps = [], []
    before = cpu_ns(pid) if pid else {}
    c0 = time.process_time()
    ths = [threading.Thread(target=stream, args=(port, s, N, out, pid, snaps if pid else None)) for s in (1, 2)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    c1 = time.process_time()
    if pid and detail is not None:
        last = {}
        for sn in snaps:
            for t, ns in sn.items():
                last[t] = max(ns, last.get(t, 0))
        detail.append((cpu_delta_s(before, last), c1 - c0, abs(out[0][1] - out[1][1]), abs(out[0][3] - out[1][3])))
    return sum(o[0] for o in out) / (max(o[3] for o in out) - min(o[1] for o in out))


def callgrind_totals(args, tmp, tag, request_n=None):
    """Instructions of one run of args under callgrind; with request_n, args
    is a server: one streamed request of request_n tokens, then SIGINT."""
    out = os.path.join(tmp, "cg." + tag)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + args
    env = dict(os.environ, TINYGPT_ISA="avx2")
    if request_n is None:
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    else:
        p = subprocess.Popen(cmd + ["--port", "0"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = p.stdout.readline()
        port = int(line.strip().rsplit(":", 1)[1])
        out_l = []
        stream(port, 1, request_n, out_l)
        assert out_l[0][0] == request_n, out_l
        p.send_signal(2)
        p.wait()
    with open(out) as f:
        return int(re.search(r"^totals: (\d+)", f.read(), re.M).group(1))


def callgrind_main():
    import tempfile
    extra = ["-m", MODEL] if MODEL else []
    gen = [EXE, "generate", "-p", PROMPT, "--seed", "1", "--no-echo"] + extra
    with tempfile.TemporaryDirectory() as tmp:
        g = {n: callgrind_totals(gen + ["-n", str(n)], tmp, "gen%d" % n) for n in (N, 1)}
        sv = {n: callgrind_totals([EXE, "serve"] + extra, tmp, "srv%d" % n, n) for n in (N, 1)}
    gt, st = (g[N] - g[1]) / (N - 1), (sv[N] - sv[1]) / (N - 1)
    print("callgrind (TINYGPT_ISA=avx2), model %s, %d tokens less 1: generate %.0f instructions/token, "
          "one streamed completion %.0f: the server's token costs %.1f%% of generate's"
          % (MODEL or "shakespeare-4h (shipped)", N, gt, st, 100 * st / gt))


def main():
    if CALLGRIND:
        return callgrind_main()
    extra = ["-m", MODEL] if MODEL else []
    s1 = Server(EXE, extra + ["-t", "1"])
    s12 = Server(EXE, extra + ["--parallel", "1", "-t", "2"])
    s22 = Server(EXE, extra + ["--parallel", "2", "-t", "2"])
    R = {k: [] for k in ("gen_wall", "srv_wall", "gen_cpu", "srv_cpu", "srv_window", "gen2_wall", "srv2_wall",
                         "par", "one12", "one22", "gen_rate", "load", "two_detail", "one22_cpu")}
    try:
        one(s1.port), one(s12.port), one(s22.port)  # warm: first requests page the weights in
        for _ in range(ROUNDS):  # interleaved
            R["load"].append(os.getloadavg()[0])
            w, n_cli = generate(1, N)
            R["gen_wall"].append(w)
            R["gen_rate"].append(n_cli / w)
            k, t0, tf, tl, _ = one(s1.port)
            R["srv_wall"].append(tl - t0)
            R["srv_window"].append((k - 1) / (tl - tf) if tl > tf else float("nan"))
            R["gen_cpu"].append((generate_cpu(1, N) - generate_cpu(1, 1)) / (N - 1))
            c_n = one(s1.port, N, s1.proc.pid)[4]
            c_1 = one(s1.port, 1, s1.proc.pid)[4]
            R["srv_cpu"].append((c_n - c_1) / (N - 1))
            R["gen2_wall"].append(generate(2, N)[0])
            k, t0, tf, tl, _ = one(s12.port)
            R["srv2_wall"].append(tl - t0)
            R["one12"].append(k / (tl - t0))
            R["par"].append(two_streams(s22.port))
            k, t0, tf, tl, _ = one(s22.port)
            R["one22"].append(k / (tl - t0))
            # where the two streams' time goes (CPU time: meaningful under load)
            two_streams(s22.port, s22.proc.pid, R["two_detail"])
            R["one22_cpu"].append(one(s22.port, N, s22.proc.pid)[4])
    finally:
        for s in (s1, s12, s22):
            s.proc.terminate()
            s.proc.wait()
    med = statistics.median
    cpu = "unknown CPU"
    try:
        cpu = re.search(r"Model name:\s*(.*)", subprocess.run(["lscpu"], capture_output=True, text=True).stdout).group(1)
    except (AttributeError, FileNotFoundError):
        pass
    print("CPU: %s, %d online; model %s; %d tokens, %d interleaved rounds, medians; load average %.1f-%.1f"
          % (cpu, os.cpu_count(), MODEL or "shakespeare-4h (shipped)", n_cli, ROUNDS, min(R["load"]), max(R["load"])))
    gw, sw = med(R["gen_wall"]), med(R["srv_wall"])
    print("1a. wall, 1 thread: generate %.2f ms (prefill + decode, %.0f tok/s), one streamed completion %.2f ms "
          "(request to last event): %.1f%% of generate's rate (target >= 90%%)" % (1e3 * gw, N / gw, 1e3 * sw, 100 * gw / sw))
    print("    per round: %s" % ", ".join("%.0f%%" % (100 * g / s) for g, s in zip(R["gen_wall"], R["srv_wall"])))
    gc, sc = med(R["gen_cpu"]), med(R["srv_cpu"])
    print("1b. CPU per token, 1 thread: generate %.1f us, server %.1f us (every thread): %.1f%%" % (1e6 * gc, 1e6 * sc, 100 * gc / sc))
    print("    per round: %s" % ", ".join("%.0f%%" % (100 * g / s) for g, s in zip(R["gen_cpu"], R["srv_cpu"])))
    print("1c. the client's first-to-last-event rate (biased high: batched events): %.0f tok/s = %.1f%% of generate's %.0f"
          % (med(R["srv_window"]), 100 * med(R["srv_window"]) / med(R["gen_rate"]), med(R["gen_rate"])))
    g2, s2 = med(R["gen2_wall"]), med(R["srv2_wall"])
    print("    wall, 2 threads (--parallel 1 -t 2): generate %.2f ms, one stream %.2f ms: %.1f%%" % (1e3 * g2, 1e3 * s2, 100 * g2 / s2))
    print("2. --parallel 2 -t 2, two streams: %.0f tok/s aggregate (first request to last event) = %.2fx one stream on "
          "--parallel 1 -t 2 (%.0f tok/s; target >= 1.6x), %.2fx one stream on the same server"
          % (med(R["par"]), med(R["par"]) / med(R["one12"]), med(R["one12"]), med(R["par"]) / med(R["one22"])))
    d = R["two_detail"]
    srv2, cli2 = med(x[0] for x in d), med(x[1] for x in d)
    print("2b. where the two streams' time goes (CPU time, every thread): the server %.2f ms for both (%.2f ms for one "
          "stream alone: %.2fx), this client %.2f ms; the requests start %.2f ms apart and end %.2f ms apart; "
          "if one stream's window were its server CPU and the two streams' were server + client CPU spread over %d "
          "cores, two streams would give %.2fx one (an estimate of what 2. can reach that the load moves little)"
          % (1e3 * srv2, 1e3 * med(R["one22_cpu"]), srv2 / med(R["one22_cpu"]), 1e3 * cli2, 1e3 * med(x[2] for x in d),
             1e3 * med(x[3] for x in d), min(2, os.cpu_count()),
             2 * med(R["one22_cpu"]) / ((srv2 + cli2) / min(2, os.cpu_count()))))


if __name__ == "__main__":
    main()
