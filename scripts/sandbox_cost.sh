#!/usr/bin/env bash
# The sandbox's cost on a full-suite run: `aka bench` over the same candidates with the sandbox and without,
# one run per entry of MODES (default: a warm-up that fills the per-candidate compiler caches both modes read,
# then without and with the sandbox), then a comparison of the last `none` and the last `bwrap` run.
# Device machine:  AKA_BWRAP=/tmp/bw/usr/bin/bwrap OUT=$OUT bash scripts/sandbox_cost.sh
# (MODES="bwrap" warms only; MODES="none bwrap" measures; AKA_HOME must persist between the two calls.)
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 AKA_HOME="${AKA_HOME:-/tmp/aka-home-sandbox-cost}"
OUT="${OUT:?set OUT to a results directory}"
mkdir -p "$OUT"
i=0
for mode in ${MODES:-bwrap none bwrap}; do
  i=$((i + 1))
  name="cost-$i-$mode"
  start=$(date +%s.%N)
  python3 -m aka_tui bench --candidates "${CANDIDATES:-kb/family}" --sandbox "$mode" --out "$OUT" --name "$name" \
    ${OPS:+--ops $OPS} ${BENCH_ARGS:-} > "$OUT/$name.txt" 2> "$OUT/$name.err"
  echo "$name: exit $?, $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s wall"
  grep -E "^S_agg|^sandbox:" "$OUT/$name.txt"
done
python3 scripts/sandbox_cost.py "$OUT"/cost-*.json
