#!/usr/bin/env bash
# GPU verification phases for the device machine (torch + triton + numpy only; run from the checkout).
# Usage: bash scripts/device_phases.sh PHASE [PHASE...]; every phase writes under $OUT/<phase>/ and all of
# it is tarred into $OUT/results.tgz at the end (the device returns few files), with $OUT/summary.txt.
#   compile   compile baseline, whole suite full tier, caches warmed in parallel, all visible GPUs
#   redteam   GPU tests + red-team corpus, split across two GPUs (one pytest per GPU)
#   kernels   every KB reference kernel on the full tier, all visible GPUs, with eager timings
#   eager12   eager baseline with --gpus 1, then --gpus 2 (executor speed-up, issue 9); T_eager12 limits each run:
#             give it >= 330 (session 3: ~12 s per op on one GPU, 22 ops)
#   ablation  optimization dropout on (GPU 0) vs off (GPU 1), offline proposer, same budget (issue 5)
#   trace     `aka trace record` on cuda (issue 7)
#   library   issue 8's bars on GPU 0: the KB kernels of the two GEMMs and prefill attention against
#             torch.matmul / torch._scaled_mm / SDPA, largest and weighted full shapes, interleaved timing
#   split     GPU 0: compile baseline of $COMPILE_OPS; GPU 1: KB kernels of $KERNEL_OPS (in that order)
#   integrity the two GPU tests fixed after session 2, the eager reference evaluated as a candidate (its
#             own_share must say fallback) and the hardening cost of one honest kernel on the GPU
#   moecompile compile baseline of moe_fused_experts alone, its full shapes split over the GPUs (each
#             shape recompiles per routing until dynamo's recompile limit), merged into one report;
#             $MOE_GPU1_FIRST names a phase the second GPU runs (pinned to it) before its part
#   optimize  `aka optimize --proposer offline` on every op ($OPT_ITERS iterations), ops split over the GPUs,
#             then the best kernel of each session benched on the full tier (issues 5 and 8); $OPT_OPS
#             (space-separated) restricts the ops; OPT_BENCH=0 skips the bench (the sessions hold S and own_share);
#             OPT_SCORE=1 scores the sessions (`aka sessions --score`) into optimize-score.{json,md}
#   sweep     `aka kb sweep` (coordinate search of the KB kernels' tunables, one check per configuration, the
#             evaluator's timer) of $SWEEP_OPS on the weighted and the largest full shapes, ops split over the
#             visible GPUs (one process per GPU, CUDA_VISIBLE_DEVICES), merged into sweep.json/.md; stops
#             starting configurations 30 s before T_sweep. $SWEEP_MAX_CONFIGS (24), $SWEEP_SHAPES, $SWEEP_TIER,
#             $SWEEP_ARGS (extra flags, e.g. --device cpu for a dry run)
#   gputiming the saturated timing pass and the stream guard on GPU 0: their GPU tests, the side-stream red-team
#             cases, and the layer_norm KB kernel's per-shape medians (saturated vs host-bound) from `aka eval`
#   gridsweep restricted sweeps of the kernels far from issue 8's bars: GPU 0 the fp8 GEMM (grid over tile,
#             warps, stages) then MLA decode (grid over heads per program, partition, warps); GPU 1
#             moe_fused_experts (coordinate); each op gets its share of T_gridsweep
#   ceiling   GPU 0: copy bandwidth at the size of each memory-bound op's largest full shape, with the
#             evaluator's timer (scripts/copy_ceiling.py), next to the calibrated 4 GiB copy
#   ab        A/B sweeps of this session's kernel changes against the old defaults (scripts/ab_spaces.py pins the
#             other tunables): GPU 0 the fp8 GEMM's PREFETCH_SCALES, MLA decode's BLOCK_H x num_warps, then the
#             library comparison; GPU 1 the quant kernels' HW_CAST and moe_fused_experts' tiles x decode regime
#   ab2       the next A/Bs, prepared after session 4 from the compiled sm_90 code: GPU 0 MLA decode's PAGE_TILE x
#             BLOCK_N, the fp8 GEMM's stages x warps with the scalar-scale loop; GPU 1 the bf16 GEMM's M-regime
#             switch (LARGE_M_MIN 0 vs 2048), gated_rms_norm's rows per program x warps
#   probes    GPU 0: scripts/bound_probes.py (knock-out variants of the fp8 GEMM and MLA decode: what bounds them);
#             GPU 1: A/Bs of session 5's changes: gated_rms_norm's wide-group regime x rows per program, MLA
#             decode's PARTITION x num_stages with the PAGE_TILE defaults
#   ab3       GPU 0: the fp8 GEMM's SCALE_T x PREFETCH_SCALES, then sampling_top_k_top_p's $SAMPLING_AB (A/B flags
#             NAME=V1,V2 of the split-row redesign); GPU 1: MLA decode's BLOCK_N x num_stages x num_warps
#   ab4       GPU 0: the library comparison, then sampling_top_k_top_p's $SAMPLING_AB; GPU 1: MLA decode's
#             BLOCK_N x num_stages x num_warps
#   ncu       Nsight Compute (clock control off) on one launch of a KB kernel per $NCU_TARGETS entry
#             (OP:SHAPE:KERNEL-REGEX, space-separated), sections speed of light, memory, occupancy, launch,
#             warp state, scheduler; text reports ncu-OP-SHAPE.txt (works where the runtime is Firecracker)
#   ab5       GPU 0: the fp8 GEMM's BLOCK_M x num_warps x num_stages with SCALE_T, then sampling_top_k_top_p's
#             $SAMPLING_AB; GPU 1: MLA decode's BALANCED x PROGRAMS_PER_SM on every full shape
#   ab6       GPU 0: the fp8 GEMM's TMA x num_stages, then sampling_top_k_top_p's $SAMPLING_AB; GPU 1: MLA
#             decode (BALANCED) BLOCK_N x num_warps x num_stages on the weighted and the longest-context shape
#   ab7       GPU 0: the fp8 GEMM's TMA kernel, BLOCK_M x num_warps x num_stages x GROUP_M; GPU 1 sampling_top_k_top_p's
#             $SAMPLING_AB on every full shape
#   ab8       GPU 0: sampling_top_k_top_p old (SPLIT_ROWS 0) vs the split-row redesign on every full shape, then
#             the library comparison; GPU 1: the split-row path's EARLY_WRITE x SLICE x TOPP_CELL x TOPP_PIVOTS
#   sets      GPU 0: scripts/input_set_times.py on $SETS_TARGETS (OP:SHAPE, space-separated): each timing input set
#             alone, then each row of the slowest set alone (input-dependent slow cases)
#   ab9       GPU 0: sampling_top_k_top_p's TOPK_PIVOTS 3, 4, 6, 8 on every full shape; GPU 1: each timing input set of the
#             weighted shape alone at each TOPK_PIVOTS (an outlier row max pushed t_k below a 3-cell window)
# Phases that run `aka optimize` need GitPython: carry .whl (see scripts/README or docs/install.md).
set -uo pipefail
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
ROOT="$OUT"
SECONDS_LEFT=${PHASE_TIMEOUT:-300}
run_compile() {
  /usr/bin/time -f "compile baseline wall %e s" timeout "$1" python3 -m aka_tui bench --baseline compile \
    --precompile-workers 16 --out "$2" > "$2/compile.txt" 2> "$2/compile.err"
  tail -30 "$2/compile.txt"; grep "wall" "$2/compile.err"
}
run_redteam() {
  python3 -m pytest -q -m gpu tests/gpu tests/redteam -p no:cacheprovider --collect-only 2>/dev/null \
    | grep '::' > "$2/ids.txt"
  for g in 0 1; do
    ( awk -v g=$g 'NR % 2 == g' "$2/ids.txt" > "$2/ids$g.txt"
      CUDA_VISIBLE_DEVICES=$g AKA_HOME="$2/home$g" timeout "$1" python3 -m pytest -q -m gpu -p no:cacheprovider \
        $(cat "$2/ids$g.txt") > "$2/gpu$g.txt" 2>&1 ) &
  done
  wait; for g in 0 1; do echo "-- GPU $g"; tail -n 15 "$2/gpu$g.txt"; done
}
run_kernels() {
  timeout "$1" python3 -m aka_tui bench --candidates kb/family --compare-eager --out "$2" --name kb-kernels-full \
    > "$2/kb-kernels.txt" 2> "$2/kb-kernels.err"; tail -32 "$2/kb-kernels.txt"
}
run_library() {
  CUDA_VISIBLE_DEVICES=${LIB_GPU:-0} /usr/bin/time -f "library compare wall %e s" timeout "$1" python3 -m aka_tui bench \
    --library-compare --shapes largest,weighted --out "$2" --name library-compare > "$2/library.txt" 2> "$2/library.err"
  cat "$2/library.txt"; grep wall "$2/library.err"
}
run_eager12() {
  for n in 1 2; do /usr/bin/time -f "eager --gpus $n wall %e s" timeout "$1" python3 -m aka_tui bench \
    --baseline eager --gpus $n --out "$2" --name eager-gpus$n > "$2/eager$n.txt" 2> "$2/eager$n.err"
    tail -4 "$2/eager$n.txt"; grep wall "$2/eager$n.err"; done
}
run_ablation() {
  ops=${ABLATION_OPS:-rms_norm silu_and_mul quant_fp8_per_token_group}; per_op=$(( $1 / $(echo $ops | wc -w) ))
  for g in 0 1; do
    ( p=$([ $g = 0 ] && echo 0.5 || echo 0.0)
      for op in $ops; do
        CUDA_VISIBLE_DEVICES=$g timeout $per_op python3 -m aka_tui optimize "$op" --proposer offline \
          --iterations ${ABLATION_ITERS:-5} --wall-time $(( per_op - 45 )) --dropout $p --seed ${ABLATION_SEED:-7} \
          --sessions "$2/sessions-p$p" --no-propose --no-kb \
          > "$2/$op-p$p.txt" 2>&1; tail -3 "$2/$op-p$p.txt"; done ) &
  done
  wait
}
run_split() {
  ( CUDA_VISIBLE_DEVICES=0 timeout "$1" python3 -m aka_tui bench --baseline compile --ops "$COMPILE_OPS" \
      --precompile-workers 6 --out "$2" --name compile-ops > "$2/compile.txt" 2> "$2/compile.err"
    tail -n 12 "$2/compile.txt" ) &
  ( CUDA_VISIBLE_DEVICES=1 timeout "$1" python3 -m aka_tui bench --candidates kb/family --compare-eager \
      --ops "$KERNEL_OPS" --out "$2" --name kb-kernels > "$2/kernels.txt" 2> "$2/kernels.err"
    tail -n 30 "$2/kernels.txt" ) &
  wait
}
run_integrity() {
  python3 -m pytest -q -m gpu -p no:cacheprovider \
    "tests/gpu/test_gpu_eval.py::test_correct_triton_rms_norm_is_real_and_timed_with_events" \
    "tests/redteam/test_redteam.py::test_corpus_on_gpu[silent_fp16_downcast]" > "$2/tests.txt" 2>&1
  tail -n 3 "$2/tests.txt"
  python3 -m aka_tui eval problems/rms_norm/reference.py --problem rms_norm --json "$2/reference-as-candidate.json" \
    > "$2/reference.txt" 2>&1; tail -n 8 "$2/reference.txt"
  for h in "" "--no-hardening"; do /usr/bin/time -f "rms_norm KB kernel eval $h: %e s" timeout "$1" python3 -m aka_tui \
    eval kb/family/norm/rms_norm.py --problem rms_norm $h > /dev/null; done 2>&1 | tee "$2/hardening-cost.txt"
}
run_optimize() {
  ops=${OPT_OPS:-$(python3 -c "from aka_tui.bench.problem import load_suite; print(' '.join(load_suite('problems').problems))")}
  n=$(python3 -c "import torch; print(max(1, torch.cuda.device_count()))")
  per_op=$(( $1 * n / $(echo $ops | wc -w) ))
  # The loop ends itself within --wall-time (it starts no iteration predicted not to fit); 15 s are left for
  # process start-up and the report, and timeout stays as the safety net (a slot under 35 s still gets 20 s
  # of loop, so such an op can take 35 s).
  wall=$(( per_op - 15 )); [ $wall -ge 20 ] || wall=20
  for g in $(seq 0 $((n - 1))); do
    ( i=0; for op in $ops; do
        if [ $((i % n)) = $g ]; then
          CUDA_VISIBLE_DEVICES=$g timeout $(( wall + 15 )) python3 -m aka_tui optimize "$op" --proposer offline --no-kb \
            --iterations ${OPT_ITERS:-6} --wall-time $wall --seed 1 --sessions "$2/sessions" --no-propose > "$2/$op.txt" 2>&1
          best=$(grep -o "best kernel: [^ ]*" "$2/$op.txt" | cut -d' ' -f3)
          mkdir -p "$2/best"; [ -n "$best" ] && cp "$best" "$2/best/$op.py"
          echo "$op: $(grep -E 'done:' "$2/$op.txt" | tail -n 1)"
        fi; i=$((i + 1)); done ) &
  done
  wait
  if [ "${OPT_SCORE:-0}" = 1 ]; then  # score the recorded sessions here (the sessions themselves stay behind)
    timeout 120 python3 -m aka_tui sessions --score --sessions "$2/sessions" --out "$2" --name optimize-score \
      > "$2/score.txt" 2>&1; tail -n 30 "$2/score.txt"
  fi
  [ "${OPT_BENCH:-1}" = 1 ] || return 0
  timeout 240 python3 -m aka_tui bench --candidates "$2/best" --ops "$(echo $ops | tr ' ' ,)" --compare-eager \
    --out "$2" --name optimized-best \
    > "$2/bench.txt" 2> "$2/bench.err"; tail -n 30 "$2/bench.txt"
}
run_moecompile() {
  n=$(python3 -c "import torch; print(max(1, torch.cuda.device_count()))")
  python3 scripts/split_suite.py problems moe_fused_experts "$n" "$2"
  for g in $(seq 0 $((n - 1))); do
    ( if [ "$g" = 1 ] && [ -n "${MOE_GPU1_FIRST:-}" ]; then mkdir -p "$ROOT/$MOE_GPU1_FIRST"
        budget_var="T_${MOE_GPU1_FIRST}"; CUDA_VISIBLE_DEVICES=1 "run_$MOE_GPU1_FIRST" "${!budget_var:-$1}" \
          "$ROOT/$MOE_GPU1_FIRST" > "$2/gpu1-first.txt" 2>&1; cat "$2/gpu1-first.txt"; fi
      CUDA_VISIBLE_DEVICES=$g /usr/bin/time -f "GPU $g wall %e s" timeout "${MOE_T:-$1}" python3 -m aka_tui bench \
        --suite "$2/suite$g" --baseline compile --ops moe_fused_experts --shape-timeout "${MOE_SHAPE_T:-180}" \
        --out "$2" --name moe-compile-part$g > "$2/part$g.txt" 2> "$2/part$g.err"
      tail -n 4 "$2/part$g.txt"; grep wall "$2/part$g.err" ) &
  done
  wait
  python3 scripts/split_suite.py --merge problems "$2/moe-compile" "$2"/moe-compile-part*.json
}
run_sweep() {
  ops=${SWEEP_OPS:-quant_fp8_per_token quant_fp8_per_token_group layer_norm qk_head_norm kv_cache_write gated_rms_norm attention_mla_decode}
  n=$(python3 -c "import torch; print(max(1, torch.cuda.device_count()))")
  budget=$(( $1 > 90 ? $1 - 30 : $1 * 2 / 3 ))
  for g in $(seq 0 $((n - 1))); do
    ( mine=$(echo $ops | tr ' ' '\n' | awk -v n="$n" -v g="$g" '(NR - 1) % n == g' | tr '\n' ' ')
      [ -n "${mine// /}" ] || exit 0
      CUDA_VISIBLE_DEVICES=$g timeout "$1" python3 -m aka_tui kb sweep $mine --shapes "${SWEEP_SHAPES:-weighted,largest}" \
        --tier "${SWEEP_TIER:-full}" --max-configs "${SWEEP_MAX_CONFIGS:-24}" --budget-s "$budget" ${SWEEP_ARGS:-} \
        --out "$2" --name "sweep-gpu$g" > "$2/gpu$g.txt" 2> "$2/gpu$g.err"
      echo "-- GPU $g ($mine): exit $?"; grep -E "^(recommended|[a-z0-9_]+: (recommended|keep|ERROR|WARNING))" "$2/gpu$g.txt" ) &
  done
  wait
  ls "$2"/sweep-gpu*.json > /dev/null 2>&1 && python3 -c "import sys
from aka_tui.tuning.report import merge_reports, render_text, write_report
r = merge_reports(sorted(sys.argv[2:])); write_report(r, sys.argv[1], 'sweep'); print(render_text(r))" \
    "$2" "$2"/sweep-gpu*.json
}
run_gputiming() {
  CUDA_VISIBLE_DEVICES=0 timeout "$1" python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gpu_timing.py \
    "tests/redteam/test_redteam.py::test_corpus_on_gpu[saturation_aware_side_stream]" \
    "tests/redteam/test_redteam.py::test_corpus_on_gpu[side_stream]" \
    "tests/redteam/test_redteam.py::test_corpus_on_gpu[rms_norm_2d_grid]" > "$2/tests.txt" 2>&1
  tail -n 5 "$2/tests.txt"
  CUDA_VISIBLE_DEVICES=0 timeout "$1" python3 -m aka_tui eval kb/family/norm/layer_norm.py --problem layer_norm \
    --json "$2/layer_norm.json" > "$2/layer_norm.txt" 2>&1
  python3 - "$2/layer_norm.json" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))["shapes"]:
    t = s.get("timing") or {}
    if t:
        print(f"{s['shape_id'][:40]:40s} saturated={t.get('saturated')} median {t.get('median_ms')} ms "
              f"(p20 {t.get('p20_ms')}, p80 {t.get('p80_ms')}) host-bound {t.get('host_bound_median_ms')} "
              f"{t.get('saturation_note') or ''}")
PY
}
run_gridsweep() {
  sw() { CUDA_VISIBLE_DEVICES=$1 timeout "$3" python3 -m aka_tui kb sweep "$2" --shapes weighted,largest \
      --max-configs 24 --budget-s $(( $3 - 20 )) --out "$OUT_DIR" --name "sweep-$2" "${@:4}" > "$OUT_DIR/$2.txt" 2>&1
    echo "-- $2: exit $?"; grep -E "^$2: (recommended|keep|ERROR)" "$OUT_DIR/$2.txt"; }
  OUT_DIR=$2; half=$(( $1 / 2 ))
  ( sw 0 gemm_fp8_blockscale $half --strategy grid --space BLOCK_M=64,128 --space BLOCK_N=128,256 \
      --space BLOCK_K=128 --space GROUP_M=8 --space SPLIT_K=1 --space UPCAST=0 --space num_warps=4,8 \
      --space num_stages=3,4
    sw 0 attention_mla_decode $half --strategy grid --space BLOCK_H=16,32 --space PARTITION=256,512,1024 \
      --space num_warps=4,8 --space SPLIT_KV=1 --space BLOCK_N=32 --space BLOCK_S=8 --space num_stages=2 ) &
  ( sw 1 moe_fused_experts $(( $1 - 10 )) --space BLOCK_M=32,64,128 --space BLOCK_N=64,128,256 \
      --space BLOCK_K=64,128 --space DOWN_BLOCK_N=64,128,256 --space DOWN_BLOCK_K=64,128 --space GROUP_M=8 \
      --space PAIR_FP32=0 --space ROUTE_CHUNK=1024 --space num_stages=2,3,4 ) &
  wait
  grep -hE "^[a-z0-9_]+ {2,}[a-z0-9_.]+ " "$2"/*.txt | sort -u
}
run_ceiling() {
  CUDA_VISIBLE_DEVICES=0 timeout "$1" python3 scripts/copy_ceiling.py "$2/copy-ceiling.json" > "$2/ceiling.txt" 2>&1
  cat "$2/ceiling.txt"
}
ab() {  # ab GPU SECONDS OP NAME=V1,V2 ...: grid sweep of the named tunables, the others pinned to the defaults
  CUDA_VISIBLE_DEVICES=$1 timeout "$2" python3 -m aka_tui kb sweep "$3" --strategy grid --shapes ${AB_SHAPES:-weighted,largest} \
    --max-configs ${MAX_AB_CONFIGS:-8} --budget-s $(( $2 - 20 )) --out "$OUT_DIR" --name "ab-$3" $(python3 scripts/ab_spaces.py "${@:3}") > "$OUT_DIR/$3.txt" 2>&1
  echo "-- $3 (${*:4}): exit $?"; grep -hE "^[a-z0-9_]+ {2,}[a-z0-9_.]+ " "$OUT_DIR/$3.txt"
}
run_ab() {
  OUT_DIR=$2; t=$(( $1 / 4 ))
  ( ab 0 $t gemm_fp8_blockscale PREFETCH_SCALES=0,1; ab 0 $t attention_mla_decode BLOCK_H=16,32 num_warps=4,8
    run_library $(( $1 / 3 )) "$2" ) &
  ( ab 1 $t quant_fp8_per_token HW_CAST=0,1; ab 1 $t quant_fp8_per_token_group HW_CAST=0,1
    ab 1 $(( $1 / 2 )) moe_fused_experts BLOCK_M=64,128 DOWN_BLOCK_N=128,256 SMALL_MAX_PAIRS_PER_EXPERT=0,32 ) &
  wait
}
run_ab2() {
  OUT_DIR=$2; t=$(( $1 / 2 ))
  ( ab 0 $t attention_mla_decode PAGE_TILE=0,1 BLOCK_N=32,64; ab 0 $t gemm_fp8_blockscale num_stages=3,4,5 num_warps=4,8 ) &
  ( ab 1 $t gemm_bf16_linear_epilogue LARGE_M_MIN=0,2048; ab 1 $t gated_rms_norm ROWS_PER_PROGRAM=1,2,4,8 num_warps=2,4 ) &
  wait
}
run_probes() {
  OUT_DIR=$2
  ( CUDA_VISIBLE_DEVICES=0 timeout "$1" python3 scripts/bound_probes.py "$2/bound-probes.json" > "$2/probes.txt" 2>&1
    echo "-- bound probes: exit $?"; tail -n 60 "$2/probes.txt" ) &
  ( t=$(( $1 / 2 )); ab 1 $t gated_rms_norm WIDE_MIN=0,512 ROWS_PER_PROGRAM=4,8
    MAX_AB_CONFIGS=9 ab 1 $t attention_mla_decode PARTITION=256,512,1024 num_stages=1,2,3 ) &
  wait
}
run_ab3() {
  OUT_DIR=$2; t=$(( $1 / 2 ))
  ( ab 0 $t gemm_fp8_blockscale SCALE_T=0,1 PREFETCH_SCALES=0,1
    [ -z "${SAMPLING_AB:-}" ] || MAX_AB_CONFIGS=12 ab 0 $t sampling_top_k_top_p $SAMPLING_AB ) &
  ( MAX_AB_CONFIGS=12 ab 1 $(( $1 - 10 )) attention_mla_decode BLOCK_N=32,64 num_stages=2,3,4 num_warps=4,8 ) &
  wait
}
run_ab4() {
  OUT_DIR=$2
  ( LIB_GPU=0 run_library $(( $1 / 3 )) "$2"
    [ -z "${SAMPLING_AB:-}" ] || MAX_AB_CONFIGS=12 ab 0 $(( $1 / 2 )) sampling_top_k_top_p $SAMPLING_AB ) &
  ( MAX_AB_CONFIGS=12 ab 1 $(( $1 - 10 )) attention_mla_decode BLOCK_N=32,64 num_stages=2,3,4 num_warps=4,8 ) &
  wait
}
run_ncu() {
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
  [ -n "$NCU" ] || { echo "ncu not found"; return 0; }
  for t in ${NCU_TARGETS:-attention_mla_decode:dsv3_tp8_b64_ctx4096:_attention_mla_decode_kernel}; do
    IFS=: read -r op shape kname <<< "$t"
    CUDA_VISIBLE_DEVICES=${NCU_GPU:-0} timeout "$1" "$NCU" --clock-control none -k "regex:$kname" --launch-skip ${NCU_SKIP:-2} \
      --launch-count ${NCU_COUNT:-1} --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
      --section LaunchStats --section WarpStateStats --section SchedulerStats \
      python3 scripts/ncu_target.py "$op" "$shape" > "$2/ncu-$op-$shape.txt" 2>&1
    echo "-- ncu $op $shape ($kname): exit $?"
    grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Warp Cycles Per Issued|Compute \(SM\) Throughput|Waves Per SM|Stall|One or More Eligible|Issued Warp" \
      "$2/ncu-$op-$shape.txt" | head -n 30
  done
}
run_ab5() {
  OUT_DIR=$2
  ( ab 0 $(( $1 / 2 )) gemm_fp8_blockscale BLOCK_M=64,128 num_warps=4,8 num_stages=3,4
    [ -z "${SAMPLING_AB:-}" ] || MAX_AB_CONFIGS=12 ab 0 $(( $1 / 2 )) sampling_top_k_top_p $SAMPLING_AB ) &
  ( AB_SHAPES=all ab 1 $(( $1 - 10 )) attention_mla_decode BALANCED=0,1 PROGRAMS_PER_SM=1,2,3 ) &
  wait
}
run_ab6() {
  OUT_DIR=$2
  ( ab 0 $(( $1 / 3 )) gemm_fp8_blockscale TMA=0,1 num_stages=3,4
    [ -z "${SAMPLING_AB:-}" ] || MAX_AB_CONFIGS=12 AB_SHAPES=all ab 0 $(( $1 * 2 / 3 )) sampling_top_k_top_p $SAMPLING_AB ) &
  ( AB_SHAPES=weighted,kimi_k2_tp8_b16_ctx32768 ab 1 $(( $1 - 10 )) attention_mla_decode BLOCK_N=32,64 num_warps=4,8 \
      num_stages=2,3 ) &
  wait
}
run_ab7() {
  OUT_DIR=$2
  ( MAX_AB_CONFIGS=16 ab 0 $(( $1 - 10 )) gemm_fp8_blockscale TMA=1 BLOCK_M=64,128 num_warps=4,8 num_stages=3,4 \
      GROUP_M=8,16 ) &
  ( [ -z "${SAMPLING_AB:-}" ] || MAX_AB_CONFIGS=12 AB_SHAPES=all ab 1 $(( $1 - 10 )) sampling_top_k_top_p $SAMPLING_AB ) &
  wait
}
run_ab8() {
  OUT_DIR=$2
  ( AB_SHAPES=all ab 0 $(( $1 / 2 )) sampling_top_k_top_p SPLIT_ROWS=0,1
    LIB_GPU=0 run_library $(( $1 / 2 )) "$2" ) &
  ( MAX_AB_CONFIGS=16 AB_SHAPES=weighted,qwen_b32_v151936 ab 1 $(( $1 - 10 )) sampling_top_k_top_p EARLY_WRITE=0,1 \
      SLICE=4096,8192 TOPP_CELL=32,64 TOPP_PIVOTS=6,12 ) &
  wait
}
run_sets() {
  for t in ${SETS_TARGETS:-sampling_top_k_top_p:qwen_b256_v151936}; do
    IFS=: read -r op shape extra <<< "$t"; name="$op-$shape${extra:+-$extra}"
    CUDA_VISIBLE_DEVICES=${SETS_GPU:-0} timeout "$1" python3 scripts/input_set_times.py "$op" "$shape" ${SETS_ROWS---rows} \
      ${extra:+--set $extra} --json "$2/sets-$name.json" > "$2/sets-$name.txt" 2>&1
    echo "-- $op $shape $extra: exit $?"; tail -n ${SETS_TAIL:-20} "$2/sets-$name.txt"
  done
}
run_ab9() {
  OUT_DIR=$2
  ( AB_SHAPES=all ab 0 $(( $1 - 10 )) sampling_top_k_top_p TOPK_PIVOTS=3,4,6,8 ) &
  ( SETS_GPU=1 SETS_ROWS= SETS_TAIL=3 SETS_TARGETS="$(for n in 3 4 6 8; do printf 'sampling_top_k_top_p:qwen_b256_v151936:TOPK_PIVOTS=%s ' $n; done)" \
      run_sets $(( $1 / 4 )) "$2" ) &
  wait
}
run_trace() {
  timeout "$1" python3 -m aka_tui trace record --device cuda --budget-s $(( $1 - 25 )) --out "$2/trace.json.gz" \
    > "$2/trace.txt" 2>&1
  tail -20 "$2/trace.txt"
}
for phase in "$@"; do
  mkdir -p "$ROOT/$phase"
  budget_var="T_${phase}"; budget=${!budget_var:-$SECONDS_LEFT}
  echo "== $phase (limit ${budget}s, $(date -u +%H:%M:%S))" | tee -a "$ROOT/summary.txt"
  "run_$phase" "$budget" "$ROOT/$phase" 2>&1 | tee -a "$ROOT/summary.txt" > /dev/null
done
extra=${MOE_GPU1_FIRST:-}; [ -d "$ROOT/$extra" ] || extra=""
tar czf "$ROOT/results.tgz" --exclude='*.so' --exclude='*/cache/*' --exclude='*/sessions/*' -C "$ROOT" "$@" $extra && rm -rf "${@/#/$ROOT/}"
cat "$ROOT/summary.txt"
