#!/usr/bin/env bash
# The offline agent over a whole suite directory on one GPU machine, in two phases (one device command each):
#   agent  SUITE  — SHARDS (default 7) `aka optimize --suite` runs at once, each on every SHARDS-th operator
#                   (their evaluations share the GPU, so their timings are only good for the loop's own choices),
#                   then the table from the sessions (`--score-only`) and every session's incumbent exported as
#                   CANDS/<op>.py;
#   score  SUITE  — those incumbents timed alone: `aka bench --candidates CANDS` (the figures to report).
# Env: OUT (results), SESSIONS (default /tmp/aka-suite-sessions), CANDS (default /tmp/aka-suite-cands),
# OPT_ARGS (budgets, default below), SHARD_TIMEOUT (seconds a shard may run before it is stopped; its sessions
# keep every finished iteration; default none), BENCH_ARGS. GitPython must be importable (carried wheels, see BENCHMARKS).
set -uo pipefail
phase="${1:?agent or score}" suite="${2:?suite directory}"
export PYTHONPATH="${PYTHONPATH:-.}" PYTHONUNBUFFERED=1 AKA_HOME="${AKA_HOME:-/tmp/aka-home-suite}"
OUT="${OUT:?set OUT to a results directory}"
SESSIONS="${SESSIONS:-/tmp/aka-suite-sessions}" CANDS="${CANDS:-/tmp/aka-suite-cands}" SHARDS="${SHARDS:-7}"
OPT_ARGS="${OPT_ARGS:---iterations 2 --wall-time 60 --cases 1 --remeasure-rounds 0 --no-baseline --no-kb \
--transfer-budget 60 --op-timeout 165}"
mkdir -p "$OUT" "$SESSIONS" "$CANDS"
case $phase in
agent)
  began=$(date +%s)
  for k in $(seq 1 "$SHARDS"); do
    # shellcheck disable=SC2086
    OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" ${SHARD_TIMEOUT:+timeout "$SHARD_TIMEOUT"} python3 -m aka_tui optimize --suite "$suite" $OPT_ARGS \
      --shard "$k/$SHARDS" --sessions "$SESSIONS" > "$OUT/agent-shard$k.txt" 2>&1 &
  done
  wait
  echo "agent: $SHARDS shards in $(( $(date +%s) - began )) s"
  python3 -m aka_tui optimize --suite "$suite" --score-only --sessions "$SESSIONS" > "$OUT/agent-table.txt" 2>&1
  for session in "$SESSIONS"/*/; do
    op=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["problem"])' "$session/session.json" \
         2>/dev/null) || continue
    python3 -m aka_tui export "$session" --sessions "$SESSIONS" --out "$CANDS/$op.py" >> "$OUT/agent-export.txt" 2>&1 \
      || python3 -m aka_tui export "$session" --sessions "$SESSIONS" --iteration 1 --out "$CANDS/$op.py" \
         >> "$OUT/agent-export.txt" 2>&1  # the starting kernel, for the bench run to judge alone
  done
  tar czf "$OUT/agent-sessions.tgz" -C "$(dirname "$SESSIONS")" "$(basename "$SESSIONS")" "$(basename "$CANDS")" \
    2>/dev/null || tar czf "$OUT/agent-sessions.tgz" -C "$(dirname "$SESSIONS")" "$(basename "$SESSIONS")"
  cat "$OUT/agent-table.txt"
  # one file for the logs: a device command brings back only a few files
  (cd "$OUT" && tar czf agent-logs.tgz agent-shard*.txt agent-table.txt agent-export.txt \
     && rm -f agent-shard*.txt agent-export.txt)
  ;;
score)
  # shellcheck disable=SC2086
  python3 -m aka_tui bench --suite "$suite" --candidates "$CANDS" --out "$OUT" --name incumbents \
    ${BENCH_ARGS:-} > "$OUT/incumbents.txt" 2>&1
  echo "bench exit $?"; tail -40 "$OUT/incumbents.txt"
  ;;
*) echo "phase: agent or score"; exit 2 ;;
esac
