#!/usr/bin/env bash
# The evaluator-integrity measurements on the device machine (torch + triton + numpy + pytest; from the checkout).
# Usage: bash scripts/integrity_device.sh PHASE [PHASE...]; each phase writes under $OUT/integrity/<phase>/.
#   corpus        red-team corpus + honest kernels on one GPU, full tier, each against its expected verdict
#                 (scripts/redteam_table.py; ~15 s a case, 32 cases); CORPUS_ONLY=name,name restricts it
#   corpus-new    the 9 cases added with the engine + the 5 honest kernels (~4 min)
#   corpus-old    the 18 cases from before the engine (~5 min)
#   kb            every KB reference kernel, full tier, with every check: S to compare with BENCHMARKS.md
#   kb-unverified the same with --no-timed-verification (what the timed-call checks cost)
#   kb-both       kb on GPU 0 and kb-unverified on GPU 1 at once (a 2-GPU machine), then the comparison
#   cost          compare the kb and kb-unverified reports (and a stored reference report's scores): scripts/engine_cost.py
set -uo pipefail
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
ROOT="${OUT:-/tmp/out}/integrity"
REFERENCE=docs/benchmarks/2026-11-30-h200-s5-optimize-score.json
mkdir -p "$ROOT"
NEW_CASES=timed_previous_output,timed_partial_rows,stack_aware_partial_rows,audit_aware_fallback,forged_result_message
NEW_CASES=$NEW_CASES,forged_via_harness_sender,patched_harness_class,loosened_tolerance,seen_inputs_skip_work
HONEST_CASES=fused_add_rms_norm_honest,layer_norm_chunked,rms_norm_2d_grid,rms_norm_layout_ops,silu_and_mul_scratch
OLD_CASES=annotation_disguise,background_thread,cached_output,constant_output,lazy_tensor_subclass,matmul_in_forward
OLD_CASES=$OLD_CASES,mutates_input,partial_write,patched_cuda_event,patched_do_bench,patched_perf_counter
OLD_CASES=$OLD_CASES,returns_reference_result,saturation_aware_side_stream,shape_specialised,side_stream
OLD_CASES=$OLD_CASES,silent_fp16_downcast,torch_fallback,zero_output
corpus() {  # $1 name, $2 comma-separated cases (empty: all)
  mkdir -p "$ROOT/$1"
  AKA_HOME="$ROOT/$1/home" python3 scripts/redteam_table.py --device cuda ${2:+--only "$2"} \
    --json "$ROOT/$1/corpus.json" | tee "$ROOT/$1/corpus.md"
}
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
    corpus) corpus corpus "${CORPUS_ONLY:-}" ;;
    corpus-new) corpus corpus-new "$NEW_CASES,$HONEST_CASES" ;;
    corpus-old) corpus corpus-old "$OLD_CASES" ;;
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
