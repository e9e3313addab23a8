#!/usr/bin/env python3
"""embed.py OUT.c URL=FILE... — the page's files as C arrays (serve_assets[]),
so `tinygpt serve` answers from memory and no request path reaches the file
system. Runs at build time on files in the repo; reads nothing else."""
import os
import sys

TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}


def main():
    out, pairs = sys.argv[1], sys.argv[2:]
    lines = ["/* made by tools/serve/embed.py from tools/serve/web/: do not edit */",
             "#include <stddef.h>", "",
             "typedef struct serve_asset {", "    const char *path, *type;",
             "    const unsigned char *data;", "    size_t len;", "} serve_asset;", ""]
    entries = []
    for i, pair in enumerate(pairs):
        url, path = pair.split("=", 1)
        data = open(path, "rb").read()
        ctype = TYPES[os.path.splitext(path)[1]]
        body = ",".join(str(b) for b in data)
        lines.append("static const unsigned char asset_%d[%d] = {%s};" % (i, max(len(data), 1), body or "0"))
        entries.append('    {"%s", "%s", asset_%d, %d},' % (url, ctype, i, len(data)))
    lines += ["", "const serve_asset serve_assets[] = {"] + entries + ["};",
              "const size_t serve_n_assets = %d;" % len(entries), ""]
    with open(out + ".tmp", "w") as f:
        f.write("\n".join(lines))
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
