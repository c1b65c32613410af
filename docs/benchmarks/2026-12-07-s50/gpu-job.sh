#!/usr/bin/env bash
# Session 50's device job: session 49's offline agent sessions on the 20 published operators and one scoring run
# of their exports; then the GPU tests of the case-building paths only a GPU takes (inputs parked on the host,
# the audited case built with the checked call's memory given back, integer tie-breaks on the device); then,
# given the argument 1, session 48's fp8 MoE probes and a replay of its shape 2.
#   bash scripts/detached_device.sh start /tmp/pub 540 docs/benchmarks/2026-12-07-s50/gpu-job.sh PROBES
set -u
bash docs/benchmarks/2026-12-07-s49/h200-job.sh 0 1
began=$(date +%s)
export PYTHONPATH=.:/tmp/site AKA_HOME=/tmp/akah AKA_BWRAP=$PWD/.bwrap/bwrap PYTHONUNBUFFERED=1
timeout 300 python3 -m pytest -q -m gpu tests/gpu/test_cases_on_cuda_gpu.py \
  "tests/gpu/test_gpu_eval.py::test_correct_triton_rms_norm_is_real_and_timed_with_events" > /tmp/pub/gpu-tests.txt 2>&1
echo "T gpu tests exit $? in $(( $(date +%s) - began )) s: $(tail -n 1 /tmp/pub/gpu-tests.txt)" >> /tmp/pub/progress.txt
[ "${1:-0}" = 1 ] || { echo "D probes skipped" >> /tmp/pub/progress.txt; exit 0; }
C=.cands/pub45/fp8_blockscale_fused_moe.py P=.atrex/fp8_blockscale_fused_moe
timeout 150 python3 docs/benchmarks/2026-12-06-s48/moe_nan_probe.py $P $C 1 655245665 > /tmp/pub/moe-nan-probe.txt 2>&1
echo "D nan probe done $(date -u +%H:%M:%S)" >> /tmp/pub/progress.txt
timeout 150 python3 docs/benchmarks/2026-12-06-s48/moe_mem_probe.py $P 2 > /tmp/pub/moe-mem-probe-2alone.txt 2>&1
echo "D mem probe done $(date -u +%H:%M:%S)" >> /tmp/pub/progress.txt
timeout 120 python3 -m aka_tui eval $C --problem $P --shape 2 --cases 1 --fuzz 0 --shape-timeout 110 > /tmp/pub/moe-shape2.txt 2>&1
echo "D done" >> /tmp/pub/progress.txt
