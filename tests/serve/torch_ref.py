"""torch_ref.py — an independent GPT-2 of the shipped f32 GGUF files in
PyTorch (float64): the tensors from the tests' GGUF reader
(tests/tools/gguf_table.py, written from the format's definition) and the
forward pass from torch.nn.functional ops, for the serve tests'
log-probability checks. Only what those files hold: f32 tensors, GPT-2."""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import gguf_table  # noqa: E402


def read_gguf(path):
    """(metadata dict, {tensor name: float64 array in row-major [rows, cols]}),
    through the tests' one GGUF reader (tests/tools/gguf_table.py)."""
    g = gguf_table.read_gguf(path)
    t = {}
    for name in g.order:
        assert g.tensors[name].type == 0, "%s: %s (only f32 here)" % (name, g.tensors[name].type_name)
        t[name] = torch.from_numpy(gguf_table.f32(g, name).astype(np.float64))
    return g.kv, t


class GPT2:
    def __init__(self, path):
        self.kv, self.t = read_gguf(path)
        self.L = self.kv["gpt2.block_count"]
        self.H = self.kv["gpt2.attention.head_count"]
        self.eps = self.kv.get("gpt2.attention.layer_norm_epsilon", 1e-5)

    def logits(self, ids):
        """[T, V] float64 logits of the token ids (positions 0..T-1)."""
        t, H = self.t, self.H
        T = len(ids)
        x = t["token_embd.weight"][torch.tensor(ids)] + t["position_embd.weight"][:T]
        E = x.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        for l in range(self.L):
            w = lambda n: t["blk.%d.%s" % (l, n)]  # noqa: E731
            h = F.layer_norm(x, (E,), w("attn_norm.weight"), w("attn_norm.bias"), self.eps)
            q, k, v = (h @ w("attn_qkv.weight").T + w("attn_qkv.bias")).split(E, dim=1)
            q, k, v = (z.view(T, H, E // H).transpose(0, 1) for z in (q, k, v))
            s = (q @ k.transpose(1, 2)) / math.sqrt(E // H)
            y = (s.masked_fill(~causal, float("-inf")).softmax(-1) @ v).transpose(0, 1).reshape(T, E)
            x = x + y @ w("attn_output.weight").T + w("attn_output.bias")
            h = F.layer_norm(x, (E,), w("ffn_norm.weight"), w("ffn_norm.bias"), self.eps)
            x = x + F.gelu(h @ w("ffn_up.weight").T + w("ffn_up.bias"), approximate="tanh") @ w("ffn_down.weight").T \
                + w("ffn_down.bias")
        x = F.layer_norm(x, (E,), t["output_norm.weight"], t["output_norm.bias"], self.eps)
        return x @ t.get("output.weight", t["token_embd.weight"]).T
