#!/usr/bin/python3
"""opcount_oracle.py — model/opcount.c against an independent count.

Instead of opcount's closed forms, this walks the forward pass of a GPT-2
the way the code runs it — every output element of every matmul, every
(head, query, key) pair of attention, every element of the elementwise ops —
adding the flops each one costs, and collects the set of distinct weight,
cache and activation elements each op reads. The conventions (what counts
as a flop, what counts as read) are the ones documented in model/opcount.h;
the arithmetic is done from scratch here.

usage: opcount_oracle.py OPCOUNT_DUMP
"""
import json
import subprocess
import sys

F32 = 4


def count(L, H, E, Fw, V, T, pos, R):
    HS = E // H
    ops = {}

    def add(name, flops=0, w=0, kv=0, act=0, times=1):
        d = ops.setdefault(name, {"flops": 0, "weight_bytes": 0, "kv_bytes": 0, "act_bytes": 0})
        d["flops"] += flops * times
        d["weight_bytes"] += w * F32 * times
        d["kv_bytes"] += kv * F32 * times
        d["act_bytes"] += act * F32 * times

    def matmul(rows, n_in, n_out, bias):
        flops = 0
        for _ in range(rows):
            for _ in range(n_out):
                flops += 2 * n_in + (1 if bias else 0)  # n_in multiply-adds (+ bias)
        weights = n_in * n_out + (n_out if bias else 0)
        return flops, weights, rows * n_in

    def layernorm(rows, n):
        flops = 0
        for _ in range(rows):
            flops += n          # mean: sum
            flops += 3 * n      # variance: subtract, square, sum
            flops += 4 * n      # (x - mean) * rstd * g + b
        return flops, 2 * n, rows * n

    # embed: one add per element; reads T rows of wte and of wpe
    add("embed", flops=T * E, w=2 * T * E)
    for _ in range(L):
        f, w, a = layernorm(T, E)
        add("ln_1", f, w, 0, a)
        f, w, a = matmul(T, E, 3 * E, True)
        add("qkv", f, w, 0, a)
        keys = set()
        sf = mf = smf = 0
        p_elems = 0
        for h in range(H):
            for t in range(T):
                n = pos + t + 1
                for j in range(n):
                    keys.add(j)
                    sf += 2 * HS + 1        # q·k over HS, times the scale
                    smf += 5                # max, subtract, exp, sum, normalise
                    mf += 2 * HS            # p_j * v_j accumulated over HS
                    p_elems += 1
        assert keys == set(range(pos + T)) or T == 0
        add("attn_scores", sf, 0, len(keys) * E, T * E)
        add("attn_softmax", smf, 0, 0, p_elems)
        add("attn_mix", mf, 0, len(keys) * E, p_elems)
        f, w, a = matmul(T, E, E, True)
        add("attn_proj", f + T * E, w, 0, a + T * E)   # + residual add, reads the residual
        f, w, a = layernorm(T, E)
        add("ln_2", f, w, 0, a)
        f, w, a = matmul(T, E, Fw, True)
        add("mlp_up", f, w, 0, a)
        # gelu: x^3 (2), *0.044715, +x, *sqrt(2/pi), tanh, +1, *x, *0.5
        add("gelu", 9 * T * Fw, 0, 0, T * Fw)
        f, w, a = matmul(T, Fw, E, True)
        add("mlp_down", f + T * E, w, 0, a + T * E)
    f, w, a = layernorm(R, E)
    add("ln_f", f, w, 0, a)
    f, w, a = matmul(R, E, V, False)
    add("lm_head", f, w, 0, a)
    add("sample", V, 0, 0, V)
    fwd = {k: sum(ops[o][k] for o in ops if o != "sample") for k in ops["embed"]}
    ops["forward"] = fwd
    return ops


CASES = [
    # L, H, E, F, V, T, pos, R
    (1, 1, 4, 16, 10, 1, 0, 1),
    (2, 2, 8, 32, 17, 3, 2, 1),
    (3, 4, 16, 40, 33, 5, 0, 5),
    (2, 3, 12, 48, 50, 1, 9, 1),
    (1, 2, 8, 8, 7, 7, 4, 7),
]


def main():
    dump = sys.argv[1]
    failures = 0
    for case in CASES:
        got = json.loads(subprocess.run([dump] + [str(x) for x in case], check=True,
                                        capture_output=True, text=True).stdout)
        want = count(*case)
        assert set(got) == set(want), (sorted(got), sorted(want))
        for op, w in want.items():
            for k, v in w.items():
                if got[op][k] != v:  # integers well below 2^53: exact
                    print(f"FAIL {case} {op}.{k}: opcount {got[op][k]} oracle {v}")
                    failures += 1
    # GPT-2 small, one decode step at position 1023, closed form of the
    # usual estimate: 2 flops per weight of the matmuls + attention's 4·P·E.
    L, H, E, V, P = 12, 12, 768, 50257, 1024
    got = json.loads(subprocess.run([dump, "12", "12", "768", "3072", "50257", "1", "1023", "1"],
                                    check=True, capture_output=True, text=True).stdout)
    matmul_weights = L * (3 * E * E + E * E + 2 * 4 * E * E) + V * E
    approx = 2 * matmul_weights + L * 4 * P * E
    rel = abs(got["forward"]["flops"] - approx) / approx
    if rel > 0.01:
        print(f"FAIL GPT-2 small decode: {got['forward']['flops']} vs ~{approx} ({rel:.3%})")
        failures += 1
    print(f"{len(CASES)} shapes, {failures} mismatches; GPT-2 small decode step "
          f"{got['forward']['flops'] / 1e9:.3f} GFLOP (estimate {approx / 1e9:.3f})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
