#!/usr/bin/env bash
# Device-machine verification of issues 2-4 (torch + triton + numpy only), results under $OUT.
# Usage on the device: STEP=redteam|kernels|compile bash scripts/device_verify.sh
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1 AKA_HOME="$OUT/aka-home"
case "${STEP:-kernels}" in
  redteam)   # GPU red-team corpus + honest candidates, GPU tests, hardening cost, own_share of eager
    python3 -m pytest -q -m gpu tests/gpu tests/redteam -p no:cacheprovider 2>&1 | tail -40 | tee "$OUT/gpu-tests.txt"
    for h in "" "--no-hardening"; do /usr/bin/time -f "rms_norm eval $h: %e s" python3 -m aka_tui eval \
      problems/rms_norm/solutions/correct/triton_rms_norm.py --problem rms_norm $h > /dev/null; done 2>&1 | tee "$OUT/hardening-cost.txt"
    python3 -m aka_tui eval tests/data/candidates/rms_norm_torch_fallback.py --problem rms_norm --json "$OUT/fallback.json" | tail -12
    ;;
  kernels)   # every KB reference kernel on its problem's full tier, with eager and compile speed-ups
    python3 -m aka_tui bench --candidates kb/family --compare-eager --out "$OUT" --name kb-kernels-full \
      > "$OUT/kb-kernels.txt" 2> "$OUT/kb-kernels.err"; tail -40 "$OUT/kb-kernels.txt"
    ;;
  compile)   # the compile baseline over the whole suite, caches warmed in parallel first
    /usr/bin/time -f "compile baseline wall %e s" python3 -m aka_tui bench --baseline compile --precompile-workers 12 \
      --out "$OUT" > "$OUT/compile.txt" 2> "$OUT/compile.err"; tail -40 "$OUT/compile.txt"; tail -1 "$OUT/compile.err"
    ;;
esac
