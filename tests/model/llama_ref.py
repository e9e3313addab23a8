"""A Llama forward pass in PyTorch, written from torch.nn.functional and the
model's definition (llama2.c's model.py; Hugging Face's modeling_llama for
the halves rotary convention), for the tests. Not tinygpt's code.

Weights are a dict of float32 numpy arrays under llama.cpp names
(tests/weights/llama_files.py), cfg a dict with dim, n_heads, n_kv_heads,
n_layers; eps, theta and the pair convention are arguments.
"""
import numpy as np
import torch
import torch.nn.functional as F


def rope(x, pos, theta, pairs):
    """x [T, heads, HS] rotated at positions pos [T]: pair i of a head by
    pos * theta^(-2i/HS); pairs "adjacent" = (2i, 2i+1), "halves" = (i, i+HS/2)."""
    hs = x.shape[-1]
    freqs = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=x.dtype) / hs))
    ang = pos[:, None].to(x.dtype) * freqs[None, :]          # [T, HS/2]
    cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    if pairs == "adjacent":
        a, b = x[..., 0::2], x[..., 1::2]
        out = torch.empty_like(x)
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
        return out
    a, b = x[..., : hs // 2], x[..., hs // 2:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


class Llama:
    def __init__(self, w, cfg, eps=1e-5, theta=10000.0, pairs="adjacent", dtype=torch.float64):
        self.t = {k: torch.tensor(np.asarray(v), dtype=dtype) for k, v in w.items()}
        self.cfg, self.eps, self.theta, self.pairs, self.dtype = cfg, eps, theta, pairs, dtype
        if "output.weight" not in self.t:
            self.t["output.weight"] = self.t["token_embd.weight"]

    def logits(self, tokens):
        """[T, V] logits of every position of tokens (a causal forward from position 0)."""
        c, t = self.cfg, self.t
        H, KV, L = c["n_heads"], c["n_kv_heads"], c["n_layers"]
        T = len(tokens)
        x = t["token_embd.weight"][torch.tensor(tokens)]
        hs = c["dim"] // H
        pos = torch.arange(T)
        for l in range(L):
            p = f"blk.{l}."
            h = rmsnorm(x, t[p + "attn_norm.weight"], self.eps)
            q = (h @ t[p + "attn_q.weight"].T).view(T, H, hs)
            k = (h @ t[p + "attn_k.weight"].T).view(T, KV, hs)
            v = (h @ t[p + "attn_v.weight"].T).view(T, KV, hs)
            q, k = rope(q, pos, self.theta, self.pairs), rope(k, pos, self.theta, self.pairs)
            k = k.repeat_interleave(H // KV, dim=1)   # query head j reads kv head j // (H / KV)
            v = v.repeat_interleave(H // KV, dim=1)
            s = torch.einsum("thd,shd->hts", q, k) / hs ** 0.5          # [H, T, T]
            s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
            a = torch.einsum("hts,shd->thd", F.softmax(s, dim=-1), v)    # [T, H, HS]
            x = x + a.reshape(T, H * hs) @ t[p + "attn_output.weight"].T
            h = rmsnorm(x, t[p + "ffn_norm.weight"], self.eps)
            x = x + (F.silu(h @ t[p + "ffn_gate.weight"].T) * (h @ t[p + "ffn_up.weight"].T)) @ t[p + "ffn_down.weight"].T
        xf = rmsnorm(x, t["output_norm.weight"], self.eps)
        self.scale = (xf.abs() @ t["output.weight"].abs().T).max(dim=1).values  # per row: max_v sum_e |xf_e W_ve|
        return xf @ t["output.weight"].T

    def tolerance(self):
        """Allowed |C - reference| per row of the last logits() (as
        tests/model/gpt_oracle.py argues it): float32 rounding is a random
        walk, u*sqrt(n) of the terms' magnitudes per reduction of length n,
        one per residual update (2L) and the head, K = 16 for the constants."""
        c = self.cfg
        n = max(c["dim"], c["hidden_dim"])
        return (16.0 * 2.0 ** -24 * n ** 0.5 * (2 * c["n_layers"] + 2) * self.scale).numpy()

    def step(self, token, cache):
        """Logits [V] of one token after the positions in cache (a list of
        per-layer (K, V) tensors [P, KVH, HS], grown in place): the same
        arithmetic as logits(), one row at a time."""
        c, t = self.cfg, self.t
        H, KV, L = c["n_heads"], c["n_kv_heads"], c["n_layers"]
        hs = c["dim"] // H
        P = cache[0][0].shape[0] if cache else 0
        x = t["token_embd.weight"][torch.tensor([token])]
        pos = torch.tensor([P])
        for l in range(L):
            p = f"blk.{l}."
            h = rmsnorm(x, t[p + "attn_norm.weight"], self.eps)
            q = rope((h @ t[p + "attn_q.weight"].T).view(1, H, hs), pos, self.theta, self.pairs)
            k = rope((h @ t[p + "attn_k.weight"].T).view(1, KV, hs), pos, self.theta, self.pairs)
            v = (h @ t[p + "attn_v.weight"].T).view(1, KV, hs)
            if len(cache) <= l:
                cache.append((k, v))
            else:
                cache[l] = (torch.cat([cache[l][0], k]), torch.cat([cache[l][1], v]))
            K = cache[l][0].repeat_interleave(H // KV, dim=1)
            V = cache[l][1].repeat_interleave(H // KV, dim=1)
            s = torch.einsum("thd,shd->hts", q, K) / hs ** 0.5
            a = torch.einsum("hts,shd->thd", F.softmax(s, dim=-1), V)
            x = x + a.reshape(1, H * hs) @ t[p + "attn_output.weight"].T
            h = rmsnorm(x, t[p + "ffn_norm.weight"], self.eps)
            x = x + (F.silu(h @ t[p + "ffn_gate.weight"].T) * (h @ t[p + "ffn_up.weight"].T)) @ t[p + "ffn_down.weight"].T
        return (rmsnorm(x, t["output_norm.weight"], self.eps) @ t["output.weight"].T)[0]

    def greedy(self, prompt, n):
        """n tokens after prompt, each the argmax (lowest id on a tie), and
        the smallest gap between the best and second-best logit on the way
        (a KV cache: step() per token)."""
        toks, gap, cache = list(prompt), float("inf"), []
        for tok in toks[:-1]:
            self.step(tok, cache)
        for _ in range(n):
            lg = self.step(toks[-1], cache)
            top = torch.topk(lg, 2)
            gap = min(gap, float(top.values[0] - top.values[1]))
            toks.append(int(torch.argmax(lg)))
        return toks[len(prompt):], gap
