#!/usr/bin/python3
"""train_ref.py — the PyTorch oracle for the trainer: model/train.c (GPT-2)
and model/train_llama.c (Llama), one case format but for its header.

    train_ref.py gpt2|llama CASE OUT

GPT-2 is tests/model/torch_gpt2.py's. The Llama is an independent one
written from torch.nn.functional ops: RMSNorm, RoPE on pairs (2i, 2i+1)
(GGUF / llama2.c) or (i, i + D/2) (Hugging Face) of the first D dimensions
of each head, causal attention with K/V heads repeated for their G query
heads (MHA, GQA, MQA), SwiGLU (silu(h·w1ᵀ) ⊙ h·w3ᵀ)·w2ᵀ, no biases, tied
or untied classifier, cross-entropy with ignore_index -1.

Reads a case file written by tests/model/test_train.c (gpt2) or
tests/model/test_train_llama.c (llama), a header then the batch:
  gpt2:   int32[12]  L H E C V B T steps warmup clip_on 0 0
          float32[8] lr lr_min beta1 beta2 eps weight_decay grad_clip 0
  llama:  int32[16]  L H KVH E HS C V F B T steps warmup tied D halves 0
          float32[10] lr lr_min beta1 beta2 eps weight_decay grad_clip theta rms_eps 0
  float32[n] parameters in train.h's table order (GPT-2 or Llama)
  int32[B*T] tokens ; int32[B*T] targets
Writes: float64 loss ; float64[n] gradients (float64 autograd from the same
float32 parameters) ; float32[n] parameters after `steps` AdamW steps run in
float32 by torch.optim.AdamW (same batch every step, warmup + cosine lr,
clip_grad_norm_), decay on the matrices and embeddings only.
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


class Llama:
    def __init__(self, dims, flat):
        (self.L, self.H, self.KVH, self.E, self.HS, self.C, self.V, self.F, self.tied,
         self.D, self.halves, self.theta, self.eps) = dims
        L, E, F, V = self.L, self.E, self.F, self.V
        Q, KV = self.H * self.HS, self.KVH * self.HS
        shapes = [("tok", (V, E), 1), ("attn_norm", (L, E), 0), ("wqkv", (L, Q + 2 * KV, E), 1),
                  ("wo", (L, E, Q), 1), ("ffn_norm", (L, E), 0), ("w13", (L, 2 * F, E), 1),
                  ("w2", (L, E, F), 1), ("out_norm", (E,), 0)]
        if not self.tied:
            shapes.append(("output", (V, E), 1))
        self.tensors, self.decay, off = [], [], 0
        for name, shape, dec in shapes:
            n = int(np.prod(shape))
            t = flat[off:off + n].reshape(shape).clone().requires_grad_(True)
            setattr(self, name, t)
            self.tensors.append(t)
            self.decay.append(dec)
            off += n
        assert off == flat.numel(), (off, flat.numel())

    @staticmethod
    def n_params(L, H, KVH, E, HS, V, F, tied):
        Q, KV = H * HS, KVH * HS
        return V * E * (1 if tied else 2) + L * (2 * E + (Q + 2 * KV) * E + E * Q + 3 * F * E) + E

    def rms(self, x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * g

    def rope(self, x, T):  # x [B, T, heads, HS]
        half, D = self.D // 2, self.D
        inv = self.theta ** (-torch.arange(half, dtype=torch.float64) * 2.0 / D)
        ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
        c = torch.cos(ang).to(x.dtype)[None, :, None, :]
        s = torch.sin(ang).to(x.dtype)[None, :, None, :]
        rot, rest = x[..., :D], x[..., D:]
        if self.halves:
            x0, x1 = rot[..., :half], rot[..., half:]
            out = torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1)
        else:
            x0, x1 = rot[..., 0::2], rot[..., 1::2]
            out = torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], dim=-1).flatten(-2)
        return torch.cat([out, rest], dim=-1)

    def loss(self, tok, tgt):
        B, T = tok.shape
        H, KVH, HS, F = self.H, self.KVH, self.HS, self.F
        Q, KV = H * HS, KVH * HS
        x = Fn.embedding(tok, self.tok)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        for l in range(self.L):
            h = self.rms(x, self.attn_norm[l])
            qkv = h @ self.wqkv[l].T
            q = self.rope(qkv[..., :Q].reshape(B, T, H, HS), T)
            k = self.rope(qkv[..., Q:Q + KV].reshape(B, T, KVH, HS), T)
            v = qkv[..., Q + KV:].reshape(B, T, KVH, HS)
            k = k.repeat_interleave(H // KVH, dim=2)
            v = v.repeat_interleave(H // KVH, dim=2)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, H, T, HS]
            s = (q @ k.transpose(-1, -2)) / HS ** 0.5
            p = torch.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)
            y = (p @ v).transpose(1, 2).reshape(B, T, Q)
            x = x + y @ self.wo[l].T
            h = self.rms(x, self.ffn_norm[l])
            ab = h @ self.w13[l].T
            x = x + (Fn.silu(ab[..., :F]) * ab[..., F:]) @ self.w2[l].T
        h = self.rms(x, self.out_norm)
        logits = h @ (self.tok if self.tied else self.output).T
        return Fn.cross_entropy(logits.reshape(B * T, -1), tgt.reshape(-1), ignore_index=-1)


def read_case(arch, raw):
    """The case file's header for arch: (make(flat) -> model, n params, B,
    T, the AdamW hyperparameters as write_outputs takes them, header
    bytes)."""
    if arch == "gpt2":
        ints = [int(x) for x in np.frombuffer(raw, dtype=np.int32, count=12)]
        L, H, E, C, V, B, T, steps, warmup = ints[:9]
        fl = [float(x) for x in np.frombuffer(raw, dtype=np.float32, count=8, offset=48)]
        n = sum(table_sizes(L, E, C, V))
        make = lambda flat: GPT2(L, H, E, C, V, flat)  # noqa: E731
        hdr = 48 + 32
    elif arch == "llama":
        ints = [int(x) for x in np.frombuffer(raw, dtype=np.int32, count=16)]
        L, H, KVH, E, HS, C, V, F, B, T, steps, warmup, tied, D, halves = ints[:15]
        fl = [float(x) for x in np.frombuffer(raw, dtype=np.float32, count=10, offset=64)]
        dims = (L, H, KVH, E, HS, C, V, F, tied, D, halves, fl[7], fl[8])
        n = Llama.n_params(L, H, KVH, E, HS, V, F, tied)
        make = lambda flat: Llama(dims, flat)  # noqa: E731
        hdr = 64 + 40
    else:
        sys.exit(f"train_ref.py: unknown architecture {arch!r} (gpt2 or llama)")
    lr, lr_min, b1, b2, eps, wd, clip = fl[:7]
    return make, n, B, T, (steps, warmup, lr, lr_min, b1, b2, eps, wd, clip), hdr


def main():
    arch, src, dst = sys.argv[1], sys.argv[2], sys.argv[3]
    raw = open(src, "rb").read()
    make, n, B, T, hp, off = read_case(arch, raw)
    params = np.frombuffer(raw, dtype=np.float32, count=n, offset=off).copy()
    off += 4 * n
    tok = np.frombuffer(raw, dtype=np.int32, count=B * T, offset=off).reshape(B, T)
    off += 4 * B * T
    tgt = np.frombuffer(raw, dtype=np.int32, count=B * T, offset=off).reshape(B, T)
    tok = torch.from_numpy(tok.astype(np.int64))
    tgt = torch.from_numpy(tgt.astype(np.int64))
    write_outputs(dst, make, params, tok, tgt, hp)


if __name__ == "__main__":
    main()
