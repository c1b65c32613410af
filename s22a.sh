#!/usr/bin/env bash
# session 22 call 1: the suite in one run, then Liger-Kernel side by side
set -uo pipefail
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONPATH=.:/tmp/site AKA_BWRAP=$PWD/.bwrap/bwrap PYTHONUNBUFFERED=1 AKA_HOME=/tmp/aka-home-s22
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > $OUT/env.txt 2>&1
python3 -c "import torch,triton;print(torch.__version__,triton.__version__)" >> $OUT/env.txt
t0=$(date +%s)
timeout 440 python3 -m aka_tui bench run --candidates kb/family --cases 1 --precompile-workers 14 --out $OUT --name suite-22 > $OUT/suite-22.txt 2>&1
echo "suite exit $? in $(( $(date +%s) - t0 )) s"
t1=$(date +%s)
timeout $(( 570 - (t1 - t0) )) python3 -m aka_tui bench libraries --ops rms_norm,fused_add_rms_norm,layer_norm,silu_and_mul,rope --shapes all --sandbox none --out $OUT --name liger > $OUT/liger.txt 2>&1
echo "liger exit $? in $(( $(date +%s) - t1 )) s"
tail -45 $OUT/suite-22.txt
grep -E "^\| (rms|fused|layer|silu|rope)" $OUT/liger.md | cut -d'|' -f2,3,9,12 
