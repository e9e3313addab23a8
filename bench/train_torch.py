#!/usr/bin/python3
"""train_torch.py — the PyTorch baseline for bench_train: the same GPT-2
(tests/model/torch_gpt2.py) or, with "llama KVH F", the same tied Llama
(the Llama of tests/model/train_ref.py), batch and AdamW step, float32 on the CPU.
usage: train_torch.py L H E C V B threads steps [llama KVH F] ; prints one JSON line."""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "model"))
from torch_gpt2 import GPT2, table_sizes  # noqa: E402
from train_ref import Llama  # noqa: E402

L, H, E, C, V, B, nth, steps = (int(x) for x in sys.argv[1:9])
llama = len(sys.argv) == 12
torch.set_num_threads(nth)
torch.manual_seed(1)
if llama:
    KVH, F = int(sys.argv[10]), int(sys.argv[11])
    n = Llama.n_params(L, H, KVH, E, E // H, V, F, True)
    m = Llama((L, H, KVH, E, E // H, C, V, F, True, E // H, False, 10000.0, 1e-5), 0.02 * torch.randn(n))
else:
    n = sum(table_sizes(L, E, C, V))
    m = GPT2(L, H, E, C, V, 0.02 * torch.randn(n))
opt = torch.optim.AdamW([{"params": [p for p, d in zip(m.tensors, m.decay) if d], "weight_decay": 0.1},
                         {"params": [p for p, d in zip(m.tensors, m.decay) if not d], "weight_decay": 0.0}],
                        lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
tok = torch.randint(0, V, (B, C))
tgt = torch.randint(0, V, (B, C))
for s in range(steps + 1):
    if s == 1:
        t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    loss = m.loss(tok, tgt)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(m.tensors, 1.0)
    opt.step()
dt = time.perf_counter() - t0
print(json.dumps({"impl": "pytorch-" + torch.__version__, "arch": "llama" if llama else "gpt2", "threads": nth,
                  "tokens_per_s": round(steps * B * C / dt, 1), "ms_per_step": round(dt * 1e3 / steps, 2),
                  "params": n, "loss": round(loss.item(), 4)}))
