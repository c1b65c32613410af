#!/usr/bin/env bash
# Session 52 on a GPU that is not the H200: the GPU tests of the case-building paths and of the made-up operators
# seeded on CUDA, then the library comparison (Liger-Kernel from the carried wheel, five interleaved rounds).
#   bash scripts/detached_device.sh start /tmp/pub 540 docs/benchmarks/2026-12-07-s52/h100-job.sh
set -u
mkdir -p /tmp/pub
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl > /tmp/pub/pip.txt 2>&1
bash docs/benchmarks/2026-12-07-s52/gpu-job.sh tests
export PYTHONPATH=.:/tmp/site AKA_HOME=/tmp/akah AKA_BWRAP=$PWD/.bwrap/bwrap PYTHONUNBUFFERED=1
began=$(date +%s)
timeout -s INT 360 python3 -m aka_tui bench libraries kb/family --suite problems --shapes all --sandbox none \
  --rounds 5 --out /tmp/pub --name libraries > /tmp/pub/libraries.txt 2>&1
echo "L libraries exit $? in $(( $(date +%s) - began )) s" >> /tmp/pub/progress.txt
