#!/usr/bin/python3
"""lib_test.py — libtinygpt through its public header: test_lib (linked
against the shared and against the static library) runs a random byte-level
GPT-2 written as GGUF; its prefill logits and greedy continuation must match
the PyTorch reference of gpt_oracle.py.

With --install BUILDDIR TEST_LIB_C SANITIZE, it also installs the build into a
temporary DESTDIR (meson install), compiles TEST_LIB_C against the installed
header and library with the installed pkg-config file (and -fsanitize=SANITIZE unless it is
"none", as the library was built with it), and runs that too.

usage: lib_test.py [--install BUILDDIR TEST_LIB_C SANITIZE] TEST_LIB [TEST_LIB ...]
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_test as ct  # noqa: E402
import gpt_oracle as go  # noqa: E402


def install_and_build(builddir, src, sanitize, dest, env, failures):
    """meson install into dest, then cc src with the installed tinygpt.pc."""
    r = subprocess.run(["meson", "install", "-C", builddir, "--destdir", dest, "--no-rebuild",
                        "--quiet"], capture_output=True, text=True, timeout=300)
    pcs = glob.glob(os.path.join(dest, "**", "pkgconfig", "tinygpt.pc"), recursive=True)
    hdr = glob.glob(os.path.join(dest, "**", "include", "tinygpt.h"), recursive=True)
    if r.returncode != 0 or not pcs or not hdr:
        failures.append("meson install: exit %d, tinygpt.pc %s, tinygpt.h %s: %s"
                        % (r.returncode, pcs, hdr, r.stderr.strip()))
        return None
    penv = dict(env, PKG_CONFIG_PATH=os.path.dirname(pcs[0]), PKG_CONFIG_SYSROOT_DIR=dest)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "tinygpt"], capture_output=True,
                           text=True, env=penv)
    exe = os.path.join(dest, "test_lib_installed")
    cc = shutil.which("cc") or "gcc"
    san = [] if sanitize == "none" else ["-fsanitize=" + sanitize]
    r = subprocess.run([cc, "-o", exe, src] + san + flags.stdout.split() + ["-pthread", "-lm"],
                       capture_output=True, text=True)
    if flags.returncode != 0 or r.returncode != 0:
        failures.append("building against the installed library: %s %s"
                        % (flags.stderr.strip(), r.stderr.strip()))
        return None
    libdir = [f[2:] for f in flags.stdout.split() if f.startswith("-L")]
    env["LD_LIBRARY_PATH"] = ":".join(libdir + [env.get("LD_LIBRARY_PATH", "")])
    return exe


def main():
    cfg = (ct.L, ct.H, ct.E, ct.C, ct.V, ct.FF, True)
    w = go.make_model(*cfg, seed=91)
    text = "Hello, world! ünïcode"
    ids = [ct.B2ID[b] for b in text.encode()]
    ref, _, scale = go.reference(w, cfg, ids)
    tol = go.tolerance(cfg, scale)
    chain = ct.greedy_chain(w, cfg, ids, 12)
    failures, checks = [], 0
    args = sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="tg-lib-") as tmp:
        model = os.path.join(tmp, "m.gguf")
        go.write_gguf(model, w, cfg)
        env = dict(os.environ)
        if args[:1] == ["--install"]:
            builddir, src, sanitize = args[1], args[2], args[3]
            args = args[4:]
            dest = os.path.join(tmp, "dest")
            checks += 1
            exe = install_and_build(builddir, src, sanitize, dest, env, failures)
            if exe:
                args.append(exe)
        for exe in args:
            out, greedy = os.path.join(tmp, "out.f32"), os.path.join(tmp, "greedy.i32")
            r = subprocess.run([exe, model, text, out, greedy, "12"], capture_output=True,
                               text=True, timeout=120, env=env)
            checks += 1
            if r.returncode != 0:
                failures.append("%s: exit %d: %s" % (exe, r.returncode, r.stderr.strip()))
                continue
            got = np.fromfile(out, dtype=np.float32).reshape(len(ids), ct.V)
            err = np.abs(got - ref).max(axis=1)
            checks += 1
            if np.any(err > tol):
                failures.append("%s: logits off by %g (tol %g)" % (exe, err.max(), tol.min()))
            g = np.fromfile(greedy, dtype=np.int32).tolist()
            checks += 1
            if g != chain:
                failures.append("%s: greedy %s, reference %s" % (exe, g, chain))
    for f in failures:
        print("FAIL", f)
    print("%d passed, %d failed" % (checks - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
