#!/usr/bin/env bash
# The peer table on a GPU machine: candidates timed side by side with eager, torch.compile and
# torch.compile(mode="max-autotune-no-cudagraphs), one `aka bench run` per group of operators, groups run in
# order until a deadline (a device command has a time limit, and one run over a whole suite with three peers
# takes longer). Each group writes its own report; `aka bench rescore` merges them into one table.
#   DEADLINE_S=560 OUT=… bash scripts/peers_table_device.sh CANDIDATES "op1,op2" "op3,op4" …
# Env: OUT (results), SUITE (default the shipped problems/), DEADLINE_S (seconds from the start after which no
# group starts and the running one is stopped; default 560), BENCH_ARGS (default below), PACK=1 (every file the
# groups wrote goes into $OUT/peers.tgz and only the merged table stays beside it: a device command returns a
# bounded number of files, and each group writes several).
set -uo pipefail
cands="${1:?candidate directory}"; shift
export PYTHONPATH="${PYTHONPATH:-.}" PYTHONUNBUFFERED=1 AKA_HOME="${AKA_HOME:-/tmp/aka-home-peers}"
OUT="${OUT:?set OUT to a results directory}" DEADLINE_S="${DEADLINE_S:-560}"
BENCH_ARGS="${BENCH_ARGS:---compare-eager --compare-compile --compare-compile-max-autotune --cases 1 --shape-timeout 200}"
suite_args=()
[ -n "${SUITE:-}" ] && suite_args=(--suite "$SUITE")
mkdir -p "$OUT"
began=$(date +%s)
k=0
for ops in "$@"; do
  k=$((k + 1))
  left=$(( DEADLINE_S - ($(date +%s) - began) ))
  if [ "$left" -le 30 ]; then echo "group $k ($ops): not started, ${left} s left"; continue; fi
  t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout "$left" python3 -m aka_tui bench run "${suite_args[@]}" --candidates "$cands" --ops "$ops" $BENCH_ARGS \
    --out "$OUT" --name "peers-g$k" > "$OUT/peers-g$k.txt" 2>&1
  echo "group $k ($ops): exit $? in $(( $(date +%s) - t0 )) s"
done
reports=$(ls "$OUT"/peers-g*.json 2>/dev/null | sort -V)
if [ -n "$reports" ]; then
  # shellcheck disable=SC2086
  python3 -m aka_tui bench rescore "${suite_args[@]}" $reports --out "$OUT" --name peers-merged > "$OUT/peers-merged.txt" 2>&1
  tail -40 "$OUT/peers-merged.txt"
fi
echo "all groups: $(( $(date +%s) - began )) s"
if [ "${PACK:-0}" = 1 ]; then
  tar czf "$OUT/peers.tgz" -C "$OUT" $(cd "$OUT" && ls | grep -v '^peers.tgz$') && \
    find "$OUT" -maxdepth 1 -type f ! -name peers.tgz ! -name peers-merged.md -delete
  echo "packed: $OUT/peers.tgz"
fi
