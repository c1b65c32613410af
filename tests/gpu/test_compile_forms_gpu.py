"""On a CUDA GPU: every shipped compile form, compiled by inductor as the torch.compile baselines compile it,
agrees with its reference on the problem's first full-tier shape, the kind the peers time (on the CPU the
forms run eagerly, which does not exercise what inductor generates: flex attention, for one, calls its mask
on block-rounded indices only there). Smoke shapes are not the point: inductor may not compile some of their
dtypes at all (fnuz fp8 on NVIDIA), and the baselines then say so."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from aka_tui.bench.measure.session import baseline_model, check_compile_form, compile_form_model
from aka_tui.bench.problem.inputs import make_inputs
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import PROBLEMS

pytestmark = pytest.mark.gpu

FORMS = sorted(p.parent for p in PROBLEMS.glob("*/compile_form.py"))


@pytest.mark.parametrize("directory", FORMS, ids=[d.name for d in FORMS])
def test_every_compiled_form_agrees_with_its_reference_on_a_full_shape(directory: Path) -> None:
    problem = load_problem(directory)
    input_module = import_file(problem.input_path, "inp")
    reference_module = import_file(problem.reference_path, "ref")
    shape = problem.shapes_for("full")[0]
    reference = reference_module.Model(**shape.init_kwargs).to("cuda").eval()
    compiled = baseline_model("compile", reference, compile_form_model(problem, shape, reference, "cuda"))
    check_compile_form(problem, compiled, reference, make_inputs(problem, input_module, shape, "cuda", 5), "compile")
    torch.cuda.synchronize()
