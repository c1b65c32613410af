#!/usr/bin/env bash
# Session 57's device job: on an H200, session 49's offline agent sessions on the 20 published operators (one
# iteration each) and one scoring run of their exports (issue 17); then, on any GPU, the GPU tests of the
# made-up operators seeded on CUDA (25 of them now: about 300 s on an H100).
#   bash scripts/detached_device.sh start /tmp/pub 540 docs/benchmarks/2026-12-08-s57/gpu-job.sh [tests]
# With `tests` only the GPU tests run (a machine that cannot take the H200 job).
set -u
mkdir -p /tmp/pub
[ "${1:-}" = tests ] || bash docs/benchmarks/2026-12-07-s49/h200-job.sh 0 1
began=$(date +%s)
export PYTHONPATH=.:/tmp/site AKA_HOME=/tmp/akah AKA_BWRAP=$PWD/.bwrap/bwrap PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > /tmp/pub/device-tests.txt 2>&1
python3 -c 'import torch,triton;print("torch",torch.__version__,"triton",triton.__version__)' >> /tmp/pub/device-tests.txt
timeout 480 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_unseen_gpu.py > /tmp/pub/gpu-tests.txt 2>&1
echo "T gpu tests exit $? in $(( $(date +%s) - began )) s: $(tail -n 1 /tmp/pub/gpu-tests.txt)" >> /tmp/pub/progress.txt
