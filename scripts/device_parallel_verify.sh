#!/usr/bin/env bash
# Issues 2-4 verification on a 2-GPU device machine in one call: GPU 0 runs the compile baseline, GPU 1 the
# KB reference kernels on the full tier and then the GPU red-team. Each GPU runs one timed job at a time.
# Usage on the device: bash scripts/device_parallel_verify.sh   (results tarred into $OUT/results.tgz)
set -uo pipefail
ROOT_OUT="$OUT"
mkdir -p "$ROOT_OUT/compile" "$ROOT_OUT/kernels" "$ROOT_OUT/redteam"
( export CUDA_VISIBLE_DEVICES=0 OUT="$ROOT_OUT/compile" STEP=compile
  timeout 545 bash scripts/device_verify.sh > "$ROOT_OUT/compile/step.log" 2>&1 ) &
( export CUDA_VISIBLE_DEVICES=1
  OUT="$ROOT_OUT/kernels" STEP=kernels timeout 360 bash scripts/device_verify.sh > "$ROOT_OUT/kernels/step.log" 2>&1
  OUT="$ROOT_OUT/redteam" STEP=redteam timeout 180 bash scripts/device_verify.sh > "$ROOT_OUT/redteam/step.log" 2>&1 ) &
wait
for d in compile kernels redteam; do echo "== $d"; tail -25 "$ROOT_OUT/$d/step.log"; done > "$ROOT_OUT/summary.txt"
tar czf "$ROOT_OUT/results.tgz" --exclude='*.so' --exclude='*/aka-home/cache' -C "$ROOT_OUT" compile kernels redteam \
  && rm -rf "$ROOT_OUT/compile" "$ROOT_OUT/kernels" "$ROOT_OUT/redteam"
cat "$ROOT_OUT/summary.txt"
