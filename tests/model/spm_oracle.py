#!/usr/bin/python3
"""spm_oracle.py — tinygpt's SentencePiece-style tokenizer against a
reference written here from the definitions, not from tinygpt's code:

  * llama2.c's tokenizer.bin: int32 max_token_length, then per token a
    float32 score, an int32 length and that many bytes (pieces spell ▁ as a
    space; ids 1 and 2 are BOS and EOS);
  * llama2.c's encode: BOS, a dummy-prefix " " piece unless the text is
    empty, the text cut into characters (a byte that is not a continuation
    byte, then continuation bytes while fewer than 4 bytes are held), each
    looked up, a character with no piece becoming one token per byte with
    id byte + 3 (llama2.c's constant: the reference does not look the
    <0xXX> pieces up, tinygpt does), then while some adjacent pair's
    concatenated pieces form a piece scoring above -1e10, merge the best
    one (the leftmost on a tie). O(n²), as the definition.

Every prompt (ASCII, empty, whitespace runs, newlines, accents, CJK, emoji
and other bytes with no piece, invalid UTF-8, control characters and a NUL,
literal "<s>" and "<0x41>" text) goes through `tinygpt tokenize --tokenizer
tok512.bin --no-parse-special --json -f FILE` and must give exactly the
reference's ids; so must a stretch of TinyStories. The same vocabulary
through a GGUF (`tinygpt tokenize -m` of a file written by tinygpt's
writer is covered by the C tests); here also `--tokenizer` for a missing
file and a hostile one must fail with one line and exit 1.

usage: spm_oracle.py TINYGPT SOURCE_DIR
"""
import json
import os
import struct
import subprocess
import sys
import tempfile


def shared_dir(src):
    env = os.environ.get("TINYGPT_SHARED")
    if env:
        return env
    for cand in (os.path.join(src, "..", "shared"), os.path.join(src, "..", "..", "shared")):
        if os.path.isdir(os.path.join(cand, "data")):
            return cand
    return os.path.join(src, "..", "shared")


def missing_data(test, path):
    """A file of shared/data is missing: the exit status, 77 (meson's skip) with
    the reason, or 1 when TINYGPT_REQUIRE_DATA is set (.ci/run sets it)."""
    required = bool(os.environ.get("TINYGPT_REQUIRE_DATA"))
    print("%s: %s is missing (shared/data beside the source tree, or $TINYGPT_SHARED; "
          "README.md, 'Data for the tour and the tests'): %s" % (test, path, "FAIL" if required else "skipped"))
    return 1 if required else 77


def read_tokenizer_bin(path):
    data = open(path, "rb").read()
    (max_len,) = struct.unpack_from("<i", data, 0)
    off, pieces, scores = 4, [], []
    while off < len(data):
        score, n = struct.unpack_from("<fi", data, off)
        off += 8
        assert 0 <= n <= max_len and off + n <= len(data), "bad tokenizer.bin"
        pieces.append(data[off:off + n])
        scores.append(score)
        off += n
    return pieces, scores


def encode(pieces, scores, text, bos=True):
    index = {}
    for i, p in enumerate(pieces):
        index.setdefault(p, i)
    toks = [1] if bos else []
    if text:
        toks.append(index[b" "])
    i = 0
    while i < len(text):
        j = i + 1
        while j < len(text) and (text[j] & 0xC0) == 0x80 and j - i < 4:
            j += 1
        ch = text[i:j]
        if ch in index:
            toks.append(index[ch])
        else:
            toks.extend(b + 3 for b in ch)
        i = j
    while True:
        best_score, best_id, best_k = -1e10, -1, -1
        for k in range(len(toks) - 1):
            cat = pieces[toks[k]] + pieces[toks[k + 1]]
            cid = index.get(cat)
            if cid is not None and scores[cid] > best_score:
                best_score, best_id, best_k = scores[cid], cid, k
        if best_k < 0:
            break
        toks[best_k:best_k + 2] = [best_id]
    return toks


PROMPTS = [
    b"Once upon a time",
    b"",
    b" ",
    b"   leading and trailing spaces   ",
    b"tabs\tand\t\ttabs",
    b"line one\nline two\n\n\nend\n",
    b"Lily and Tom went to the park. They saw a big dog!",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber stra\u00dfe".encode(),
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8".encode(),
    "emoji \U0001F916\U0001F389 and \u2603".encode(),
    "\u0417\u0434\u0440\u0430\u0432\u0441\u0442\u0432\u0443\u0439 \u043c\u0438\u0440".encode(),
    b"invalid \xff\xfe utf-8 \xc3 and \xe2\x82 cut",
    b"\x80\x80\x80\x80\x80\x80 stray continuation bytes",
    b"control \x01\x02\x1b[0m and a NUL \x00 inside",
    b"<s> literal </s> <unk> <0x41> text",
    "\u2581 the space mark itself".encode(),
    b"1234567890 3.14159 $100 #tag @user",
    b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
]


def tinygpt_ids(exe, tok, text, tmp):
    path = os.path.join(tmp, "prompt.txt")
    with open(path, "wb") as f:
        f.write(text)
    r = subprocess.run([exe, "tokenize", "--tokenizer", tok, "--no-parse-special", "--json", "-f", path],
                       capture_output=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError("tokenize failed (%d): %s" % (r.returncode, r.stderr.decode(errors="replace")))
    return json.loads(r.stdout)["ids"]


def main():
    exe, src = sys.argv[1], sys.argv[2]
    shared = shared_dir(src)
    tok = os.path.join(shared, "data", "stories260K", "tok512.bin")
    stories = os.path.join(shared, "data", "tinystories", "tinystories_val.txt")
    for f in (tok, stories):
        if not os.path.isfile(f):
            return missing_data("spm_oracle", f)
    pieces, scores = read_tokenizer_bin(tok)
    assert len(pieces) == 512, len(pieces)
    failed, n = [], 0
    texts = list(PROMPTS)
    if os.path.isfile(stories):
        with open(stories, "rb") as f:
            texts.append(f.read(3000))
    with tempfile.TemporaryDirectory() as tmp:
        for text in texts:
            n += 1
            ref = encode(pieces, scores, text)
            got = tinygpt_ids(exe, tok, text, tmp)
            if got != ref:
                k = next((i for i, (a, b) in enumerate(zip(got, ref)) if a != b), min(len(got), len(ref)))
                failed.append("%r: differ at %d: tinygpt %s... reference %s..." % (
                    text[:40], k, got[k:k + 6], ref[k:k + 6]))
        # the reference uses id = byte + 3; check it agrees with the pieces
        n += 1
        if [pieces[b + 3] for b in range(256)] != [b"<0x%02X>" % b for b in range(256)]:
            failed.append("tok512.bin: ids 3..258 are not <0x00>..<0xFF>")
        # bad --tokenizer files: one line, exit 1
        bad = os.path.join(tmp, "bad.bin")
        with open(bad, "wb") as f:
            f.write(struct.pack("<i", 200) + struct.pack("<fi", 0.0, 100) + b"abc")
        for path, needle in ((bad, "run past the end"), (os.path.join(tmp, "missing.bin"), "missing.bin")):
            n += 1
            r = subprocess.run([exe, "tokenize", "--tokenizer", path, "-p", "x"], capture_output=True,
                               text=True, timeout=60)
            lines = r.stderr.strip().split("\n")
            if r.returncode != 1 or len(lines) != 1 or needle not in r.stderr or r.stdout:
                failed.append("--tokenizer %s: exit %d, stderr %r" % (path, r.returncode, r.stderr))
    for f in failed:
        print("FAIL:", f)
    print("%d/%d checks passed" % (n - len(failed), n))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
