"""The weight types' byte layouts against an independent implementation.

numpy (and torch for bfloat16) encode the same f32 values from the formats'
definitions (ggml's Q8_0: f16 d, then 32 int8, x = d*q; Q4_0: f16 d, then
16 bytes, element j < 16 in the low nibble of byte j and element j >= 16 in
the high nibble of byte j - 16, x = d*(q - 8); IEEE half; bfloat16 = the
top 16 bits of an f32, rounded to nearest even). The engine's encoder must
produce the same bytes, and its decoder must turn numpy's bytes into the
same f32 values, so a layout mistake cannot pass by agreeing with itself.

usage: quant_oracle.py QUANT_DUMP
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

F32 = np.float32


def enc_f16(x):
    return x.astype(np.float16).tobytes()


def enc_bf16(x):
    b = torch.from_numpy(x.copy()).to(torch.bfloat16)
    return b.view(torch.int16).numpy().astype("<i2").tobytes()


def enc_q8_0(x):
    out = bytearray()
    for blk in x.reshape(-1, 32):
        amax = F32(np.max(np.abs(blk)))
        d = F32(amax / F32(127))
        inv = F32(F32(1) / d) if d != 0 else F32(0)
        q = np.rint((blk * inv).astype(F32)).astype(np.int8)
        out += np.float16(d).tobytes() + q.tobytes()
    return bytes(out)


def enc_q4_0(x):
    out = bytearray()
    for blk in x.reshape(-1, 32):
        m = blk[int(np.argmax(np.abs(blk)))]   # first element of largest |x|
        d = F32(m / F32(-8))
        inv = F32(F32(1) / d) if d != 0 else F32(0)
        q = np.clip(np.rint((blk * inv).astype(F32)) + 8, 0, 15).astype(np.uint8)
        packed = q[:16] | (q[16:] << 4)
        out += np.float16(d).tobytes() + packed.astype(np.uint8).tobytes()
    return bytes(out)


def dec(name, b):
    if name == "f32":
        return np.frombuffer(b, "<f4")
    if name == "f16":
        return np.frombuffer(b, "<f2").astype(F32)
    if name == "bf16":
        u = np.frombuffer(b, "<u2").astype(np.uint32) << 16
        return u.view(F32)
    blk = 34 if name == "q8_0" else 18
    raw = np.frombuffer(b, np.uint8).reshape(-1, blk)
    d = raw[:, :2].copy().view("<f2").astype(F32)          # [nb, 1]
    if name == "q8_0":
        q = raw[:, 2:].view(np.int8).astype(F32)
    else:
        lo, hi = raw[:, 2:] & 15, raw[:, 2:] >> 4
        q = np.concatenate([lo, hi], axis=1).astype(F32) - F32(8)
    return (d * q).astype(F32).reshape(-1)


ENC = {"f32": lambda x: x.astype("<f4").tobytes(), "f16": enc_f16, "bf16": enc_bf16,
       "q8_0": enc_q8_0, "q4_0": enc_q4_0}


def inputs():
    rng = np.random.default_rng(15)
    blocks = []
    for e in range(-8, 5):                       # scales 1e-8 .. 1e4: f16 subnormal d too
        for _ in range(6):
            s = 10.0 ** (e + rng.random())
            blocks.append(rng.uniform(-s, s, 32))
    blocks.append(np.zeros(32))                  # a zero block: d = 0, q = 0
    t = np.arange(32) - 16.0                     # ties for q8_0: max 127 -> d = 1
    blocks.append(np.concatenate([[127.0], t[1:] + 0.5]))
    blocks.append(np.concatenate([[-8.0], (t[1:] % 8) + 0.5]))  # ties for q4_0: d = 1
    blocks.append(np.concatenate([[8.0], -(t[1:] % 8) - 0.5]))  # d = -1, x/d = 8 clamps
    blocks.append(rng.standard_normal(32) * 0.02)  # GPT-2-like weights
    x = np.concatenate(blocks).astype(F32)
    x[3] = F32(1.0) + F32(2.0 ** -11)            # f16 tie to even
    x[4] = F32(1.0) + F32(3 * 2.0 ** -8)         # bf16 tie to even
    x[5] = F32(65520.0)                          # f16 overflow to inf
    return x


def run(exe, *args):
    subprocess.run([exe, *args], check=True)


def main():
    exe = sys.argv[1]
    x = inputs()
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "x.f32")
        x.astype("<f4").tofile(src)
        for name, enc in ENC.items():
            want = enc(x)
            out = os.path.join(tmp, name + ".bin")
            run(exe, "enc", name, src, out)
            got = open(out, "rb").read()
            if got != want:
                i = next(i for i in range(min(len(got), len(want))) if got[i] != want[i]) \
                    if len(got) == len(want) else -1
                print(f"FAIL enc {name}: {len(got)} vs {len(want)} bytes, first difference at byte {i}")
                fails += 1
            npb = os.path.join(tmp, name + ".np.bin")
            open(npb, "wb").write(want)
            dst = os.path.join(tmp, name + ".f32out")
            run(exe, "dec", name, npb, dst)
            got_f = np.fromfile(dst, "<f4")
            want_f = dec(name, want)
            same = got_f.shape == want_f.shape and np.array_equal(
                got_f.view(np.uint32), want_f.view(np.uint32))
            if not same:
                print(f"FAIL dec {name}: values differ from numpy's decoding")
                fails += 1
            else:
                print(f"ok {name}: {len(want)} bytes identical, decoded identically")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
