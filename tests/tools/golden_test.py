#!/usr/bin/python3
"""golden_test.py — the `--json` outputs of compare, attention, profile
(also --ctx-sweep) and bench on the shipped models, against golden files
kept from before the analysis moved into the library (issue #13).

Every deterministic field must be equal exactly (the numbers as printed:
losses, ablations, agreement, KL, attention weights, head metrics, op
counts, shapes, calls). Timing fields are left out by name (TIMING below),
never compared with a tolerance. The runs use --isa scalar and one thread
(bench: also two) so that the floating-point order does not depend on the
CPU's vector units.

usage: golden_test.py TINYGPT SOURCE_ROOT [--regen]
  --regen   rewrite tests/tools/golden/*.json from the current binary
            (only when a change of the numbers is intended; say why in the
            commit)
"""
import json
import os
import subprocess
import sys

TEXT = "tests/tools/golden/text.txt"
S1, S4 = "weights/shakespeare-1h.gguf", "weights/shakespeare-4h.gguf"
M1, M4 = "weights/marked-tuple-1h.gguf", "weights/marked-tuple-4h.gguf"
SCALAR = ["--isa", "scalar"]

# name -> arguments (run from the source root, so paths in the JSON are
# the same relative paths everywhere)
CASES = {
    "compare_shakespeare": ["compare", S1, S4, "-f", TEXT, "--json", "--head-tokens", "256"],
    "compare_shakespeare_ctx64": ["compare", S4, S1, "-f", TEXT, "--json", "--ctx", "64",
                                  "--head-tokens", "100", "--seed", "7"],
    "compare_task": ["compare", M1, M4, "-n", "100", "--json"],
    "attention_shakespeare": ["attention", "-m", S4, "--json"],
    "attention_shakespeare_1h": ["attention", "-m", S1, "-p", "ROMEO:\nWhat light", "--json"],
    "attention_task": ["attention", "-m", M4, "--json"],
    "profile": ["profile", "-m", S4, "--json", "--no-roofline", "--per-layer", "--per-head",
                "--prompt-tokens", "32", "-n", "8", "--seed", "3"],
    "profile_prompt": ["profile", "-m", S1, "--json", "--no-roofline", "-p", "KING:", "-n", "4",
                       "-r", "2"],
    "profile_ctx_sweep": ["profile", "-m", S4, "--json", "--no-roofline", "--ctx-sweep", "8,64,200",
                          "--sweep-steps", "2"],
    "bench": ["bench", "-m", S4, "--json", "--no-roofline", "-p", "16,40", "-n", "8", "-r", "2",
              "-t", "1,2"],
}

# Fields that are measured times (or rates, shares and fractions of them),
# by the name the commands print them under.
TIMING = {
    # compare
    "speed",
    # profile
    "total_ms", "pct_phase", "us_per_call", "gflops", "gbs", "roofline_pct", "wall_ms", "op_ms",
    "outside_ms", "barrier_wait_ms", "caller_cpu_ms", "thread_busy_ms", "roofline",
    "step_us", "attn_us", "attn_pct", "us_per_head", "scores_us", "softmax_us", "mix_us",
    "attn_gflops", "attn_roofline_pct",
    # bench
    "tok_s", "tok_s_sd", "roofline_frac", "peak_frac", "dram_frac", "ms", "machine",
}


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in TIMING}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def run(exe, args):
    cmd = [exe] + args[:1] + SCALAR + args[1:]
    p = subprocess.run(cmd, capture_output=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode,
                                                p.stderr.decode(errors="replace").strip()))
    return strip(json.loads(p.stdout))


def diff(a, b, path="$"):
    """The first place where a and b differ, or None."""
    if type(a) is not type(b):
        return "%s: %r != %r" % (path, a, b)
    if isinstance(a, dict):
        if list(a) != list(b):
            return "%s: keys %s != %s" % (path, list(a), list(b))
        for k in a:
            d = diff(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: length %d != %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: got %r, golden %r" % (path, a, b)


def count_leaves(v):
    if isinstance(v, dict):
        return sum(count_leaves(x) for x in v.values())
    if isinstance(v, list):
        return sum(count_leaves(x) for x in v)
    return 1


def main():
    exe, root = os.path.abspath(sys.argv[1]), sys.argv[2]
    regen = "--regen" in sys.argv[3:]
    os.chdir(root)
    gdir = os.path.join("tests", "tools", "golden")
    failures = []
    for name, args in CASES.items():
        path = os.path.join(gdir, name + ".json")
        try:
            got = run(exe, args)
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
            failures.append("%s: %s" % (name, e))
            continue
        if regen:
            with open(path, "w") as f:
                json.dump(got, f, indent=1)
                f.write("\n")
            print("wrote %s (%d fields)" % (path, count_leaves(got)))
            continue
        with open(path) as f:
            want = json.load(f)
        d = diff(got, want)
        if d:
            failures.append("%s: %s" % (name, d))
        else:
            print("ok %s (%d fields equal)" % (name, count_leaves(want)))
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
