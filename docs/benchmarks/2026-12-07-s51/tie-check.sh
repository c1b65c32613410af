#!/usr/bin/env bash
# Session 51, any CUDA GPU: the GPU tests of the case-building paths, then the faithful tie-breaking candidate
# evaluated 12 times (32 noisy runs of the reference; 8 failed 2 of 16 shape evaluations on an H100).
export PYTHONPATH=. AKA_HOME=/tmp/akah AKA_BWRAP=$PWD/.bwrap/bwrap PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $OUT/device.txt
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_cases_on_cuda_gpu.py > $OUT/gpu-tests.txt 2>&1
echo "gpu tests exit $?: $(tail -n 1 $OUT/gpu-tests.txt)"
timeout 300 python3 docs/benchmarks/2026-12-07-s51/tie_repeat.py 12 > $OUT/tie-repeat.txt 2>&1
tail -n 1 $OUT/tie-repeat.txt
