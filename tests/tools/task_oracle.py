#!/usr/bin/python3
"""task_oracle.py — the synthetic tasks (model/task.c) against an independent
implementation of each task's rule.

For every task and several option sets, reads `tinygpt task NAME --sample N
--json` and, for each sequence, recomputes every answer from the tokens
before it alone (so nothing after a position can have leaked into its
answer), checks that the tuple tasks' answer tokens never occur among the
inputs, that the layout (marks, offsets, keys, repeated block) is what the
task says, and that vocabulary size, length and chance level follow from the
options. Also: the same seed gives the same sequences, another seed others;
bad options are usage errors (exit 2, one line).

usage: task_oracle.py TINYGPT
"""
import json
import subprocess
import sys

EXE = sys.argv[1]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def run(args):
    return subprocess.run([EXE] + args, capture_output=True, text=True)


def sample(name, opts, n, seed=1):
    args = ["task", name, "--sample", str(n), "--seed", str(seed), "--json"]
    if opts:
        args += ["--task-opts", opts]
    r = run(args)
    assert r.returncode == 0, f"{args}: {r.stderr}"
    return json.loads(r.stdout)


def parse_opts(s):
    out = {}
    for kv in s.split(","):
        k, v = kv.split("=")
        out[k] = [int(x) for x in v.split(":")] if k == "offsets" else int(v)
    return out


def tuple_task(name, o, j, vocab):
    """marked-tuple, pair-lookup, offsets: digits, then '?', then one answer."""
    D, L = o["digits"], o["len"]
    offs = o.get("offsets")
    k = len(offs) if offs else o["k"]
    n_tuple = D ** k
    check(j["n"] == L + 2, f"{name}: n {j['n']} != len + 2")
    check(abs(j["chance"] - 1 / n_tuple) < 1e-9, f"{name}: chance {j['chance']}")
    n_marks = {"marked-tuple": D, "pair-lookup": k * D, "offsets": 0}[name]
    check(j["vocab_size"] == D + n_marks + 1 + n_tuple, f"{name}: vocab size {j['vocab_size']}")
    # the names tell what each id is (checked against the layout below)
    for s in j["samples"]:
        seq, ans = s["seq"], s["answer"]
        check(ans == [L + 1], f"{name}: answer positions {ans}")
        check(vocab[seq[L]] == "?", f"{name}: no '?' before the answer")
        prefix = [vocab[t] for t in seq[: L + 1]]  # what the model sees before the answer
        check(all(not p.startswith("=") for p in prefix), f"{name}: an answer token among the inputs")
        # the rule, from the prefix only
        if name == "marked-tuple":
            marks = [(i, p) for i, p in enumerate(prefix[:L]) if p.startswith("*")]
            check(len(marks) == k, f"{name}: {len(marks)} marks, expected {k}")
            pos = [i for i, _ in marks]
            check(all(b - a >= o["spacing"] for a, b in zip(pos, pos[1:])), f"{name}: marks closer than spacing")
            digits = [int(p[1:]) for _, p in marks]
        elif name == "pair-lookup":
            by_mark = {}
            for i, p in enumerate(prefix[:L]):
                if p[0].isalpha():
                    check(p[0] not in by_mark, f"{name}: mark {p[0]} twice")
                    by_mark[p[0]] = int(p[1:])
            check(sorted(by_mark) == [chr(ord("a") + m) for m in range(k)], f"{name}: marks {sorted(by_mark)}")
            digits = [by_mark[chr(ord("a") + m)] for m in range(k)]
        else:
            check(all(p.isdigit() for p in prefix[:L]), f"{name}: a non-digit input")
            digits = [int(prefix[L - d]) for d in offs]
        want = "=" + "".join(str(d) for d in digits)
        check(vocab[seq[L + 1]] == want, f"{name}: answer {vocab[seq[L + 1]]}, the rule gives {want}")
        roles = s["role"]
        if name == "marked-tuple":
            check([r for r in roles if r] == list(range(1, k + 1)), f"{name}: roles {roles}")
        check(sorted(r for r in roles if r) == list(range(1, k + 1)), f"{name}: roles {roles}")
        for i, r in enumerate(roles):
            if r and name == "offsets":
                check(i == L - offs[r - 1], f"{name}: role {r} at {i}")
            if r and name == "pair-lookup":
                check(prefix[i][0] == chr(ord("a") + r - 1), f"{name}: role {r} on {prefix[i]}")


def assoc(o, j, vocab):
    P, Q = o["pairs"], o["queries"]
    check(j["n"] == 2 * P + 2 * Q, "assoc-recall: n")
    check(j["vocab_size"] == o["keys"] + o["values"], "assoc-recall: vocab size")
    check(abs(j["chance"] - 1 / o["values"]) < 1e-9, "assoc-recall: chance")
    for s in j["samples"]:
        seq, ans = s["seq"], s["answer"]
        names = [vocab[t] for t in seq]
        check(ans == [2 * P + 2 * i + 1 for i in range(Q)], f"assoc-recall: answers at {ans}")
        keys = names[0 : 2 * P : 2]
        check(len(set(keys)) == P and all(x[0] == "k" for x in keys), "assoc-recall: keys not distinct")
        check(all(x[0] == "v" for x in names[1 : 2 * P : 2]), "assoc-recall: values")
        asked = names[2 * P :: 2]
        check(len(set(asked)) == Q, "assoc-recall: a key asked twice")
        for a in ans:
            prefix = names[:a]
            q = prefix[-1]
            # the value that followed the key's first occurrence
            want = prefix[prefix.index(q) + 1]
            check(names[a] == want, f"assoc-recall: answer {names[a]}, the rule gives {want}")
            check(s["src"][a] == prefix.index(q) + 1, "assoc-recall: src")


def induction(o, j, vocab):
    L, J = o["len"], o["jitter"]
    n = 2 * L
    check(j["n"] == n and j["vocab_size"] == o["vocab"], "induction: n / vocab")
    blocks = set()
    for s in j["samples"]:
        seq, ans = s["seq"], s["answer"]
        # the block length: the last token's earlier occurrence is b back
        first = [i for i in range(n - 1) if seq[i] == seq[-1]]
        check(len(first) == 1, "induction: the last token occurs more than once earlier")
        b = n - 1 - first[0]
        blocks.add(b)
        f = n - 2 * b
        check(L - J <= b <= L and f == 2 * (L - b), f"induction: block {b}, filler {f}")
        check(seq[f : f + b] == seq[f + b :], "induction: the block is not repeated")
        check(len(set(seq[: f + b])) == f + b, "induction: filler and block tokens not distinct")
        check(ans == list(range(n - (L - J - 1), n)), f"induction: answers at {ans}")
        for a in ans:
            prefix = seq[:a]
            cur = prefix[-1]
            want = prefix[prefix.index(cur) + 1]  # what followed the earlier occurrence
            check(prefix.index(cur) < a - 1, "induction: an answer without an earlier occurrence")
            check(seq[a] == want, "induction: answer differs from the rule")
            check(s["src"][a] == prefix.index(cur) + 1, "induction: src")
    check(len(blocks) == J + 1 or len(j["samples"]) < 50, f"induction: block lengths {sorted(blocks)}")


CASES = [
    ("marked-tuple", ""),
    ("marked-tuple", "k=3,digits=5,len=9,spacing=3"),
    ("marked-tuple", "k=1,digits=2,len=1"),
    ("pair-lookup", ""),
    ("pair-lookup", "k=4,digits=3,len=10"),
    ("offsets", ""),
    ("offsets", "len=5,digits=7,offsets=5:1:3"),
    ("assoc-recall", ""),
    ("assoc-recall", "pairs=5,queries=5,keys=5,values=3"),
    ("induction", ""),
    ("induction", "len=20,jitter=0,vocab=20"),
    ("induction", "len=8,jitter=6,vocab=14"),
]

for name, opts in CASES:
    j = sample(name, opts, 200)
    o = parse_opts(j["opts"])
    vocab = j["vocab"]
    check(len(vocab) == j["vocab_size"] and len(set(vocab)) == len(vocab), f"{name}: token names not distinct")
    check(all(len(s["seq"]) == j["n"] and all(0 <= t < j["vocab_size"] for t in s["seq"]) for s in j["samples"]),
          f"{name}: ids out of range")
    check(all(len(s["answer"]) == j["answers_per_seq"] for s in j["samples"]), f"{name}: answers per sequence")
    if name == "assoc-recall":
        assoc(o, j, vocab)
    elif name == "induction":
        induction(o, j, vocab)
    else:
        tuple_task(name, o, j, vocab)
    # the recorded options string gives the same task
    j2 = sample(name, j["opts"], 200)
    check(j2 == j, f"{name}: the canonical options '{j['opts']}' give other sequences")
    # determinism, and another seed gives other sequences
    check(sample(name, opts, 50, seed=7) == sample(name, opts, 50, seed=7), f"{name}: not deterministic")
    check(sample(name, opts, 50, seed=7)["samples"] != sample(name, opts, 50, seed=8)["samples"],
          f"{name}: seeds 7 and 8 give the same sequences")
    print(f"{name} ({j['opts']}): 200 sequences checked")

# the marks of marked-tuple are uniform over positions (roughly): every position gets marked
pos = [0] * 18
for s in sample("marked-tuple", "", 2000)["samples"]:
    for i, r in enumerate(s["role"]):
        pos[i] += r > 0
check(min(pos[:16]) > 0.5 * 2000 * 4 / 16, f"marked-tuple: marks far from uniform over positions {pos}")

BAD = [
    ["task", "no-such-task"],
    ["task", "marked-tuple", "--task-opts", "k=0"],
    ["task", "marked-tuple", "--task-opts", "k=4,spacing=6"],
    ["task", "marked-tuple", "--task-opts", "digits=10,k=4"],
    ["task", "marked-tuple", "--task-opts", "bogus=1"],
    ["task", "marked-tuple", "--task-opts", "k"],
    ["task", "marked-tuple", "--task-opts", "k=4,"],
    ["task", "marked-tuple", "--task-opts", "k=4x"],
    ["task", "offsets", "--task-opts", "offsets=0:3"],
    ["task", "offsets", "--task-opts", "offsets=3:3"],
    ["task", "offsets", "--task-opts", "offsets=3:"],
    ["task", "assoc-recall", "--task-opts", "pairs=9,keys=8"],
    ["task", "induction", "--task-opts", "len=40,vocab=32"],
    ["task", "induction", "--task-opts", "len=8,jitter=7"],
    ["train", "--task", "marked-tuple", "--task-opts", "k=7", "-o", "/tmp/never.gguf"],
    ["train", "--task", "nope", "-o", "/tmp/never.gguf"],
    ["eval", "--task", "marked-tuple", "--task-opts", "len=0"],
]
for args in BAD:
    r = run(args)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(lines) == 1 and lines[0].startswith("tinygpt "),
          f"{args}: exit {r.returncode}, stderr {r.stderr!r} (a one-line usage error expected)")
    check(r.stdout == "", f"{args}: printed {r.stdout!r}")

if failures:
    for f in failures[:30]:
        print("FAIL:", f)
    print(f"{len(failures)} failures")
    sys.exit(1)
print("all task checks passed")
