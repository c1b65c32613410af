"""Why the RMSNorm + fp8 KB kernel matches on the CPU but not on the GPU machine."""
import sys, time, traceback
from pathlib import Path
sys.path.insert(0, ".")
import torch, triton
print("triton", triton.__version__, "torch", torch.__version__)
from aka_tui.agent.own_semantics import import_interpreted
m = import_interpreted(Path("kb/family/quantization/rms_norm_quant_fp8.py"))
print("kernel object:", type(m._rms_norm_quant_fp8_kernel).__name__)
x = torch.randn(4, 256, dtype=torch.bfloat16); w = torch.randn(256, dtype=torch.bfloat16)
for fmt in ("float8_e4m3fn", "float8_e4m3fnuz"):
    try:
        out = m.Model(out_dtype=fmt)(x, w, None, torch.ones(1))
        print(fmt, "CPU call ok:", [getattr(o, "dtype", o) for o in (out if isinstance(out, tuple) else (out,))])
    except Exception:
        traceback.print_exc(limit=4)
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.agent.starting_point import find_starting_point
problem = load_problem(Path(sys.argv[1]))
t = time.monotonic()
try:
    sp = find_starting_point(problem, "cuda", "full", allow_seed=False, transfer_budget_s=90)
    print("starting point:", sp.path if hasattr(sp, "path") else sp, f"{time.monotonic() - t:.0f} s")
except Exception as exc:
    print("no starting point:", str(exc)[:400], f"{time.monotonic() - t:.0f} s")
