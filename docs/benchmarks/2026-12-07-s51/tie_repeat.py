"""The faithful tie-breaking candidate of tests/gpu/test_cases_on_cuda_gpu.py evaluated N times on a CUDA GPU
(fresh case seeds each time): how often a shape fails that should pass.
    PYTHONPATH=. python3 docs/benchmarks/2026-12-07-s51/tie_repeat.py N"""
import sys
import tempfile
from pathlib import Path

import tests.gpu.test_cases_on_cuda_gpu as t

path = Path(tempfile.mkdtemp()) / "ties_broken_the_other_way.py"
path.write_text(t._CANDIDATE.format(body=t.BODIES["ties_broken_the_other_way"]))
failed = total = 0
for k in range(int(sys.argv[1])):
    result = t.evaluate_candidate(t.load_problem(t.TIED), t.CandidateSpec.file(path),
                                  t.EvalOptions(device="cuda", tier="all", cases=2, input_sets=2, fuzz=0))
    for s in result.shapes:
        total += 1
        failed += s.status != "passed"
        ties = s.verification.get("integer_tie_breaks") if s.verification else None
        print(k, s.shape_id, s.status, ties, s.error.message[:200] if s.error else "")
print(f"faithful tie-breaks: {failed} of {total} shape evaluations failed")
