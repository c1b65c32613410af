"""The fp8 MoE problem's reference, built as the evaluator builds case 0 (inputs, clone, native run, float64 run
when it fits), for shapes 1 then 2 in one process, with the device's memory after each: does the reference of
shape 2 fit on its own, and does anything of shape 1 stay alive?"""
import gc, sys, time, importlib.util, torch
from pathlib import Path
from aka_tui.bench.problem.atrex import load_atrex
from aka_tui.bench.measure.cases import ShapeCases, case_seeds, MeasureFailure

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
P = load_atrex(Path(sys.argv[1]))
ref = load(P.reference_path, 'ref'); inp = load(P.input_path, 'inp')
G = 2**30
for sid in sys.argv[2:]:
    shape = P.shapes[sid]; t = time.time()
    torch.cuda.reset_peak_memory_stats()
    cases = ShapeCases(P, shape, 'cuda', ref, inp, case_seeds(P, shape, 1), True, 1, 2)
    try:
        cases.case(0); status = 'ok'
    except MeasureFailure as f:
        status = 'FAILED ' + f.error.message[:300]
    print(f"shape {sid}: {status}; precision {cases.precision}; {time.time()-t:.1f} s; allocated {torch.cuda.memory_allocated()/G:.2f} GiB, "
          f"peak {torch.cuda.max_memory_allocated()/G:.2f} GiB", flush=True)
    del cases; gc.collect(); torch.cuda.empty_cache()
    print(f"  after release: allocated {torch.cuda.memory_allocated()/G:.2f} GiB, reserved {torch.cuda.memory_reserved()/G:.2f} GiB", flush=True)
