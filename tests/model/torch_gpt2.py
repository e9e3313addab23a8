"""torch_gpt2.py — GPT-2 in PyTorch over model/train.h's parameter table
(the oracle for the gradient test and the baseline for bench/train_torch.py).
Matrices are [OUT, IN]; the LM head is tied to wte; GELU is the tanh form."""
import math

import torch
import torch.nn.functional as Fn

NAMES = ["wte", "wpe", "ln1_w", "ln1_b", "qkv_w", "qkv_b", "proj_w", "proj_b",
         "ln2_w", "ln2_b", "up_w", "up_b", "down_w", "down_b", "lnf_w", "lnf_b"]
DECAY = [1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0]


def table_shapes(L, E, C, V):
    F = 4 * E
    return [(V, E), (C, E), (L, E), (L, E), (L, 3 * E, E), (L, 3 * E), (L, E, E), (L, E),
            (L, E), (L, E), (L, F, E), (L, F), (L, E, F), (L, E), (E,), (E,)]


def table_sizes(L, E, C, V):
    return [math.prod(s) for s in table_shapes(L, E, C, V)]


class GPT2:
    def __init__(self, L, H, E, C, V, flat):
        self.L, self.H, self.E = L, H, E
        self.tensors, off = [], 0
        for shp in table_shapes(L, E, C, V):
            n = math.prod(shp)
            self.tensors.append(flat[off:off + n].reshape(shp).clone().requires_grad_(True))
            off += n
        self.decay = DECAY
        self.t = dict(zip(NAMES, self.tensors))

    def loss(self, tok, tgt):
        t, E, H = self.t, self.E, self.H
        B, T = tok.shape
        x = t["wte"][tok] + t["wpe"][:T]
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        for l in range(self.L):
            h = Fn.layer_norm(x, (E,), t["ln1_w"][l], t["ln1_b"][l], 1e-5)
            qkv = h @ t["qkv_w"][l].T + t["qkv_b"][l]
            q, k, v = qkv.split(E, dim=2)
            q = q.view(B, T, H, E // H).transpose(1, 2)
            k = k.view(B, T, H, E // H).transpose(1, 2)
            v = v.view(B, T, H, E // H).transpose(1, 2)
            s = (q @ k.transpose(-2, -1)) / math.sqrt(E // H)
            p = s.masked_fill(~mask, float("-inf")).softmax(-1)
            y = (p @ v).transpose(1, 2).reshape(B, T, E)
            x = x + y @ t["proj_w"][l].T + t["proj_b"][l]
            h = Fn.layer_norm(x, (E,), t["ln2_w"][l], t["ln2_b"][l], 1e-5)
            h = Fn.gelu(h @ t["up_w"][l].T + t["up_b"][l], approximate="tanh")
            x = x + h @ t["down_w"][l].T + t["down_b"][l]
        x = Fn.layer_norm(x, (E,), t["lnf_w"], t["lnf_b"], 1e-5)
        logits = x @ t["wte"].T
        return Fn.cross_entropy(logits.view(B * T, -1), tgt.reshape(-1), ignore_index=-1)
