#!/usr/bin/env bash
# The sandbox's and the timed-call checks' cost on a full-suite run: `aka bench` over the same candidates, one
# run per entry of MODES (default: a warm-up that fills the per-candidate compiler caches every mode reads, then
# without and with the sandbox), then the comparisons. An entry is `none`, `bwrap`, or `bwrap-unverified`
# (bwrap with --no-timed-verification). BUDGET_S (default 560) stops starting a run that would, at the last
# run's pace, end past it.
# Device machine:  AKA_BWRAP=$PWD/.bwrap/bwrap OUT=$OUT bash scripts/sandbox_cost.sh
# (MODES="bwrap" warms only; MODES="none bwrap bwrap-unverified" measures; AKA_HOME must persist between calls.)
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 AKA_HOME="${AKA_HOME:-/tmp/aka-home-sandbox-cost}"
OUT="${OUT:?set OUT to a results directory}"
BUDGET_S="${BUDGET_S:-560}"
mkdir -p "$OUT"
i=0 began=$(date +%s) last=0 sandboxed=() plain=() unverified=()
for mode in ${MODES:-bwrap none bwrap}; do
  now=$(date +%s)
  if (( now - began + last > BUDGET_S )); then echo "budget: not starting $mode"; break; fi
  i=$((i + 1))
  name="cost-$i-$mode"
  flags=(--sandbox "${mode%-unverified}")
  [[ $mode == *-unverified ]] && flags+=(--no-timed-verification)
  python3 -m aka_tui bench --candidates "${CANDIDATES:-kb/family}" "${flags[@]}" --out "$OUT" --name "$name" \
    ${OPS:+--ops $OPS} ${BENCH_ARGS:-} > "$OUT/$name.txt" 2> "$OUT/$name.err"
  code=$?
  last=$(( $(date +%s) - now ))
  echo "$name: exit $code, ${last} s wall; $(grep -E '^S_agg' "$OUT/$name.txt" | head -1)"
  case $mode in none) plain+=("$OUT/$name.json") ;; bwrap) sandboxed+=("$OUT/$name.json") ;;
    *) unverified+=("$OUT/$name.json") ;; esac
done
if (( ${#plain[@]} && ${#sandboxed[@]} )); then python3 scripts/sandbox_cost.py "${plain[@]}" "${sandboxed[@]}"; fi
if (( ${#unverified[@]} && ${#sandboxed[@]} )); then
  python3 scripts/engine_cost.py "${sandboxed[-1]}" "${unverified[-1]}" | tail -8
fi
