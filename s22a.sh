#!/usr/bin/env bash
# session 22 call 1: norm sweeps on the saturated timer, the suite in one run, Liger-Kernel side by side
set -uo pipefail
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONPATH=.:/tmp/site AKA_BWRAP=$PWD/.bwrap/bwrap PYTHONUNBUFFERED=1 AKA_HOME=/tmp/aka-home-s22
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/env.txt 2>&1
python3 -c "import torch,triton;print(torch.__version__,triton.__version__)" >> $OUT/env.txt
t0=$(date +%s)
S="python3 scripts/kb_configs_device.py --saturated --no-compile --rounds 3 --top 14"
( timeout 50 $S problems/rms_norm kb/family/norm/rms_norm.py --shapes llama3_8b_decode_t256_h4096,gpt_oss_120b_decode_t128_h2880 --grid AUTO=0 --grid EARLY_WEIGHTS=False,True --grid num_warps=4,8,16
  timeout 90 $S problems/layer_norm kb/family/norm/layer_norm.py --grid AUTO=0,1 --grid EARLY_WEIGHTS=False,True --grid num_warps=4,8
  timeout 30 $S problems/fused_add_rms_norm kb/family/norm/fused_add_rms_norm.py --shapes llama3_8b_decode_t256_h4096,deepseek_v3_decode_t512_h7168 --grid EARLY_WEIGHTS=False,True --grid num_warps=8,16
) > $OUT/norm-sweep.txt 2>&1
echo "sweeps in $(( $(date +%s) - t0 )) s"
t1=$(date +%s)
timeout 400 python3 -m aka_tui bench run --candidates kb/family --cases 1 --precompile-workers 14 --out $OUT --name suite-22 > $OUT/suite-22.txt 2>&1
echo "suite exit $? in $(( $(date +%s) - t1 )) s"
t2=$(date +%s)
left=$(( 575 - (t2 - t0) )); [ $left -gt 20 ] && timeout $left python3 -m aka_tui bench libraries --ops rms_norm,fused_add_rms_norm,layer_norm,silu_and_mul,rope --shapes all --sandbox none --out $OUT --name liger > $OUT/liger.txt 2>&1
echo "liger exit $? in $(( $(date +%s) - t2 )) s"
grep -A3 "S_agg" $OUT/suite-22.txt | head -8
grep -E "^\| [a-z0-9_]+ \| [0-9.]+ \|" $OUT/suite-22.md | cut -d"|" -f2,3,6,7 | head -24
grep -E "^\| (rms|fused|layer|silu|rope)" $OUT/liger.md | cut -d'|' -f2,3,9,12
grep -E "^###|^\| " $OUT/norm-sweep.txt | grep -v "^|---" | cut -c1-80 | head -70
