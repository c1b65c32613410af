#!/usr/bin/env bash
# A short check on any CUDA GPU (session 50): session 45's exports of the published operators scored in one run
# (given `three`: only the three that session 50's changes concern: integer tie-breaks, the fp8 GEMM, the fp8
# MoE), then the GPU tests of the case-building paths only a GPU takes.
#   bash scripts/detached_device.sh start /tmp/chk 540 docs/benchmarks/2026-12-07-s50/gpu-check.sh [three]
# CANDS: the candidates' directory (default .cands/pub45, session 45's exports).
set -u
D=/tmp/chk
export PYTHONPATH=. AKA_HOME=/tmp/akah AKA_BWRAP=$PWD/.bwrap/bwrap PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee $D/device.txt
python3 -c 'import torch,triton;print("torch",torch.__version__,"triton",triton.__version__)' | tee -a $D/device.txt
began=$(date +%s)
if [ "${1:-}" = three ]; then OPS="--ops moe_topk_gating_softmax,block_scaled_mm,fp8_blockscale_fused_moe" NAME=three-ops
else OPS="" NAME=published; fi
timeout 480 python3 -m aka_tui bench run --suite .atrex --candidates ${CANDS:-.cands/pub45} --cases 1 --shape-timeout 60 \
  $OPS --out $D --name $NAME > $D/$NAME-log.txt 2>&1
echo "S score exit $? in $(( $(date +%s) - began )) s" >> $D/progress.txt
grep -E "S_agg|correct-and-real" $D/$NAME-log.txt | head -3 >> $D/progress.txt
began=$(date +%s)
timeout 300 python3 -m pytest -q -m gpu tests/gpu/test_cases_on_cuda_gpu.py \
  "tests/gpu/test_gpu_eval.py::test_correct_triton_rms_norm_is_real_and_timed_with_events" > $D/gpu-tests.txt 2>&1
echo "T gpu tests exit $? in $(( $(date +%s) - began )) s: $(tail -n 1 $D/gpu-tests.txt)" >> $D/progress.txt
