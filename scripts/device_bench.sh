#!/usr/bin/env bash
# One device-machine run (torch + triton + numpy only): calibrate, fill missing full-tier rooflines,
# the GPU tests, and the eager baseline over the full tier. Results under $OUT.
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 AKA_HOME="$OUT/aka-home"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' | tee -a "$OUT/gpu.txt"
python3 -m aka_tui hw calibrate --json "$OUT/calibrated.json" 2>&1 | tee "$OUT/calibrate.txt"
for op in ${ROOF_OPS:-}; do python3 -m aka_tui roofline "$op" --device cuda --tier full >>"$OUT/roofline.txt" 2>&1 || echo "roofline $op failed" | tee -a "$OUT/roofline.txt"; done
[ "${GPU_TESTS:-1}" = 1 ] && python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tail -15 | tee "$OUT/gpu-tests.txt"
/usr/bin/time -v python3 -m aka_tui bench --baseline "${BASELINE:-eager}" --out "$OUT" ${OPS:+--ops $OPS} ${BENCH_ARGS:-} \
  > "$OUT/bench-${BASELINE:-eager}.txt" 2> "$OUT/bench-${BASELINE:-eager}.err"; tail -40 "$OUT/bench-${BASELINE:-eager}.txt"
grep -E "Elapsed|Maximum resident" "$OUT/bench-${BASELINE:-eager}.err"
tar cf "$OUT/rooflines.tar" problems/*/roofline.json
