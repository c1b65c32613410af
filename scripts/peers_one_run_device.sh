#!/usr/bin/env bash
# On a GPU machine: every peer table in one run each — the library comparison (`aka bench libraries`: Liger-Kernel
# where installed, torch.matmul, torch._scaled_mm, SDPA), then one `aka bench run` over the whole suite with the
# eager, torch.compile and max-autotune peers, operators in order of weight (the report is checkpointed after every
# shape, so a run cut short keeps what it measured, the heaviest operators first). Such a run outlasts a device
# command (about 15 s an operator for the candidate's worker and 15-25 s for the peers' on an H200): start it with
# scripts/detached_device.sh and wait for it over several calls:
#   bash scripts/detached_device.sh start /tmp/peers 560 scripts/peers_one_run_device.sh CANDIDATES /tmp/peers
#   bash scripts/detached_device.sh wait /tmp/peers 560      # the next calls, until JOB-DONE
# Env: SUITE (default the shipped problems/), WHEELS (a folder of wheels to install first, e.g. .whl with
# liger-kernel), BENCH_ARGS (extra `bench run` arguments), AKA_HOME, AKA_BWRAP as for any run.
set -u
cands="${1:?candidate directory}" out="${2:?results directory}"
suite="${SUITE:-problems}"
mkdir -p "$out"
if [ -n "${WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$WHEELS"/*.whl > "$out/pip.txt" 2>&1 && export PYTHONPATH="${PYTHONPATH:-.}:/tmp/site"
fi
export PYTHONPATH="${PYTHONPATH:-.}" PYTHONUNBUFFERED=1
{ nvidia-smi -L; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } \
  > "$out/device.txt" 2>&1
cat "$out/device.txt" >> "$out/progress.txt"
# the suite's operators by weight, as its loader reads them (problem.json, or an importance file beside the suite)
ops=$(python3 -c 'import sys
from aka_tui.bench.problem.lookup import load_suite
problems = load_suite(sys.argv[1]).problems
print(",".join(sorted(problems, key=lambda name: -problems[name].importance)))' "$suite")
t0=$(date +%s); echo "libraries start $(date -u +%H:%M:%S)" >> "$out/progress.txt"
# five rounds: a round's host time per call moves by a third between rounds on a shared host (H100, session 42:
# the same SiLU call read 45.6-64.0 us in three rounds), and the end-to-end ratios are medians of rounds
timeout -s INT 420 python3 -m aka_tui bench libraries "$cands" --suite "$suite" --shapes all --sandbox none \
  --rounds 5 --out "$out" --name libraries > "$out/libraries.txt" 2>&1
echo "libraries rc=$? $(( $(date +%s) - t0 )) s" >> "$out/progress.txt"
t0=$(date +%s); echo "suite start $(date -u +%H:%M:%S): $ops" >> "$out/progress.txt"
# shellcheck disable=SC2086
timeout -s INT 3000 python3 -m aka_tui bench run --suite "$suite" --candidates "$cands" --ops "$ops" \
  --compare-eager --compare-compile --compare-compile-max-autotune --cases 1 --shape-timeout 200 \
  --precompile-workers 14 ${BENCH_ARGS:-} --out "$out" --name peers > "$out/peers.txt" 2>&1
echo "suite rc=$? $(( $(date +%s) - t0 )) s" >> "$out/progress.txt"
grep -E "S_agg|pass rates|correct-and-real" "$out/peers.txt" | head -5 >> "$out/progress.txt"
