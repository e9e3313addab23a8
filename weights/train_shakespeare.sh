#!/usr/bin/env bash
# train_shakespeare.sh — trains the 1-head / 4-head pair on Tiny Shakespeare
# (the last 10% of bytes held out) and scores both on the held-out bytes
# with `tinygpt eval`. The two runs go in parallel, one thread each.
#   usage: weights/train_shakespeare.sh OUTDIR SEED STEPS [TINYGPT]
# The shipped checkpoints: weights/train_shakespeare.sh weights 1 <steps in README>
set -euo pipefail
out=$1 seed=$2 steps=$3
tinygpt=${4:-build/tools/tinygpt}
text=${TEXT:-../shared/data/tinyshakespeare/input.txt}
mkdir -p "$out"
# held-out part: exactly the bytes `tinygpt train --val-frac 0.1` holds out
len=$(stat -c %s "$text")
val=$(mktemp)
tail -c $(( len / 10 )) "$text" > "$val"
shape="--layers 4 --embd 128 --ctx 256 --vocab 1024 --batch 4"
sched="--steps $steps --lr 3e-3 --warmup 100 --weight-decay 0.1 --grad-clip 1.0 --seed $seed --eval-every 250"
for h in 1 4; do
  name=$out/shakespeare-${h}h
  [ "$seed" = 1 ] || name=$out/shakespeare-${h}h-seed$seed
  ( /usr/bin/time -f "$name wall %e s" "$tinygpt" train -f "$text" -o "$name.gguf" $shape --heads $h $sched -t 1 \
      > "$name.log" 2>&1
    "$tinygpt" eval -m "$name.gguf" -f "$val" --json > "$name.eval.json" ) &
done
wait
for h in 1 4; do
  name=$out/shakespeare-${h}h
  [ "$seed" = 1 ] || name=$out/shakespeare-${h}h-seed$seed
  echo "$name: $(tail -n 1 "$name.log") $(cat "$name.eval.json")"
done
rm -f "$val"
