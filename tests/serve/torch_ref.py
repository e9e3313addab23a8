"""torch_ref.py — an independent GPT-2 of the shipped f32 GGUF files in
PyTorch (float64): a GGUF reader written from the format's definition and
the forward pass from torch.nn.functional ops, for the serve tests'
log-probability checks. Only what those files hold: f32 tensors, GPT-2."""
import math
import struct

import numpy as np
import torch
import torch.nn.functional as F

# GGUF metadata value types: fixed sizes (struct formats); 8 string, 9 array
_FIXED = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def read_gguf(path):
    """(metadata dict, {tensor name: float64 array in row-major [rows, cols]})."""
    d = open(path, "rb").read()
    assert d[:4] == b"GGUF", path
    p = [4]

    def take(fmt):
        v = struct.unpack_from(fmt, d, p[0])
        p[0] += struct.calcsize(fmt)
        return v[0]

    def string():
        n = take("<Q")
        s = d[p[0]:p[0] + n].decode("utf-8", "replace")
        p[0] += n
        return s

    def value(t):
        if t in _FIXED:
            return take(_FIXED[t])
        if t == 8:
            return string()
        assert t == 9, t
        et, n = take("<I"), take("<Q")
        return [value(et) for _ in range(n)]

    take("<I")  # version
    n_tensors, n_kv = take("<Q"), take("<Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        ne = [take("<Q") for _ in range(take("<I"))]
        typ, off = take("<I"), take("<Q")
        assert typ == 0, "%s: type %d (only f32 here)" % (name, typ)
        infos.append((name, ne, off))
    align = kv.get("general.alignment", 32)
    base = (p[0] + align - 1) // align * align
    t = {}
    for name, ne, off in infos:
        n = math.prod(ne)
        a = np.frombuffer(d, dtype="<f4", count=n, offset=base + off)
        t[name] = torch.from_numpy(a.astype(np.float64).reshape(tuple(reversed(ne))))
    return kv, t


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
