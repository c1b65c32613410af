#!/usr/bin/env bash
# worker start phases on a GPU: a few operators of our suite and of the published subset, one case a shape
set -u
export PYTHONPATH=. AKA_HOME=/tmp/akah AKA_BWRAP=$PWD/.bwrap/bwrap PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
python3 -m aka_tui bench run --candidates kb/family --ops rms_norm,silu_and_mul,fused_add_rms_norm,sampling_top_k_top_p --cases 1 --out $OUT --name ours > $OUT/ours.txt 2>&1
python3 -m aka_tui bench run --suite .atrex --candidates .cands/pub45 --ops rms_norm,layer_norm,moe_align_block_size,silu_and_mul --cases 1 --out $OUT --name pubsmall > $OUT/pub.txt 2>&1
python3 - <<'PY' | tee $OUT/phases.txt
import json, os
for name in ("ours", "pubsmall"):
    d = json.load(open(os.path.join(os.environ["OUT"], name + ".json")))
    print(name, "wall", d.get("wall_s"))
    for r in d["results"]:
        p = r["provenance"]; s = p["checks"]["seconds"]
        print(f"  {r['problem']:<24} wall {p.get('wall_s')} " + " ".join(f"{k.replace('startup_','')}={v}" for k, v in s.items()))
PY
