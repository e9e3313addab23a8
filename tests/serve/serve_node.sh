#!/usr/bin/env bash
# serve_node.sh TINYGPT SOURCE_ROOT WORK_DIR SCRIPT.mjs [ARGS...] — runs a
# node test of `tinygpt serve` (the official openai client, or the page in
# Debian's chromium through playwright-core) with its npm packages installed
# into the build dir on the first run, as tokenizer_exact installs its own.
set -euo pipefail
tinygpt=$1 src=$2 work=$3/serve_npm script=$4
shift 4
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    echo "SKIP: npm/node are not installed"
    exit 77
fi
mkdir -p "$work"
# The official OpenAI client (a client no one here wrote) and playwright-core
# (no browser download: the tests drive /usr/bin/chromium).
want=(openai@4.95.0 playwright-core@1.65.1)
if [ ! -f "$work/node_modules/openai/package.json" ] || [ ! -f "$work/node_modules/playwright-core/package.json" ]; then
    echo "== npm install ${want[*]}"
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --silent --no-audit --no-fund --prefix "$work" "${want[@]}"
fi
work=$(cd "$work" && pwd)
export NODE_PATH=$work/node_modules
exec node "$src/tests/serve/$script" "$tinygpt" "$work" "$@"
