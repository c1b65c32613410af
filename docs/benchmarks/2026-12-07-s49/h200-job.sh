#!/usr/bin/env bash
# H200 (session 49): the offline agent on the 20 published operators, one iteration each (the fp8 GEMM starts
# from its accuracy step), its exports in one scoring run; then, given the argument 1, session 48's
# fp8 MoE probes; given 0 as a second argument, the sessions alone (their own table). With `1 1` it is session
# 48's job (docs/benchmarks/2026-12-06-s48/h200-job.sh runs it so); the parts are optional for a device budget
# that failed starts have cut.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/gitpython*.whl .whl/gitdb*.whl .whl/smmap*.whl > /tmp/pub/pip.txt 2>&1
export PYTHONPATH=.:/tmp/site AKA_HOME=/tmp/akah AKA_BWRAP=$PWD/.bwrap/bwrap PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee /tmp/pub/device.txt
python3 -c 'import torch,triton,git;print("torch",torch.__version__,"triton",triton.__version__,"git",git.__version__)' | tee -a /tmp/pub/device.txt
began=$(date +%s); echo "B2 agent start $(date -u +%H:%M:%S)" >> /tmp/pub/progress.txt
OUT=/tmp/pub/agent SHARDS=10 SHARD_TIMEOUT=560 OPT_ARGS="--iterations 1 --wall-time 120 --cases 1 --remeasure-rounds 0 --no-baseline --no-kb --transfer-budget 60 --op-timeout 270" \
  SESSIONS=/tmp/pub/agent-sessions CANDS=/tmp/pub/agent-cands bash scripts/optimize_suite_device.sh agent .atrex > /tmp/pub/agent-run.txt 2>&1
echo "B2 agent exit $? in $(( $(date +%s) - began )) s; $(ls /tmp/pub/agent-cands | wc -l) exported" >> /tmp/pub/progress.txt
[ "${2:-1}" = 1 ] || { echo "B2 scoring run skipped" >> /tmp/pub/progress.txt; exit 0; }
began=$(date +%s)
python3 -m aka_tui bench run --suite .atrex --candidates /tmp/pub/agent-cands --cases 1 --shape-timeout 60 \
  --out /tmp/pub --name agent1-h200 > /tmp/pub/agent-score-log.txt 2>&1
echo "B2 score exit $? in $(( $(date +%s) - began )) s" >> /tmp/pub/progress.txt
grep -E "S_agg|correct-and-real" /tmp/pub/agent-score-log.txt | head -3 >> /tmp/pub/progress.txt
[ "${1:-0}" = 1 ] || { echo "D probes skipped" >> /tmp/pub/progress.txt; exit 0; }
C=.cands/pub45/fp8_blockscale_fused_moe.py P=.atrex/fp8_blockscale_fused_moe
timeout 150 python3 docs/benchmarks/2026-12-06-s48/moe_nan_probe.py $P $C 1 655245665 > /tmp/pub/moe-nan-probe.txt 2>&1
echo "D nan probe done $(date -u +%H:%M:%S)" >> /tmp/pub/progress.txt
timeout 150 python3 docs/benchmarks/2026-12-06-s48/moe_mem_probe.py $P 2 > /tmp/pub/moe-mem-probe-2alone.txt 2>&1
timeout 150 python3 docs/benchmarks/2026-12-06-s48/moe_mem_probe.py $P 1 2 3 > /tmp/pub/moe-mem-probe.txt 2>&1
echo "D mem probes done $(date -u +%H:%M:%S)" >> /tmp/pub/progress.txt
timeout 120 python3 -m aka_tui eval $C --problem $P --shape 2 --cases 1 --fuzz 0 --shape-timeout 110 > /tmp/pub/moe-shape2.txt 2>&1
echo "D done" >> /tmp/pub/progress.txt
