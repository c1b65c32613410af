"""A problem's compile form: what the torch.compile baselines compile in place of a reference that loops in
Python, and the check that it computes what the reference computes before it is timed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from aka_tui.bench.measure.calls import MeasureFailure
from aka_tui.bench.measure.session import baseline_model, check_compile_form, compile_form_model
from aka_tui.bench.problem.inputs import make_inputs
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.module_loading import import_file

GATED_DELTA = Path(__file__).resolve().parents[2] / "problems" / "linear_attn_gated_delta_decode"


def _setup(tmp_path: Path, form_source: str | None):  # type: ignore[no-untyped-def]
    directory = tmp_path / GATED_DELTA.name
    shutil.copytree(GATED_DELTA, directory)
    if form_source is None:
        (directory / "compile_form.py").unlink()
    elif form_source:
        (directory / "compile_form.py").write_text(form_source)
    problem = load_problem(directory)
    shape = problem.shapes_for("smoke")[0]
    reference = import_file(problem.reference_path, "ref").Model(**shape.init_kwargs).eval()
    inputs = make_inputs(problem, import_file(problem.input_path, "inp"), shape, "cpu", 7)
    return problem, shape, reference, inputs


def test_the_shipped_form_is_compiled_in_place_of_the_reference_and_agrees_with_it(tmp_path: Path) -> None:
    problem, shape, reference, inputs = _setup(tmp_path, "")
    form = compile_form_model(problem, shape, reference, "cpu")
    assert form is not None and type(form).__module__ != type(reference).__module__
    assert baseline_model("compile", reference, form)._orig_mod is form
    assert baseline_model("eager", reference, form) is reference
    before = inputs["state"].clone()
    check_compile_form(problem, form, reference, inputs, "compile")  # eager here: the check, not inductor
    assert torch.equal(inputs["state"], before)  # each side ran on its own copy of the inputs it writes


FORMS = sorted(p.parent for p in (GATED_DELTA.parent).glob("*/compile_form.py"))


@pytest.mark.parametrize("directory", FORMS, ids=[d.name for d in FORMS])
def test_every_shipped_form_agrees_with_its_reference_on_the_smoke_shapes(directory: Path) -> None:
    """Run eagerly (what inductor compiles is the same program): the form must give the reference's outputs,
    or the compile peers would time something else."""
    problem = load_problem(directory)
    input_module = import_file(problem.input_path, "inp")
    reference_module = import_file(problem.reference_path, "ref")
    for shape in problem.shapes_for("smoke"):
        reference = reference_module.Model(**shape.init_kwargs).eval()
        form = compile_form_model(problem, shape, reference, "cpu")
        check_compile_form(problem, form, reference, make_inputs(problem, input_module, shape, "cpu", 11), "compile")


def test_a_form_that_disagrees_with_the_reference_is_the_baseline_failure(tmp_path: Path) -> None:
    wrong = (GATED_DELTA / "compile_form.py").read_text().replace(
        "S = S * torch.exp(g[:, t])[..., None, None]", "S = S * torch.exp(0.5 * g[:, t])[..., None, None]")
    problem, shape, reference, inputs = _setup(tmp_path, wrong)
    form = compile_form_model(problem, shape, reference, "cpu")
    with pytest.raises(MeasureFailure) as failure:
        check_compile_form(problem, form, reference, inputs, "compile")
    assert failure.value.error.kind == "wrong_output"
    assert "compile_form.py disagrees with the reference" in failure.value.error.message


def test_without_a_form_the_reference_itself_is_compiled(tmp_path: Path) -> None:
    problem, shape, reference, _ = _setup(tmp_path, None)
    assert problem.compile_form_path is None and compile_form_model(problem, shape, reference, "cpu") is None
    assert baseline_model("compile", reference, None)._orig_mod is reference


@pytest.mark.slow
def test_a_disagreeing_form_leaves_the_compile_column_empty_and_says_why(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the evaluator: the baselines' worker checks the form before timing it; the candidate's own
    verdict stands, and the shape records why it has no torch.compile time."""
    from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
    from aka_tui.bench.evaluator.isolation import WorkerLimits

    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "1")
    monkeypatch.setenv("TORCHINDUCTOR_VEC_ISA_OK", "1")
    wrong = (GATED_DELTA / "compile_form.py").read_text().replace("outs.append(torch.einsum(", "outs.append(2 * torch.einsum(")
    problem, shape, _, _ = _setup(tmp_path, wrong)
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=2, input_sets=1, fuzz=0, compare_compile=True,
                          shape_ids=[shape.shape_id], limits=WorkerLimits(startup_s=120, per_shape_s=300))
    kernel = GATED_DELTA.parents[1] / "kb" / "family" / "linear_attention" / "linear_attn_gated_delta_decode.py"
    result = evaluate_candidate(problem, CandidateSpec.file(kernel), options).shapes[0]
    assert result.status == "passed", result.error
    assert result.compile_timing is None
    assert "compile_form.py disagrees with the reference" in result.verification.get("baselines", "")


def test_the_moe_form_runs_one_matmul_per_expert_where_the_grouped_product_does_not_apply() -> None:
    """float64 takes the per-expert path (the grouped product takes it nowhere); it must still be the
    reference's result, empty experts included."""
    directory = GATED_DELTA.parent / "moe_fused_experts"
    form = import_file(directory / "compile_form.py", "moe_form").Model()
    reference = import_file(directory / "reference.py", "moe_ref").Model()
    torch.manual_seed(0)
    tokens, hidden, inter, experts, top_k = 9, 32, 24, 5, 2
    x = torch.randn(tokens, hidden, dtype=torch.float64)
    w1 = torch.randn(experts, 2 * inter, hidden, dtype=torch.float64)
    w2 = torch.randn(experts, hidden, inter, dtype=torch.float64)
    ids = torch.randint(0, experts - 1, (tokens, top_k))  # the last expert gets no token
    weights = torch.rand(tokens, top_k, dtype=torch.float64)
    torch.testing.assert_close(form(x, w1, w2, weights, ids), reference(x, w1, w2, weights, ids),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("causal, paged", [(True, False), (False, False), (True, True), (False, True)])
def test_the_varlen_attention_form_pads_every_form_the_reference_takes(causal: bool, paged: bool) -> None:
    """The varlen attention form (every sequence padded into one masked attention call) computes what the
    reference's per-sequence loop computes, in each form the reference defines: keys of other lengths than the
    queries (bottom-right causal), key offsets, keys used per sequence, a shuffled paged cache, an empty sequence."""
    directory = GATED_DELTA.parent / "attention_prefill_varlen"
    reference = import_file(directory / "reference.py", "varlen_ref_form").Model(6, 2, 8, causal=causal)
    form = import_file(directory / "compile_form.py", "varlen_form").Model(6, 2, 8, causal=causal)
    torch.manual_seed(0)
    q_lens, k_lens = [3, 1, 0, 20, 5], [9, 30, 0, 20, 5]
    cu_q = torch.tensor([0] + torch.tensor(q_lens).cumsum(0).tolist(), dtype=torch.int32)
    q = torch.randn(int(cu_q[-1]), 6, 8, dtype=torch.float64)
    if paged:
        page, per_seq = 4, 8
        table = torch.randperm(per_seq * len(k_lens) + 3)[: per_seq * len(k_lens)].view(len(k_lens), -1).int()
        k = torch.randn(per_seq * len(k_lens) + 3, page, 2, 8, dtype=torch.float64)
        v = torch.randn_like(k)
        extra = {"seqused_k": torch.tensor(k_lens, dtype=torch.int32), "block_table": table}
    else:  # key offsets of their own, and fewer keys used than the offsets give
        cu_k = torch.tensor([0] + torch.tensor([n + 2 for n in k_lens]).cumsum(0).tolist(), dtype=torch.int32)
        k = torch.randn(int(cu_k[-1]), 2, 8, dtype=torch.float64)
        v = torch.randn_like(k)
        extra = {"cu_seqlens_k": cu_k, "seqused_k": torch.tensor(k_lens, dtype=torch.int32)}
    want = reference(q, k, v, cu_q, **extra)
    got = form(q, k, v, cu_q, **extra)
    torch.testing.assert_close(got, want)
