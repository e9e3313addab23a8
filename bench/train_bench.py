#!/usr/bin/python3
"""train_bench.py — training tokens/s of tinygpt (bench_train) against
PyTorch (train_torch.py) on the same model, batch and context, measured in
the same run at 1 and 2 threads; prints both and the ratio (reported, never
asserted). usage: train_bench.py BENCH_TRAIN [L H E C V B steps [llama KVH F]]
("llama KVH F": a tied Llama with KVH key/value heads, feed-forward F)"""
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
exe = sys.argv[1]
L, H, E, C, V, B, steps = (sys.argv[2:9] if len(sys.argv) >= 9 else
                           ["4", "4", "128", "256", "1024", "4", "10"])
extra = sys.argv[9:12] if len(sys.argv) >= 12 else []
print(f"model {'llama KVH%s F%s ' % tuple(extra[1:]) if extra else ''}L{L} H{H} E{E} C{C} V{V}, "
      f"batch {B}x{C}, {steps} steps after one warm-up")
for nth in ("1", "2"):
    env = dict(os.environ, OMP_NUM_THREADS=nth, OPENBLAS_NUM_THREADS=nth, MKL_NUM_THREADS=nth)
    ours = json.loads(subprocess.run([exe, L, H, E, C, V, B, nth, steps] + extra, env=env,
                                     capture_output=True, text=True, check=True).stdout)
    ref = json.loads(subprocess.run(["/usr/bin/python3", os.path.join(here, "train_torch.py"),
                                     L, H, E, C, V, B, nth, steps] + extra, env=env,
                                    capture_output=True, text=True, check=True).stdout)
    print(f"threads {nth}: tinygpt {ours['tokens_per_s']:.0f} tok/s, {ref['impl']} "
          f"{ref['tokens_per_s']:.0f} tok/s, ratio {ours['tokens_per_s'] / ref['tokens_per_s']:.2f}x")
