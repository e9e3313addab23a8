#!/usr/bin/python3
"""attention_svg_test.py — `tinygpt attention --svg` on a long prompt and on
a short one, with a random byte-level GPT-2 (2 layers x 3 heads, context
256) from tests/model/gpt_oracle.py, so a text of n bytes is n tokens:

  * 245 tokens: well-formed (xmllint), renders in librsvg (rsvg-convert),
    under 10^4 XML elements and 3 MB (it was 10^6 elements and 104 MB);
    each head is one embedded PNG of T x T pixels whose every pixel is the
    colour of the weight `attention --json` reports (decoded here with zlib);
    token labels at least every 4th token on both axes;
  * --layer / --head draw only the selected tiles (and change the output);
  * a title line as wide as the document allows (the width fits it), a
    colour scale with its ticks (linear and --log);
  * a short prompt: one rect per visible cell, each with a tooltip.

usage: attention_svg_test.py TINYGPT
"""
import base64
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model"))
import gpt_oracle as go  # noqa: E402

L, H, E, C, V, FF = 2, 3, 48, 256, 257, 192
TEXT = (b"First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, "
        b"speak.\n\nFirst Citizen:\nYou are all resolved rather to die than to famish?\n\n"
        b"All:\nResolved. resolved.\n\nFirst Citizen:\nFirst, you know Caius Marcius is "
        b"chief enemy to the people.\n\nAll:\nWe know't, we know't.\n\nFirst Citizen:\nLet")


def png_pixels(data):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h = 8, b"", None, None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, inter = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype == 2 and inter == 0
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), 3 * w, [], bytes(3 * w)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[3 * x:3 * x + 3]) for x in range(w)])
        prev = bytes(line)
    return w, h, rows


def colour(x):
    """cmd attention's scale: white (0) to #08306b (1)."""
    x = min(max(x, 0.0), 1.0)
    return tuple(int(round(255 - (255 - c) * x)) for c in (8, 48, 107))


def main():
    exe = sys.argv[1]
    fails, n = [], [0]

    def check(ok, what):
        n[0] += 1
        if not ok:
            fails.append(what)

    def run(*args):
        return subprocess.run([exe] + [str(a) for a in args], capture_output=True, timeout=120)

    def elements(path):
        r = subprocess.run(["xmllint", "--xpath", "count(//*)", path], capture_output=True, text=True)
        return int(float(r.stdout)) if r.returncode == 0 else -1

    w = go.make_model(L, H, E, C, V, FF, False, seed=3)
    with tempfile.TemporaryDirectory(prefix="tg-attsvg-") as tmp:
        model = os.path.join(tmp, "m.gguf")
        go.write_gguf(model, w, (L, H, E, C, V, FF, False))
        prompt = TEXT[:245].decode()
        assert len(prompt.encode()) == 245
        full = os.path.join(tmp, "full.svg")
        r = run("attention", "-m", model, "-p", prompt, "--svg", full, "--json")
        check(r.returncode == 0, "attention --svg 245 tokens: exit %d %r" % (r.returncode, r.stderr))
        if r.returncode:
            print("\n".join(fails))
            return 1
        weights = json.loads(r.stdout)["weights"]
        T = len(weights[0][0])
        check(T == 245, "245 tokens, got %d" % T)
        x = subprocess.run(["xmllint", "--noout", full], capture_output=True, text=True)
        check(x.returncode == 0, "xmllint: " + x.stderr)
        ne, size = elements(full), os.path.getsize(full)
        check(0 < ne < 10000, "245 tokens: %d elements" % ne)
        check(size < 3e6, "245 tokens: %d bytes" % size)
        png = os.path.join(tmp, "full.png")
        rs = subprocess.run(["rsvg-convert", full, "-o", png], capture_output=True, text=True)
        check(rs.returncode == 0 and os.path.getsize(png) > 1000, "rsvg-convert: " + rs.stderr)
        svg = open(full, encoding="utf-8").read()

        # one PNG per head, every pixel the colour of its weight (grey above the diagonal)
        imgs = re.findall(r'data:image/png;base64,([A-Za-z0-9+/=]+)"', svg)
        check(len(imgs) == L * H, "%d PNG images, want %d" % (len(imgs), L * H))
        worst = 0
        for i, b64 in enumerate(imgs[:L * H]):
            pw, ph, rows = png_pixels(base64.b64decode(b64))
            if (pw, ph) != (T, T):
                check(False, "image %d is %dx%d" % (i, pw, ph))
                continue
            wl = weights[i // H][i % H]
            for q in range(T):
                for k in range(T):
                    want = colour(wl[q][k]) if k <= q else (0xee, 0xee, 0xee)
                    worst = max(worst, max(abs(a - b) for a, b in zip(rows[q][k], want)))
        check(worst <= 1, "PNG pixels vs the weights' colours: off by %d" % worst)

        # labels: every k-th token on both axes, k <= 4
        titles = re.findall(r"layer (\d+) head (\d+)</text>", svg)
        labels = len(re.findall(r'font-size="[0-9.]+" text-anchor="end" dominant-baseline', svg))
        check(labels >= L * H * T // 4, "%d row labels for %d heads of %d tokens" % (labels, L * H, T))
        check(sorted(titles) == sorted((str(l), str(h)) for l in range(L) for h in range(H)),
              "tile titles %s" % titles)

        # title fits, colour scale with ticks
        m = re.search(r'<svg [^>]*width="(\d+)"', svg)
        first = re.search(r'<text x="10" y="20" font-size="14">([^<]*)</text>', svg)
        check(m and first and int(m.group(1)) >= 10 + 0.6 * 14 * len(first.group(1)),
              "title %r fits in width %s" % (first and first.group(1), m and m.group(1)))
        check('id="scale"' in svg and 'fill="url(#scale)"' in svg and
              all('>%s</text>' % t in svg for t in ("0", "0.25", "0.5", "0.75", "1")),
              "linear colour scale and its ticks")
        logp = os.path.join(tmp, "log.svg")
        r = run("attention", "-m", model, "-p", prompt, "--svg", logp, "--log")
        lsvg = open(logp, encoding="utf-8").read() if r.returncode == 0 else ""
        check(all('>%s</text>' % t in lsvg for t in ("≤1e-4", "1e-3", "0.01", "0.1", "1")) and
              "log scale" in lsvg, "--log colour scale")

        # --layer / --head select the tiles
        for args, want in ((["--layer", 1], [(1, h) for h in range(H)]),
                           (["--head", 2], [(l, 2) for l in range(L)]),
                           (["--layer", 0, "--head", 1], [(0, 1)])):
            p = os.path.join(tmp, "sel.svg")
            r = run("attention", "-m", model, "-p", prompt, "--svg", p, *args)
            s = open(p, encoding="utf-8").read() if r.returncode == 0 else ""
            got = [(int(a), int(b)) for a, b in re.findall(r"layer (\d+) head (\d+)</text>", s)]
            check(got == want and s != svg and
                  len(re.findall(r"data:image/png", s)) == len(want) and
                  subprocess.run(["xmllint", "--noout", p]).returncode == 0,
                  "%s: tiles %s, want %s" % (args, got, want))
        r = run("attention", "-m", model, "-p", prompt, "--svg", os.path.join(tmp, "x.svg"), "--layer", L)
        check(r.returncode == 2 and b"--layer" in r.stderr, "--layer out of range: %r" % r.stderr)

        # a short prompt: one rect with a tooltip per visible cell
        short = os.path.join(tmp, "short.svg")
        r = run("attention", "-m", model, "-p", "To be, or not", "--svg", short)
        s = open(short, encoding="utf-8").read() if r.returncode == 0 else ""
        t = 13
        cells = len(re.findall(r"<rect [^>]*><title>q \d+ ", s))
        check(cells == L * H * t * (t + 1) // 2, "short prompt: %d cells, want %d" % (cells, L * H * t * (t + 1) // 2))
        check("data:image/png" not in s and subprocess.run(["xmllint", "--noout", short]).returncode == 0,
              "short prompt is drawn with rects and well-formed")
        if shutil.which("rsvg-convert"):
            check(subprocess.run(["rsvg-convert", short, "-o", os.path.join(tmp, "s.png")]).returncode == 0,
                  "rsvg-convert short")

    for f in fails:
        print("FAIL", f)
    print("%d passed, %d failed" % (n[0] - len(fails), len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
