"""Shape 1's recorded failing seed of the fp8 MoE problem: where the candidate writes NaN and the reference is
finite, what the reference holds (the overflow-edge hypothesis: +-240, the largest e4m3fnuz code)."""
import sys, importlib.util, torch
from pathlib import Path
from aka_tui.bench.problem.atrex import load_atrex
from aka_tui.bench.measure.cases import ShapeCases
from aka_tui.bench.problem.inputs import clone_inputs

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
P = load_atrex(Path(sys.argv[1])); cand_mod = load(sys.argv[2], 'cand')
shape = P.shapes[sys.argv[3]]; seed = int(sys.argv[4])
ref = load(P.reference_path, 'ref'); inp = load(P.input_path, 'inp')
cases = ShapeCases(P, shape, 'cuda', ref, inp, [seed], False, 1, 2)
case = cases.case(0)
model = cand_mod.Model(**shape.init_kwargs).cuda()
with torch.no_grad():
    out = model(**clone_inputs(case.inputs))
torch.cuda.synchronize()
r, c = case.ref_native.float(), out.float()
bad = ~torch.isfinite(c) & torch.isfinite(r)
print(f"outputs {r.numel()}, dtype {out.dtype}; reference NaN {int(torch.isnan(r).sum())}, candidate NaN {int(torch.isnan(c).sum())}, "
      f"candidate NaN where the reference is finite {int(bad.sum())}; reference there: {r[bad].tolist()[:12]}")
miss = torch.isnan(r) & torch.isfinite(c)
print(f"reference NaN where the candidate is finite {int(miss.sum())}; candidate there: {sorted(set(c[miss].tolist()))[:12]}")
fin = torch.isfinite(r) & torch.isfinite(c)
print(f"max |c - r| where both finite {float((c - r)[fin].abs().max()):.4g}")
