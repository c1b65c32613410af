#!/usr/bin/env bash
# The evaluator-integrity measurements on the device machine (torch + triton + numpy + pytest; from the checkout).
# Usage: bash scripts/integrity_device.sh PHASE [PHASE...]; each phase writes under $OUT/integrity/<phase>/.
#   corpus        red-team corpus + honest kernels on one GPU, full tier, each against its expected verdict
#                 (scripts/redteam_table.py); CORPUS_ONLY=name,name restricts it (e.g. the cases added with the engine)
#   kb            every KB reference kernel, full tier, with every check: S to compare with BENCHMARKS.md
#   kb-unverified the same with --no-timed-verification (what the timed-call checks cost)
#   kb-both       kb on GPU 0 and kb-unverified on GPU 1 at once (a 2-GPU machine), then the comparison
#   cost          compare the kb and kb-unverified reports (and session 5's scores): scripts/engine_cost.py
set -uo pipefail
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
ROOT="${OUT:-/tmp/out}/integrity"
REFERENCE=docs/benchmarks/2026-11-30-h200-s5-optimize-score.json
mkdir -p "$ROOT"
bench() {  # $1 name, $2 gpu, rest: extra flags
  local name=$1 gpu=$2; shift 2
  mkdir -p "$ROOT/$name"
  CUDA_VISIBLE_DEVICES=$gpu AKA_HOME="$ROOT/$name/home" /usr/bin/time -f "$name wall %e s" \
    python3 -m aka_tui bench --candidates kb/family --out "$ROOT/$name" --name "$name" "$@" \
    > "$ROOT/$name/bench.txt" 2> "$ROOT/$name/bench.err"
  tail -32 "$ROOT/$name/bench.txt"; grep "wall" "$ROOT/$name/bench.err"
}
for phase in "$@"; do
  case "$phase" in
    corpus)
      mkdir -p "$ROOT/corpus"
      AKA_HOME="$ROOT/corpus/home" python3 scripts/redteam_table.py --device cuda \
        ${CORPUS_ONLY:+--only "$CORPUS_ONLY"} --json "$ROOT/corpus/corpus.json" | tee "$ROOT/corpus/corpus.md" ;;
    kb) bench kb "${GPU:-0}" ;;
    kb-unverified) bench kb-unverified "${GPU:-0}" --no-timed-verification ;;
    kb-both)
      bench kb 0 > "$ROOT/kb.log" 2>&1 &
      bench kb-unverified 1 --no-timed-verification > "$ROOT/kb-unverified.log" 2>&1 &
      wait; cat "$ROOT/kb.log" "$ROOT/kb-unverified.log"
      python3 scripts/engine_cost.py "$ROOT/kb/kb.json" "$ROOT/kb-unverified/kb-unverified.json" "$REFERENCE" ;;
    cost) python3 scripts/engine_cost.py "$ROOT/kb/kb.json" "$ROOT/kb-unverified/kb-unverified.json" "$REFERENCE" ;;
    *) echo "unknown phase $phase" ;;
  esac
done
