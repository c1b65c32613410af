"""Validate problem directories: `python -m aka_tui.bench.problem.check problems/<op> ...`.

Loads each problem, builds the smoke inputs on the CPU, runs the reference natively and in float64 and
checks that the native result passes the problem's own tolerance (a tolerance the reference itself fails
would reject every honest candidate). Full shapes are built on the meta device (no memory) to check the
input maker accepts them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from aka_tui.bench.problem.inputs import clone_inputs, make_inputs, upcast_inputs
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.model import Problem
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.problem.seeds import derive_seed
from aka_tui.bench.problem.settled_order import import_reference
from aka_tui.bench.problem.tolerance import compare_outputs
from aka_tui.errors import AkaError


def check(problem: Problem) -> list[str]:
    """Problems found (empty when the directory is sound)."""
    issues: list[str] = []
    ref = import_reference(problem.reference_path, "ref")
    inp = import_file(problem.input_path, "inp")
    for shape in problem.shapes.values():
        seed = derive_seed(problem.name, shape.shape_id, 0)
        if shape.tier == "full":
            try:
                make_inputs(problem, inp, shape, "meta", seed)
            except AkaError as exc:
                issues.append(f"{shape.shape_id}: {exc}")
            except Exception as exc:  # meta cannot run every input maker; report, do not fail
                print(f"  note: {shape.shape_id}: inputs not buildable on meta ({type(exc).__name__}: {exc})")
            continue
        try:
            inputs = make_inputs(problem, inp, shape, "cpu", seed)
            model = ref.Model(**shape.init_kwargs).eval()
            with torch.no_grad():
                native = model(**clone_inputs(inputs))
                again = model(**clone_inputs(make_inputs(problem, inp, shape, "cpu", seed)))
                exact = native
                if problem.fp64_reference:
                    exact = ref.Model(**shape.init_kwargs).double().eval()(**upcast_inputs(clone_inputs(inputs)))
        except Exception as exc:
            issues.append(f"{shape.shape_id}: reference failed: {type(exc).__name__}: {exc}")
            continue
        cmp = compare_outputs(native, native, exact, problem.tolerance_for, problem.max_mismatch_fraction)
        if not cmp.ok:
            issues.append(f"{shape.shape_id}: the native reference fails its own tolerance vs float64: {cmp.reason}")
        det = compare_outputs(again, native, native, lambda d: type(problem.tolerance_for(d))(0.0, 0.0), 0.0)
        if not det.ok:
            issues.append(f"{shape.shape_id}: not deterministic for a fixed seed: {det.reason}")
        print(f"  {shape.shape_id}: ok (max rel err vs fp64 {cmp.max_rel_error or 0:.2e})")
    return issues


def main(argv: list[str]) -> int:
    failed = 0
    for arg in argv:
        try:
            problem = load_problem(Path(arg))
        except AkaError as exc:
            print(f"FAIL {arg}: {exc}")
            failed += 1
            continue
        print(f"{problem.name}:")
        issues = check(problem)
        for issue in issues:
            print(f"  FAIL {issue}")
        failed += bool(issues)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
