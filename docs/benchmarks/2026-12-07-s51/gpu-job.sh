#!/usr/bin/env bash
# Session 51's device job: this session's CPU agent sessions' 20 exports (.cands/pub51) scored in one run with
# the GPU tests (session 50's check), then, given `ties`, the faithful tie-breaking candidate evaluated 12 times.
#   bash scripts/detached_device.sh start /tmp/chk 540 docs/benchmarks/2026-12-07-s51/gpu-job.sh [ties]
set -u
CANDS=.cands/pub51 bash docs/benchmarks/2026-12-07-s50/gpu-check.sh
[ "${1:-}" = ties ] || exit 0
export PYTHONPATH=. AKA_HOME=/tmp/akah AKA_BWRAP=$PWD/.bwrap/bwrap PYTHONUNBUFFERED=1
began=$(date +%s)
timeout 300 python3 docs/benchmarks/2026-12-07-s51/tie_repeat.py 12 > /tmp/chk/tie-repeat.txt 2>&1
echo "R ties in $(( $(date +%s) - began )) s: $(tail -n 1 /tmp/chk/tie-repeat.txt)" >> /tmp/chk/progress.txt
