"""Every reference kernel of the shipped knowledge base is a correct, real kernel on the CPU interpreter,
and every family of the suite has at least one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.evaluator.isolation import WorkerLimits
from aka_tui.bench.problem.lookup import load_problem, load_suite
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.scoring.score import score_op
from aka_tui.errors import KbEntryError
from aka_tui.knowledge.reference_kernels import read_tunables, reference_kernels, with_tunables
from aka_tui.knowledge.store import default_kb_dir, load_kb
from tests.conftest import PROBLEMS
from tests.prefetch import Prefetch, prefetch, selected

KB = load_kb(default_kb_dir())
KERNELS = reference_kernels(KB)
CASES = [(k, op) for k in KERNELS for op in k.ops]
KERNEL_OF = {k.entry_id: k for k in KERNELS}


def test_every_suite_family_has_a_reference_kernel() -> None:
    families = {p.family for p in load_suite(PROBLEMS).problems.values()}
    covered = {k.family for k in KERNELS}
    assert families <= covered, f"families without a reference kernel: {sorted(families - covered)}"


def _evaluate(key: tuple[str, str]):  # type: ignore[no-untyped-def]
    """Correctness (fuzzed shapes included) and the launch audit; no timing: interpreter times mean nothing, and
    the timed calls took over half of each evaluation (the fused MoE kernel: 122 s with them, 47 s without)."""
    entry_id, op = key
    problem = load_problem(PROBLEMS / op)
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=2, timing=False,
                          limits=WorkerLimits(startup_s=120, per_shape_s=240))
    result = evaluate_candidate(problem, CandidateSpec.file(KERNEL_OF[entry_id].path), options)
    return result, score_op(problem, result, get_profile("cpu"))


def _evaluate_variant(op: str, point: dict, folder: Path):  # type: ignore[no-untyped-def]
    """The op's reference kernel with `point` written into its TUNABLES, evaluated like the kernels above."""
    kernel = next(k for k, o in CASES if o == op)
    source = kernel.path.read_text()
    _, space = read_tunables(source, kernel.path)
    variant = folder / f"{op}_variant.py"
    variant.write_text(with_tunables(source, point, space, kernel.path))
    problem = load_problem(PROBLEMS / op)
    options = EvalOptions(device="cpu", tier="smoke", cases=1, cpu_reps=1, input_sets=1, fuzz=2, timing=False,
                          limits=WorkerLimits(startup_s=120, per_shape_s=240))
    result = evaluate_candidate(problem, CandidateSpec.file(variant), options)
    return result, score_op(problem, result, get_profile("cpu"))


@pytest.fixture(scope="module")
def evaluations(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prefetch]:
    """The selected kernels' and variants' evaluations, run a few at a time (tests/prefetch.py)."""
    jobs = []
    for test, params in selected(request):
        if test == "test_reference_kernel_is_correct_and_real_on_the_interpreter":
            key = (params["kernel"].entry_id, params["op"])
            jobs.append((key, lambda key=key: _evaluate(key)))
        elif test == "test_non_default_kernel_variant_is_correct_and_real":
            op, point = params["op"], params["point"]
            jobs.append((("variant", op), lambda op=op, point=point: _evaluate_variant(
                op, point, tmp_path_factory.mktemp("variant"))))
    with prefetch(jobs) as ahead:
        yield ahead


@pytest.mark.slow
@pytest.mark.parametrize("kernel, op", CASES, ids=[f"{k.entry_id}:{op}" for k, op in CASES])
def test_reference_kernel_is_correct_and_real_on_the_interpreter(kernel, op: str, evaluations: Prefetch) -> None:  # type: ignore[no-untyped-def]
    result, op_score = evaluations.result((kernel.entry_id, op))
    details = {s.shape_id: (s.status, s.error.message if s.error else "", s.audit.reason if s.audit else "")
               for s in result.shapes}
    assert op_score.correct and op_score.real, details


def test_tunables_rewrite_only_the_literal(tmp_path: Path) -> None:
    source = 'import triton\nTUNABLES = {"BLOCK": 256, "num_warps": 4}\nSEARCH_SPACE = {"BLOCK": [256, 512], "num_warps": [4, 8]}\nX = 1\n'
    path = tmp_path / "k.py"
    tunables, space = read_tunables(source, path)
    assert tunables == {"BLOCK": 256, "num_warps": 4}
    rewritten = with_tunables(source, {"BLOCK": 512}, space, path)
    assert read_tunables(rewritten, path)[0] == {"BLOCK": 512, "num_warps": 4}
    assert rewritten.endswith("X = 1\n") and rewritten.startswith("import triton\n")
    with pytest.raises(KbEntryError, match="outside the search space"):
        with_tunables(source, {"BLOCK": 1024}, space, path)
    with pytest.raises(KbEntryError, match="not in SEARCH_SPACE"):
        read_tunables(source.replace('"BLOCK": 256,', '"BLOCK": 128,'), path)


def test_bench_finds_a_kb_kernel_for_every_problem() -> None:
    from aka_tui.bench.scoring.bench_report import find_candidate

    suite = load_suite(PROBLEMS)
    missing = [p.name for p in suite.problems.values() if find_candidate(KB.root / "family", p) is None]
    assert not missing, f"`aka bench --candidates kb/family` finds no kernel for {missing}"


@pytest.mark.slow
@pytest.mark.parametrize("op, point", [
    ("kv_cache_write", {"CONTIG_ROWS": True}),
    # the default runs BALANCED (covered by the reference-kernel test); the fixed partitions stay searchable
    ("attention_mla_decode", {"BALANCED": 0}),
], ids=["kv_cache_write-contig-rows", "mla-decode-fixed-partitions"])
def test_non_default_kernel_variant_is_correct_and_real(op: str, point: dict, evaluations: Prefetch) -> None:
    result, op_score = evaluations.result(("variant", op))
    assert op_score.correct and op_score.real, {s.shape_id: (s.status, s.error) for s in result.shapes}


@pytest.mark.parametrize("programs", [1, 5])
def test_mla_decode_balanced_spans_any_program_count(programs: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Program spans cut sequences and head blocks anywhere; the reduce finds every partial (20 heads = 2 head
    blocks, 16-token tiles over a ramp of contexts up to 100)."""
    import torch

    from aka_tui.bench.problem.module_loading import import_file

    kernel = next(k for k, op in CASES if op == "attention_mla_decode")
    module = import_file(kernel.path, "mla_balanced_test")
    reference = import_file(PROBLEMS / "attention_mla_decode" / "reference.py", "mla_reference")
    inputs_module = import_file(PROBLEMS / "attention_mla_decode" / "input.py", "mla_inputs")
    monkeypatch.setitem(module.TUNABLES, "BALANCED", 1)
    monkeypatch.setitem(module.TUNABLES, "BLOCK_N", 16)
    monkeypatch.setitem(module.TUNABLES, "BLOCK_H", 16)
    monkeypatch.setattr(module, "_programs", lambda device: programs)
    torch.manual_seed(0)
    inputs = inputs_module._make_inputs(4, 100, 20, 64, 16, 16, dtype="float32", device="cpu")
    model = reference.Model(20, 64, 16, 16)
    got = module.launch_attention_mla_decode(inputs["q"], inputs["kv_cache"], inputs["block_tables"],
                                             inputs["seq_lens"], 20, 64, 16, 16, (64 + 16) ** -0.5)
    torch.testing.assert_close(got, model(**inputs), rtol=1e-4, atol=1e-4)


def test_fp8_gemm_tma_variant_matches_the_pointer_kernel() -> None:
    """The TMA kernel (descriptor loads, hardware zero-fill at the edges) gives the pointer kernel's output bit for
    bit, on shapes with M, N and K edges."""
    import torch

    from aka_tui.bench.problem.module_loading import import_file

    kernel = next(k for k, op in CASES if op == "gemm_fp8_blockscale")
    module = import_file(kernel.path, "fp8_tma_test")
    inputs_module = import_file(PROBLEMS / "gemm_fp8_blockscale" / "input.py", "fp8_inputs")
    torch.manual_seed(0)
    i = inputs_module._make_inputs(33, 250, 640, device="cpu")
    outs = [module.launch_gemm_fp8_blockscale(i["a"], i["a_scale"], i["b"], i["b_scale"], torch.bfloat16, 128,
                                              dict(module.TUNABLES, TMA=tma)) for tma in (0, 1)]
    assert torch.equal(outs[0], outs[1])


def test_fp8_gemm_upcast_pass_matches_the_in_loop_upcast() -> None:
    """UPCAST_PASS (fp16 copies of both operands, then the TMA kernel) sums the same exact fp16 products as the
    pointer kernel's in-loop conversion: the same output, on shapes with M, N and K edges and a strided A."""
    import torch

    from aka_tui.bench.problem.module_loading import import_file

    kernel = next(k for k, op in CASES if op == "gemm_fp8_blockscale")
    module = import_file(kernel.path, "fp8_upcast_test")
    inputs_module = import_file(PROBLEMS / "gemm_fp8_blockscale" / "input.py", "fp8_inputs")
    torch.manual_seed(0)
    i = inputs_module._make_inputs(33, 250, 640, device="cpu")
    a = torch.cat([i["a"], i["a"][:, :16]], dim=1)[:, :640]  # rows 656 apart
    cfgs = [dict(module.TUNABLES, UPCAST=1, UPCAST_PASS=0), dict(module.TUNABLES, UPCAST=1, UPCAST_PASS=1)]
    outs = [module.launch_gemm_fp8_blockscale(a, i["a_scale"], i["b"], i["b_scale"], torch.float32, 128, c)
            for c in cfgs]
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("block_n", [128, 256])
def test_fp8_gemm_rescaled_accumulator_matches_the_promoted_steps(block_n: int) -> None:
    """RESCALE (one accumulator kept in the current group's units) gives the per-step promotion's output, also
    where scales are zero (a row's K group of A, a block of B: the pass zeroes those operand groups) and where a
    tile spans two B scale blocks (BLOCK_N 256)."""
    import torch

    from aka_tui.bench.problem.module_loading import import_file

    kernel = next(k for k, op in CASES if op == "gemm_fp8_blockscale")
    module = import_file(kernel.path, "fp8_rescale_test")
    inputs_module = import_file(PROBLEMS / "gemm_fp8_blockscale" / "input.py", "fp8_inputs")
    torch.manual_seed(0)
    i = inputs_module._make_inputs(33, 250, 640, device="cpu")
    a_scale, b_scale = i["a_scale"].clone(), i["b_scale"].clone()
    a_scale[3, 0] = 0.0   # the first group of a row: the unit starts at 1
    a_scale[5, 2] = 0.0   # a middle group
    b_scale[1, 4] = 0.0   # the last group of a block of B
    base = dict(module.TUNABLES, UPCAST=1, UPCAST_PASS=1, BLOCK_M=32, BLOCK_N=block_n, BLOCK_K=64)
    outs = [module.launch_gemm_fp8_blockscale(i["a"], a_scale, i["b"], b_scale, torch.float32, 128,
                                              dict(base, RESCALE=r)) for r in (0, 1)]
    assert outs[0][3].abs().sum() > 0 and outs[0][:, 128:250].abs().sum() > 0
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-5, atol=1e-4)
