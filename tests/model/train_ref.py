#!/usr/bin/python3
"""train_ref.py — the PyTorch oracle for model/train.c.

Reads a case file written by tests/model/test_train.c:
  int32[12]  L H E C V B T steps warmup clip_on 0 0
  float32[6] lr lr_min beta1 beta2 eps weight_decay ; float32 grad_clip ; float32 pad
  float32[n] parameters in train.h's table order
  int32[B*T] tokens ; int32[B*T] targets
Writes: float64 loss ; float64[n] gradients (float64 autograd from the same
float32 parameters) ; float32[n] parameters after `steps` AdamW steps run in
float32 by torch.optim.AdamW (same batch every step, warmup + cosine lr,
clip_grad_norm_).
"""
import math
import sys

import numpy as np
import torch
import torch.nn.functional as Fn

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from torch_gpt2 import GPT2, table_sizes  # noqa: E402


def lr_at(s, steps, warmup, lr_max, lr_min):
    if s < warmup:
        return lr_max * (s + 1) / warmup
    if steps <= warmup:
        return lr_max
    frac = min(1.0, (s - warmup) / (steps - warmup))
    return lr_min + 0.5 * (1.0 + math.cos(math.pi * frac)) * (lr_max - lr_min)


def write_outputs(dst, make, params, tok, tgt, hp):
    """The oracle's answer for a model make(flat tensor) with .tensors,
    .decay and .loss(tok, tgt): the float64 loss and gradients, then the
    float32 parameters after hp = (steps, warmup, lr, lr_min, beta1, beta2,
    eps, weight_decay, grad_clip) AdamW steps on the same batch."""
    steps, warmup, lr, lr_min, b1, b2, eps, wd, clip = hp
    out = open(dst, "wb")
    m = make(torch.from_numpy(params).double())
    loss = m.loss(tok, tgt)
    loss.backward()
    out.write(np.float64(loss.item()).tobytes())
    out.write(np.concatenate([p.grad.numpy().ravel() for p in m.tensors]).astype(np.float64).tobytes())

    m = make(torch.from_numpy(params).float())
    decay = [p for p, d in zip(m.tensors, m.decay) if d]
    no_decay = [p for p, d in zip(m.tensors, m.decay) if not d]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": wd},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(b1, b2), eps=eps, foreach=False)
    for s in range(steps):
        for gr in opt.param_groups:
            gr["lr"] = lr_at(s, steps, warmup, lr, lr_min)
        opt.zero_grad()
        m.loss(tok, tgt).backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(m.tensors, clip)
        opt.step()
    out.write(np.concatenate([p.detach().numpy().ravel() for p in m.tensors]).astype(np.float32).tobytes())
    out.close()


def main():
    src, dst = sys.argv[1], sys.argv[2]
    raw = open(src, "rb").read()
    ints = np.frombuffer(raw, dtype=np.int32, count=12)
    L, H, E, C, V, B, T, steps, warmup = (int(x) for x in ints[:9])
    fl = np.frombuffer(raw, dtype=np.float32, count=8, offset=48)
    lr, lr_min, b1, b2, eps, wd, clip = (float(x) for x in fl[:7])
    off = 48 + 32
    n = sum(table_sizes(L, E, C, V))
    params = np.frombuffer(raw, dtype=np.float32, count=n, offset=off).copy()
    off += 4 * n
    tok = np.frombuffer(raw, dtype=np.int32, count=B * T, offset=off).reshape(B, T)
    off += 4 * B * T
    tgt = np.frombuffer(raw, dtype=np.int32, count=B * T, offset=off).reshape(B, T)
    tok = torch.from_numpy(tok.astype(np.int64))
    tgt = torch.from_numpy(tgt.astype(np.int64))

    write_outputs(dst, lambda flat: GPT2(L, H, E, C, V, flat), params, tok, tgt,
                  (steps, warmup, lr, lr_min, b1, b2, eps, wd, clip))

if __name__ == "__main__":
    main()
