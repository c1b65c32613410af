#!/usr/bin/env bash
# workers started ahead, off then on then off again: six of our suite's operators with the eager peer timed beside
set -u
export PYTHONPATH=. AKA_HOME=/tmp/akah AKA_BWRAP=$PWD/.bwrap/bwrap PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
OPS=rms_norm,silu_and_mul,fused_add_rms_norm,layer_norm,rope,sampling_top_k_top_p
for run in 0 1 0b 1b; do
  t0=$(date +%s.%N)
  AKA_START_AHEAD=${run:0:1} python3 -m aka_tui bench run --candidates kb/family --ops $OPS --compare-eager --cases 1 \
    --out $OUT --name ahead$run > $OUT/ahead$run.txt 2>&1
  echo "ahead=$run exit $? in $(python3 -c "import time;print(round(time.time()-$t0,1))") s" | tee -a $OUT/ab.txt
done
python3 - <<'PY' | tee -a $OUT/ab.txt
import json, os
for run in ("0", "1", "0b", "1b"):
    d = json.load(open(os.path.join(os.environ["OUT"], f"ahead{run}.json")))
    rows = []
    for r in d["results"]:
        p = r["provenance"]; s = p["checks"]["seconds"]
        rows.append(f"{r['problem']}: wall {p['wall_s']:.1f} start {s.get('worker_startup', 0):.1f} "
                    f"ahead {s.get('started_ahead', 0):.1f} baselines {s.get('baselines_worker', 0):.1f}")
    print(f"ahead={run} run wall {d['wall_s']:.1f} s S_agg {d['aggregate']['s_agg']:.4f}")
    for row in rows:
        print("   ", row)
PY
