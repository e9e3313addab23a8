#!/usr/bin/python3
"""binding_test.py — the Python package (python/tinygpt) against independent
oracles, run with Debian's /usr/bin/python3 (NumPy, PyTorch):
  - ctypes' struct layouts against the C compiler's (offsetof of every field);
  - logits, attention and ablation (head masks) against the PyTorch reference
    (tests/model/gpt_oracle.py) on a random GPT-2 written as GGUF;
  - on the shipped model: attention against `tinygpt attention --json`,
    log-probabilities and greedy tokens against `tinygpt generate --json
    --top-logprobs`, sampled text (seeds, stop strings) against `tinygpt
    generate --no-echo`;
  - errors raise tinygpt.Error with the library's message;
  - set_interrupt stops eval, a generation and an analysis (INTERRUPTED);
  - 1,000 model opens leave the RSS (/proc/self/status) where it was;
  - the package from the build tree (PYTHONPATH=build/python) and after
    `meson install` into a DESTDIR runs the issue's done-means command, with
    no LD_LIBRARY_PATH and no build path inside the installed files.

usage: binding_test.py BUILD_ROOT SOURCE_ROOT TINYGPT SANITIZE
"""
import ctypes
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

BUILD, SRC, TG, SANITIZE = sys.argv[1:5]
# Under the sanitizers the library carries ASan's runtime, which must come
# first in the process (else the C++ of torch, loaded before it, frees
# memory ASan never allocated): run again with it preloaded. Python itself
# is not instrumented and leaks by design at exit, so leak reports are off
# in this process (the C tests check the library's leaks).
if SANITIZE != "none" and "TG_PY_ASAN" not in os.environ:
    cc = shutil.which("cc") or "gcc"
    rt = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                        text=True).stdout.strip()
    env = dict(os.environ, TG_PY_ASAN="1", LD_PRELOAD=rt,
               ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    os.execve(sys.executable, [sys.executable] + sys.argv, env)
sys.path.insert(0, os.path.join(BUILD, "python"))
sys.path.insert(0, os.path.join(SRC, "tests", "model"))
import tinygpt  # noqa: E402
from tinygpt import _lib  # noqa: E402
import cli_test as ct  # noqa: E402
import gpt_oracle as go  # noqa: E402

SHIPPED = os.path.join(SRC, "weights", "shakespeare-4h.gguf")
DONE = ("import tinygpt; m = tinygpt.Model('weights/shakespeare-4h.gguf'); "
        "print(m.attention(m.encode('ROMEO:')).shape)")

checks, failures = 0, []


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)
    return ok


def raises(fn, needle, status=None):
    try:
        fn()
    except tinygpt.Error as e:
        return needle in str(e) and (status is None or e.status == status), str(e)
    except Exception as e:  # the wrong kind
        return False, "%s: %s" % (type(e).__name__, e)
    return False, "no exception"


def env_clean(**extra):
    e = dict(os.environ)
    for k in ("LD_LIBRARY_PATH", "TINYGPT_LIB", "TINYGPT_ISA", "PYTHONPATH"):
        e.pop(k, None)
    e.update(extra)
    return e


def cli(*args):
    r = subprocess.run([TG] + [str(a) for a in args], capture_output=True, timeout=120,
                       env=env_clean(), stdin=subprocess.DEVNULL)
    check(r.returncode == 0, "tinygpt %s: %s" % (args, r.stderr[-300:]))
    return r.stdout


def test_layouts(tmp):
    """Each ctypes struct has the C struct's size and field offsets."""
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <tinygpt.h>",
             "int main(void) {"]
    for cname, py in _lib.STRUCTS.items():
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (cname, cname))
        for f, _ in py._fields_:
            cf = _lib.RENAMED.get((cname, f), f)
            lines.append('printf("%s.%s %%zu\\n", offsetof(%s, %s));' % (cname, f, cname, cf))
    lines.append("return 0; }")
    src, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
    with open(src, "w") as f:
        f.write("\n".join(lines))
    cc = shutil.which("cc") or "gcc"
    r = subprocess.run([cc, "-I", os.path.join(SRC, "include"), src, "-o", exe],
                       capture_output=True, text=True)
    if not check(r.returncode == 0, "layout program: %s" % r.stderr):
        return
    got = dict(ln.split() for ln in subprocess.run([exe], capture_output=True, text=True)
               .stdout.splitlines())
    for cname, py in _lib.STRUCTS.items():
        check(int(got[cname]) == ctypes.sizeof(py), "sizeof %s: C %s, ctypes %d"
              % (cname, got[cname], ctypes.sizeof(py)))
        for f, _ in py._fields_:
            check(int(got[cname + "." + f]) == getattr(py, f).offset, "offset of %s.%s" % (cname, f))


def test_reference(tmp):
    """The random model: logits, attention, ablations against PyTorch."""
    cfg = (ct.L, ct.H, ct.E, ct.C, ct.V, ct.FF, True)
    L, H = ct.L, ct.H
    w = go.make_model(*cfg, seed=91)
    path = os.path.join(tmp, "m.gguf")
    go.write_gguf(path, w, cfg)
    text = "Hello, world! ünïcode"
    ids = [ct.B2ID[b] for b in text.encode()]
    m = tinygpt.Model(path)
    check(m.encode(text).tolist() == ids and m.encode(text).dtype == np.int32, "encode")
    check(m.decode(ids) == text and m.decode_bytes(ids) == text.encode(), "decode")
    ref, attn, scale = go.reference(w, cfg, ids)
    tol = go.tolerance(cfg, scale)
    lg = m.logits(ids)
    check(lg.dtype == np.float32 and lg.shape == (len(ids), ct.V), "logits shape %s" % (lg.shape,))
    d = np.abs(lg - ref).max(axis=1)
    check(np.all(d < tol), "logits off by %g (tol %g)" % (d.max(), tol.min()))
    lp = m.logprobs(ids)
    ref_lp = ref - np.log(np.exp(ref - ref.max(1, keepdims=True)).sum(1, keepdims=True)) \
        - ref.max(1, keepdims=True)
    check(np.abs(lp - ref_lp).max() < 2 * tol.max() + 1e-5, "logprobs")
    sc = m.score(ids)
    check(np.abs(sc - ref_lp[np.arange(len(ids) - 1), ids[1:]]).max() < 2 * tol.max() + 1e-5,
          "score")
    a = m.attention(ids)
    check(a.shape == (L, H, len(ids), len(ids)) and a.dtype == np.float32, "attention shape")
    check(np.abs(a - attn).max() < 1e-4, "attention off by %g" % np.abs(a - attn).max())
    check(m.attention(text).shape == a.shape, "attention of a str")
    # ablation: one head, then a whole layer; the mask comes back after
    for pairs, call in (([(L - 1, 0)], lambda: m.ablate(L - 1, 0)),
                        ([(0, h) for h in range(H)], lambda: m.ablate(0))):
        mref, _, ms = go.reference(w, cfg, ids, mask=pairs)
        mt = go.tolerance(cfg, ms)
        with call():
            mask = m.head_mask
            ml = m.logits(ids)
        d = np.abs(ml - mref).max(axis=1)
        check(np.all(d < mt), "ablate %s: off by %g (tol %g)" % (pairs, d.max(), mt.min()))
        check(np.abs(mref - ref).max() > 10 * mt.max(), "ablating %s changes the logits" % pairs)
        check(all(mask[l, h] == 0 for l, h in pairs) and mask.sum() == L * H - len(pairs),
              "mask inside the block")
        check(m.head_mask.all() and np.array_equal(m.logits(ids), lg), "after the block: "
              "every head again, the same logits bit for bit")
    # the cache and contexts
    m.logits(ids)
    check(m.n_past == len(ids) and m.cache_tokens().tolist() == ids, "cache after logits")
    ctx = m.save()
    first = [t.id for t in m.generate(None, 8, seed=3, tokens=True)]
    m.restore(ctx)
    again = [t.id for t in m.generate(None, 8, seed=3, tokens=True)]
    check(first == again and len(first) == 8, "a restored context continues the same way")
    m.truncate(3)
    check(m.n_past == 3, "truncate")
    info = m.info
    n_params = sum(x.size for k, x in w.items() if k not in ("layers", "lm_head")) + \
        sum(x.size for y in w["layers"] for x in y.values())
    check(info["n_params"] == n_params and info["n_layer"] == L and info["n_vocab"] == ct.V and
          info["tied"] == 1 and info["weight_type"] == "f32" and info["arch"] == "gpt2",
          "info %s" % info)
    check(sum(t["n_elements"] for t in m.tensors) == n_params, "tensors add up")
    m.close()
    return path, ids


def test_shipped():
    """The shipped model against the command line."""
    m = tinygpt.Model(SHIPPED)
    text = "ROMEO:\nWhat light"
    ids = m.encode(text)
    js = json.loads(cli("attention", "-m", SHIPPED, "-p", text, "--json"))
    cw = js["weights"]
    a = m.attention(ids)
    check(js["tokens"] == ids.tolist(), "attention --json tokens")
    d = max(abs(a[l, h, q, k] - cw[l][h][q][k]) for l in range(m.n_layer)
            for h in range(m.n_head) for q in range(len(ids)) for k in range(q + 1))
    check(d <= 1e-6, "attention vs tinygpt attention --json: off by %g" % d)
    # greedy with log-probabilities
    js = json.loads(cli("generate", "-m", SHIPPED, "-p", text, "--temp", "0", "-n", 12,
                        "--json", "--top-logprobs", 5))["samples"][0]
    toks = [t["id"] for t in js["tokens"]]
    got = list(m.generate(text, 12, temperature=0, tokens=True, top_logprobs=5))
    check([t.id for t in got] == toks, "greedy tokens %s vs %s" % ([t.id for t in got], toks))
    check(all(abs(t.logprob - c["logprob"]) < 1e-6 for t, c in zip(got, js["tokens"])),
          "generate's logprobs vs the CLI's")
    check(all([i for i, _ in t.top] == [x["id"] for x in c["top_logprobs"]]
              for t, c in zip(got, js["tokens"])), "top alternatives vs the CLI's")
    seq = np.concatenate([ids, np.array(toks[:-1], dtype=np.int32)])
    lp = m.logprobs(seq)
    d = max(abs(lp[len(ids) - 1 + i, t] - c["logprob"]) for i, (t, c) in
            enumerate(zip(toks, js["tokens"])))
    check(d < 1e-4, "logprobs(prompt + generated) vs the CLI's --json: off by %g" % d)
    # sampled text, several settings
    for seed, kw, flags in ((7, {}, []),
                            (123, {"top_p": 0.9, "min_p": 0.1, "repeat_penalty": 1.3,
                                   "temperature": 1.1, "top_k": 0},
                             ["--top-p", 0.9, "--min-p", 0.1, "--repeat-penalty", 1.3,
                              "--temp", 1.1, "--top-k", 0]),
                            (5, {"stop": ["\n\n", "ROMEO"]}, ["--stop", "\n\n", "--stop", "ROMEO"])):
        want = cli("generate", "-m", SHIPPED, "-p", text, "-n", 80, "--seed", seed,
                   "--no-echo", *flags)
        g = m.generate(text, 80, seed=seed, **kw)
        got = "".join(g)
        check(got.encode() + b"\n" == want, "seed %d %s: %r vs the CLI's %r"
              % (seed, kw, got, want))
        check(g.result and g.result["stop"] in ("length", "stop"), "result %s" % g.result)
    # breaking out of the loop, then another call: the generation ends cleanly
    g = m.generate(text, 50, seed=1)
    next(g)
    m.logits(ids)
    check(list(g) == [], "an abandoned generation ends when the model is used again")
    m.close()


def close(a, b):
    """Equal as `%.9g` prints (the CLI's JSON), or both undefined."""
    if a is None or b is None:
        return (a is None or a != a) and (b is None or b != b)
    return abs(a - b) <= 1e-8 * max(abs(a), abs(b)) + 1e-12


def test_analysis():
    """compare / profile / bench through the binding against the commands'
    --json (the same library code; every deterministic field)."""
    s1, s4 = os.path.join(SRC, "weights", "shakespeare-1h.gguf"), SHIPPED
    text_path = os.path.join(SRC, "tests", "tools", "golden", "text.txt")
    text = open(text_path, encoding="utf-8").read()
    js = json.loads(cli("compare", s1, s4, "-f", text_path, "--json", "--head-tokens", 256))
    m1, m4 = tinygpt.Model(s1), tinygpt.Model(s4)
    py = m1.compare(m4, text, head_tokens=256)
    check(py["window"] == js["window"], "compare window")
    for cm, pm in zip(js["models"], py["models"]):
        q, pq = cm["quality"], pm["quality"]
        for k in ("tokens", "bytes", "nats_per_token", "perplexity", "nats_per_byte",
                  "in_context_score"):
            check(close(q[k], pq[k]), "compare %s quality %s: %s vs %s" % (cm["path"], k, q[k],
                                                                          pq[k]))
        for cb, pb in zip(q["by_position"], pq["by_position"]):
            check(cb["from"] == pb["from"] and cb["to"] == pb["to"] and
                  cb["tokens"] == pb["tokens"] and close(cb["nats_per_token"],
                                                         pb["nats_per_token"]),
                  "by_position %s vs %s" % (cb, pb))
        h = pm["heads"]
        check(close(cm["baseline_loss"], h["baseline_loss"]), "baseline loss")
        for ch in cm["heads"]:
            l, j = ch["layer"], ch["head"]
            for k in ("entropy", "confidence", "sink", "prev", "local", "induction",
                      "ablation_loss", "ablation_delta"):
                check(close(ch[k], h[k][l, j]), "head %d.%d %s: %s vs %s" % (l, j, k, ch[k],
                                                                            h[k][l, j]))
            if "only_head_loss" in ch:
                check(close(ch["only_head_loss"], h["only_loss"][l, j]), "only-head loss")
            check(ch["class"] == h["class"][l][j], "class %d.%d" % (l, j))
        for cl, pl in zip(cm["layers"], h["layers"]):
            check(cl["best_head"] == pl["best_head"] and
                  close(cl["best_head_loss"], pl["best_head_loss"]) and
                  close(cl["random_head_loss"], pl["random_head_loss"]), "layer %s" % cl)
    ag, pa = js["agreement"], py["agreement"]
    check(ag["positions"] == pa["positions"] and close(ag["top1"], pa["top1"]) and
          close(ag["kl"], pa["kl"]), "agreement %s vs %s" % (ag, pa))
    # an ablated loss is quality under the mask: the head analysis' figure
    with m4.ablate(1, 2):
        q = m4.quality(text)
    h = m4.heads(text, head_tokens=10 ** 6)
    check(abs(q["nats_per_token"] - h["ablation_loss"][1, 2]) < 1e-12,
          "quality inside ablate(1, 2) %r vs the head analysis %r"
          % (q["nats_per_token"], h["ablation_loss"][1, 2]))
    # profile: calls, flops and bytes of every row
    jp = json.loads(cli("profile", "-m", s4, "--json", "--no-roofline", "--per-layer",
                        "--per-head", "--prompt-tokens", 32, "-n", 8, "--seed", 3))
    pp = m4.profile(n_prompt=32, gen=8, seed=3, per_layer=True, per_head=True)
    for cph in jp["phases"]:
        pph = pp["phases"].get(cph["phase"])
        if not check(pph is not None and pph["steps"] == cph["steps"] and
                     pph["tokens"] == cph["tokens"], "profile phase %s" % cph["phase"]):
            continue
        for kind, key in (("ops", None), ("layers", "layer"), ("heads", "head")):
            rows = {(r["name"], r[key] if key else None): r for r in pph[kind]}
            for r in cph.get(kind, []):
                pr = rows.get((r["op"], r[key] if key else None))
                check(pr is not None and all(pr[k] == r[k] for k in (
                    "calls", "flops", "bytes", "weight_bytes", "kv_bytes", "act_bytes")),
                    "profile %s %s row %s vs %s" % (cph["phase"], kind, r, pr))
    b = m4.bench(pp=(16,), tg=(8,), reps=2)
    check([r["test"] for r in b] == ["pp16", "tg8"] and all(r["tok_s"] > 0 and
                                                            len(r["ms"]) == 2 for r in b),
          "bench rows %s" % b)
    sw = m4.sweep([8, 64], steps=2)
    check([r["ctx"] for r in sw] == [8, 64] and all(r["step_us"] > 0 for r in sw), "sweep")
    m1.close()
    m4.close()


def test_errors(small, tmp):
    ok, msg = raises(lambda: tinygpt.Model("/nonexistent/model.gguf"), "/nonexistent/model.gguf",
                     status=2)
    check(ok, "bad path: %s" % msg)
    # an empty or under-4-byte file: the message names what a model can be
    for name, content in [("zero.gguf", b""), ("short.bin", b"GG")]:
        f = os.path.join(tmp, name)
        with open(f, "wb") as fh:
            fh.write(content)
        ok, msg = raises(lambda: tinygpt.Model(f), f)
        check(ok and all(w in msg for w in ("GGUF", "llama2.c", "Hugging Face folder")) and "\n" not in msg,
              "%s: %s" % (name, msg))
    check(raises(lambda: tinygpt.Model(SHIPPED, isa="bogus"), "bogus")[0], "bad isa")
    m = tinygpt.Model(small)
    check(raises(lambda: list(m.generate("x", 4, top_p=2)), "[0, 1]")[0], "bad top_p")
    check(raises(lambda: list(m.generate("x", 4, temperature=-1)), "temp")[0], "bad temperature")
    check(raises(lambda: list(m.generate("x", 4, stop=[""])), "stop string")[0], "empty stop")
    check(raises(lambda: m.logits(np.zeros(ct.C + 1, dtype=np.int32)), "context")[0],
          "longer than the context")
    check(raises(lambda: m.logits([ct.V + 3]), "token")[0], "token out of range")
    check(raises(lambda: m.decode([ct.V + 3]), "")[0], "decode out of range")

    # ids that are not 1-D integers are refused, not rounded or flattened (1.5
    # ran as token 1, a [2, 2] array as four tokens); seeds outside the
    # command line's [0, 2^64 - 1] too (-1 ran as 2^64 - 1)
    def value_error(fn, needle):
        try:
            fn()
        except ValueError as e:
            return needle in str(e)
        return False
    check(value_error(lambda: m.logits(np.array([1.5, 2.0])), "integers"), "float ids refused")
    check(value_error(lambda: m.logits([True, False]), "integers"), "bool ids refused")
    check(value_error(lambda: m.logits(np.ones((2, 2), dtype=np.int32)), "1-D"), "2-D ids refused")
    check(value_error(lambda: m.score(np.ones((1, 3), dtype=np.int64)), "1-D"), "2-D ids refused by score")
    check(m.logits(np.array([1, 2], dtype=np.uint16)).shape == (2, ct.V), "unsigned integer ids taken")
    check(np.array_equal(m.logits(5), m.logits([5])), "one id as a scalar")
    check(value_error(lambda: list(m.generate("x", 2, seed=-1)), "seed -1"), "a negative seed refused")
    check(value_error(lambda: list(m.generate("x", 2, seed=2 ** 64)), "outside"), "a seed past 2^64 refused")
    with tinygpt.Model(SHIPPED) as ms:
        got = "".join(ms.generate("ROMEO:", 8, seed=2 ** 64 - 1))
    want = cli("generate", "-m", SHIPPED, "-p", "ROMEO:", "-n", 8, "--seed", 2 ** 64 - 1, "--no-echo")
    check(got.encode() + b"\n" == want, "seed 2^64 - 1: %r vs the CLI's %r" % (got, want))
    check(raises(lambda: m.attention([]), "no tokens")[0], "attention of nothing")
    check(raises(lambda: m.ablate(9, 9).__enter__(), "outside")[0], "ablate out of range")
    check(raises(lambda: m.truncate(10 ** 6), "outside")[0], "truncate past the cache")
    check(raises(lambda: m.eval([1], pos=40), "past the")[0], "eval past the cache")
    e = raises(lambda: m.eval([1], pos=40), "")[1]
    check("\n" not in e and len(e) > 10, "one line: %r" % e)
    m.close()
    check(raises(lambda: m.logits([1]), "closed")[0], "a closed model")


def test_interrupt(small):
    """set_interrupt: asked once per forward pass; a true answer stops eval,
    a generation and an analysis with status INTERRUPTED; an exception in
    it is raised as itself; None removes it."""
    m = tinygpt.Model(small)
    ids = [1, 2, 3, 4]
    asked = []
    m.set_interrupt(lambda: asked.append(1) and False)  # never interrupts
    ref = m.logits(ids)
    check(len(asked) == 1, "one prefill pass asks once, not %d times" % len(asked))
    asked.clear()
    check(len(list(m.generate("x", 5, temperature=0, ignore_eos=True))) > 0 and len(asked) >= 5,
          "a 5-token generation asks at every pass (%d)" % len(asked))
    for what, call in (("logits", lambda: m.logits(ids)),
                       ("generate", lambda: list(m.generate("x", 20, ignore_eos=True))),
                       ("heads", lambda: m.heads(list(range(1, 20)), head_tokens=16))):
        n = [0]

        def after_two():
            n[0] += 1
            return n[0] > 2
        m.set_interrupt(lambda: True if what == "logits" else after_two())
        try:
            call()
            check(False, "set_interrupt: %s ran to the end" % what)
        except tinygpt.Error as e:
            check(e.status == tinygpt.INTERRUPTED and "interrupt" in str(e),
                  "set_interrupt: %s raised status %d %r" % (what, e.status, str(e)))
    m.set_interrupt(lambda: {}["stop"])
    try:
        m.logits(ids)
        check(False, "an exception in the interrupt function was lost")
    except KeyError:
        pass
    except Exception as e:  # the wrong kind
        check(False, "an exception in the interrupt function became %s: %s" % (type(e).__name__, e))
    m.set_interrupt(None)
    check(np.array_equal(m.logits(ids), ref), "after set_interrupt(None) the logits are the same")
    m.close()


def rss_kb():
    with open("/proc/self/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def test_leaks(small, ids):
    def one():
        m = tinygpt.Model(small)
        m.logits(ids[:4])
        "".join(m.generate("ab", 2, seed=1))
        m.close()
    for _ in range(100):
        one()
    before = rss_kb()
    for _ in range(900):
        one()
    after = rss_kb()
    check(after - before < 2048, "1,000 opens: RSS %d kB -> %d kB" % (before, after))


def run_done(cwd, env, what):
    r = subprocess.run(["/usr/bin/python3", "-c", DONE + "; import tinygpt._lib as l; "
                        "print(tinygpt.__file__)"], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=120)
    out = r.stdout.split("\n")
    check(r.returncode == 0 and out[0] == "(4, 4, 2, 2)", "%s: exit %d, %r %r"
          % (what, r.returncode, r.stdout, r.stderr[-400:]))
    return out[1] if len(out) > 1 else ""


def test_build_tree_and_install(tmp):
    env = env_clean(PYTHONPATH=os.path.join(BUILD, "python"))  # LD_PRELOAD stays (ASan)
    f = run_done(SRC, env, "from the build tree")
    check(f.startswith(os.path.join(BUILD, "python")), "imported %s" % f)
    dest = os.path.join(tmp, "dest")
    r = subprocess.run(["meson", "install", "-C", BUILD, "--destdir", dest, "--no-rebuild",
                        "--quiet"], capture_output=True, text=True, timeout=300)
    inits = glob.glob(os.path.join(dest, "**", "tinygpt", "__init__.py"), recursive=True)
    if not check(r.returncode == 0 and len(inits) == 1, "meson install: %s %s" % (r.stderr, inits)):
        return
    pkg = os.path.dirname(inits[0])
    check("dist-packages" in pkg or "site-packages" in pkg, "installed into %s" % pkg)
    real = os.path.dirname(pkg)[len(dest):]  # where `meson install` without DESTDIR puts it
    if real.startswith(("/usr/local/", "/usr/lib/")):
        check(real in sys.path, "%s is not on /usr/bin/python3's sys.path %s" % (real, sys.path))
    for p in glob.glob(os.path.join(pkg, "*.py")):
        with open(p) as fh:
            check(BUILD not in fh.read() and os.path.realpath(BUILD) not in open(p).read(),
                  "%s names the build directory" % p)
    env["PYTHONPATH"] = os.path.dirname(pkg)
    f = run_done(SRC, env, "installed")
    check(f.startswith(pkg), "imported %s, not the installed %s" % (f, pkg))


def main():
    with tempfile.TemporaryDirectory(prefix="tg-py-") as tmp:
        test_layouts(tmp)
        small, ids = test_reference(tmp)
        test_shipped()
        test_analysis()
        test_errors(small, tmp)
        test_interrupt(small)
        test_leaks(small, ids)
        test_build_tree_and_install(tmp)
    for f in failures:
        print("FAIL", f)
    print("%d passed, %d failed" % (checks - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
