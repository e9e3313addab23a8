#!/usr/bin/env bash
# install.sh — a real llama.cpp for the llamacpp tests and bench, from the npm
# registry only: node-llama-cpp's prebuilt Linux libraries
# (@node-llama-cpp/linux-x64: libllama, libggml, and one libggml-cpu-*.so per
# x86 level, chosen at run time by ggml for this CPU) and the llama.cpp
# source they were built from (node-llama-cpp ships it as a git bundle; only
# its public headers are used). Builds tests/llamacpp/lcpp_oracle.c against
# them. Nothing of it is part of tinygpt, nothing is committed, and npm runs
# no package script (`npm pack --ignore-scripts` only downloads tarballs).
#
# usage: install.sh DEST CC    -> DEST/lcpp_oracle, DEST/lib/*.so, DEST/include
# exit 0: ready; 77: unavailable here (no npm, no network, no prebuilt
# libraries for this CPU family), with the reason on stdout; 1: an error.
# The prebuilt libraries rather than a build from the bundled source: they
# load on Debian 12 (built on Ubuntu 22.04, glibc 2.35), ggml picks the CPU
# variant for this machine (libggml-cpu-zen4.so here), and a cmake build of
# llama.cpp would cost minutes of CI's 2 cores.
# Cached: a second run with the same version and oracle source does nothing;
# a new build dir finds the tarballs in npm's cache (--prefer-offline).
set -euo pipefail
dest=$1
cc=$2
here=$(cd "$(dirname "$0")" && pwd)
NLC_VERSION=3.22.1   # node-llama-cpp: llama.cpp release v0.5.0 (2026-09-28 source)

# TINYGPT_REQUIRE_LLAMACPP=1 (.ci/run sets it): unavailable is an error.
skip() {
    if [ "${TINYGPT_REQUIRE_LLAMACPP:-}" = 1 ]; then
        echo "install.sh: llama.cpp unavailable, and TINYGPT_REQUIRE_LLAMACPP=1: $*" >&2
        exit 1
    fi
    echo "SKIP: llama.cpp unavailable: $*"
    exit 77
}

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) plat=linux-x64 ;;
    *) skip "node-llama-cpp's prebuilt libraries used here are for linux-x64, not $(uname -s)-$(uname -m)" ;;
esac
command -v npm >/dev/null || skip "npm is not installed (bash .ci/install-deps installs it)"
command -v git >/dev/null || skip "git is not installed (it unpacks the llama.cpp source bundle)"

mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9   # the tests of the suite may start this at the same time

stamp="$NLC_VERSION $(sha256sum "$here/lcpp_oracle.c" | cut -c1-16)"
if [ -x "$dest/lcpp_oracle" ] && [ "$(cat "$dest/.stamp" 2>/dev/null)" = "$stamp" ]; then
    exit 0
fi
t0=$(date +%s)
if [ "$(cat "$dest/.libs" 2>/dev/null)" != "$NLC_VERSION" ] || [ ! -f "$dest/include/include/llama.h" ]; then
rm -rf "$dest/npm" "$dest/lib" "$dest/include" "$dest/lcpp_oracle" "$dest/.stamp" "$dest/.libs" "$dest/VERSION"
mkdir -p "$dest/npm"
if ! out=$(cd "$dest/npm" && npm pack --loglevel=error --ignore-scripts --prefer-offline --no-audit --no-fund \
        "node-llama-cpp@$NLC_VERSION" "@node-llama-cpp/$plat@$NLC_VERSION" 2>&1); then
    rm -rf "$dest/npm"
    skip "npm pack node-llama-cpp@$NLC_VERSION failed: $(printf '%s\n' "$out" | grep -m1 -E 'npm (error|ERR!) [A-Z][a-z]|FetchError|E[A-Z]{4,}' || printf '%s\n' "$out" | tail -n 1)"
fi
main_tgz=$dest/npm/node-llama-cpp-$NLC_VERSION.tgz
bins_tgz=$dest/npm/node-llama-cpp-$plat-$NLC_VERSION.tgz
[ -f "$main_tgz" ] && [ -f "$bins_tgz" ] || { echo "install.sh: npm pack did not leave $main_tgz and $bins_tgz" >&2; exit 1; }

# The libraries: libllama, libggml, libggml-base and the CPU variants (their
# RUNPATH is $ORIGIN, so they find each other in one folder).
mkdir -p "$dest/npm/bins" "$dest/lib"
tar -xzf "$bins_tgz" -C "$dest/npm/bins"
bins=$dest/npm/bins/package/bins/$plat
cp "$bins"/libllama.*.so "$bins"/libggml*.so "$dest/lib/"

# The headers, from the source bundle of the same release.
tar -xzf "$main_tgz" -C "$dest/npm" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
release=$(sed -nE 's/.*"tag": *"([^"]+)".*/\1/p' "$dest/npm/package/llama/llama.cpp.info.json")
built=$(sed -nE 's/.*"release":"([^"]+)".*/\1/p' "$bins/_nlcBuildMetadata.json")
[ -n "$release" ] && [ "$release" = "$built" ] || {
    echo "install.sh: the source bundle is llama.cpp '$release' but the libraries were built from '$built'" >&2
    exit 1
}
git clone -q --bare "$dest/npm/package/llama/gitRelease.bundle" "$dest/npm/llama.git" 2>/dev/null
commit=$(git --git-dir="$dest/npm/llama.git" rev-parse HEAD)
mkdir -p "$dest/include"
git --git-dir="$dest/npm/llama.git" archive HEAD include ggml/include | tar -x -C "$dest/include"
rm -rf "$dest/npm"   # the tarballs stay in npm's cache
printf 'node-llama-cpp %s, llama.cpp %s, source commit %s\n' "$NLC_VERSION" "$release" "$commit" >"$dest/VERSION"
echo "$NLC_VERSION" >"$dest/.libs"
fi

libllama=$(cd "$dest/lib" && ls libllama.*.so | head -n 1)
libggml=$(cd "$dest/lib" && ls libggml.*.so | head -n 1)

"$cc" -std=c11 -O2 -Wall -Wextra -o "$dest/lcpp_oracle" "$here/lcpp_oracle.c" \
    -I"$dest/include/include" -I"$dest/include/ggml/include" \
    -DLCPP_BACKEND_DIR="\"$dest/lib\"" \
    -L"$dest/lib" -l:"$libllama" -l:"$libggml" -l:libggml-base.so -Wl,-rpath,"$dest/lib" -lm
echo "$stamp" >"$dest/.stamp"
echo "install.sh: $(cat "$dest/VERSION") in $dest ($(( $(date +%s) - t0 )) s)" >&2
