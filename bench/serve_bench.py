#!/usr/bin/env python3
"""serve_bench.py TINYGPT [MODEL] — `tinygpt serve`'s decode rate, as same-run
ratios (interleaved runs, medians):

 1. one streamed completion's decode rate (tokens after the first over the
    time from the first event to the last, as the client sees them) vs
    `tinygpt generate`'s own decode rate on the same model, prompt, seed and
    settings (target >= 90%);
 2. --parallel 2 -t 2: two streams at once, aggregate tokens/s, vs one
    stream on a --parallel 1 -t 2 server (target >= 1.6x), and vs one stream
    on the same --parallel 2 server (its slot has one thread).

Loopback only; a few seconds per round."""
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
MODEL = sys.argv[2] if len(sys.argv) > 2 else None
ROUNDS = int(os.environ.get("SERVE_BENCH_ROUNDS", "5"))
N = 240       # tokens: within the shipped models' 256 context, so no crop
PROMPT = "ROMEO:"


def cli_rate(threads):
    args = [EXE, "generate", "-p", PROMPT, "-n", str(N), "--seed", "1", "-t", str(threads), "--no-echo"]
    if MODEL:
        args += ["-m", MODEL]
    r = subprocess.run(args, capture_output=True, text=True)
    m = re.search(r"generated: (\d+) tokens, ([0-9.]+) tok/s", r.stderr)
    return float(m.group(2)), int(m.group(1))


def stream(port, seed, out):
    """(tokens, seconds from the first token event to the last)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    body = dict(prompt=PROMPT, max_tokens=N, seed=seed, stream=True)
    if MODEL:
        body["model"] = os.path.basename(MODEL).removesuffix(".gguf")
    c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    n, t_first, t_last = 0, None, None
    while True:
        line = r.fp.readline()
        if not line:
            break
        if line.startswith(b"data: {"):
            if b'"finish_reason":null' in line:
                n += 1
                t_last = time.perf_counter()
                if t_first is None:
                    t_first = t_last
        elif line.startswith(b"data: [DONE]"):
            break
    c.close()
    out.append((n, t_first, t_last))


def one_stream(port):
    out = []
    stream(port, 1, out)
    n, t0, t1 = out[0]
    return (n - 1) / (t1 - t0), n


def two_streams(port):
    out = []
    ths = [threading.Thread(target=stream, args=(port, s, out)) for s in (1, 2)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    t0 = min(o[1] for o in out)
    t1 = max(o[2] for o in out)
    return (sum(o[0] for o in out) - 2) / (t1 - t0)


def main():
    extra = ["-m", MODEL] if MODEL else []
    s1 = Server(EXE, extra + ["-t", "1"])
    s12 = Server(EXE, extra + ["--parallel", "1", "-t", "2"])
    s22 = Server(EXE, extra + ["--parallel", "2", "-t", "2"])
    cli, srv, cli2, one2, par, one_par = [], [], [], [], [], []
    try:
        for _ in range(ROUNDS):  # interleaved
            r, n_cli = cli_rate(1)
            cli.append(r)
            r, n_srv = one_stream(s1.port)
            srv.append(r)
            cli2.append(cli_rate(2)[0])
            one2.append(one_stream(s12.port)[0])
            par.append(two_streams(s22.port))
            one_par.append(one_stream(s22.port)[0])
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
    print("CPU: %s, %d online; model %s; %d tokens (%d streamed), %d interleaved rounds, medians"
          % (cpu, os.cpu_count(), MODEL or "shakespeare-4h (shipped)", n_cli, n_srv, ROUNDS))
    print("1. decode, 1 thread: generate %.0f tok/s, one streamed completion %.0f tok/s: %.1f%% (target >= 90%%)"
          % (med(cli), med(srv), 100 * med(srv) / med(cli)))
    print("   per round: %s" % ", ".join("%.0f%%" % (100 * s / c) for s, c in zip(srv, cli)))
    print("   decode, 2 threads: generate %.0f tok/s, one stream (--parallel 1 -t 2) %.0f tok/s: %.1f%%"
          % (med(cli2), med(one2), 100 * med(one2) / med(cli2)))
    print("2. --parallel 2 -t 2, two streams: %.0f tok/s aggregate = %.2fx one stream on --parallel 1 -t 2 (target >= 1.6x),"
          " %.2fx one stream on the same server" % (med(par), med(par) / med(one2), med(par) / med(one_par)))


if __name__ == "__main__":
    main()
