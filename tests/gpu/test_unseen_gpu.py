"""On a CUDA GPU: the compiler seed (inductor's CUDA Triton output turned into a standalone candidate) and a
transferred kernel are correct, real (own device time) and timed on the full tier."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from aka_tui.agent.adapter import transferred_kernel
from aka_tui.agent.probe import load_modules, make_probes
from aka_tui.agent.seed_source import build_seed
from aka_tui.agent.starting_point import matching_probes
from aka_tui.agent.transfer import find_transfers
from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.problem.lookup import default_suite_dir, load_problem
from aka_tui.bench.roofline.hardware import detect_profile
from aka_tui.bench.scoring.score import score_op
from aka_tui.knowledge.reference_kernels import reference_kernels
from aka_tui.knowledge.store import default_kb_dir, load_kb

pytestmark = pytest.mark.gpu
UNSEEN = Path(__file__).resolve().parents[1] / "data" / "unseen"


def _evaluate(problem_name: str, source: str) -> object:
    problem = load_problem(UNSEEN / problem_name)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{problem_name}_candidate.py"
        path.write_text(source)
        result = evaluate_candidate(problem, CandidateSpec.file(path), EvalOptions(device="cuda", tier="full",
                                                                                   cases=1))
    return score_op(problem, result, detect_profile("cuda")), result


# seen_token_penalty: bool and uint8 tensors; held_scale_norm: a parameter and a buffer the reference holds;
# complex_rotation: complex arithmetic as real pairs; longest_prefix_mean: a size read back on the host;
# init_table_rope: a table the reference builds at init outside its state dict; distance_biased_attention:
# scaled_dot_product_attention as its math (the seed's GEMM); kept_token_rows: nonzero as a search of the
# running count (a data-dependent size); channel_mixing_conv: a dense convolution as a GEMM over its windows;
# biased_score_softmax: baddbmm on the seed's GEMM; expert_row_order: a sort of integers, boolean indexing and a
# bincount (atomic adds); int8_row_scaled_gemm: _int_mm on the seed's GEMM (int8 dots); token_group_means:
# torch.unique with its inverse and counts; blockwise_row_softmax: a loop over the width, a program per width;
# fp8_row_scaled_projection: _scaled_mm on the seed's GEMM (fp8 dots, row and column scales);
# routed_rows_scatter_combine: scatter_reduce (sum, amax) and kthvalue as inductor's own reductions;
# grouped_expert_mlp: _grouped_mm on the seed's GEMM (a program per row tile and expert);
# int8_weight_projection: _weight_int8pack_mm on the seed's GEMM (int8 weights taken as bf16 in the kernel);
# int4_group_dequant_gemm: packed 4-bit codes unpacked by shifts into the seed's GEMM; gathered_adapter_delta:
# per-token adapters gathered by index; merged_partial_attention: two partial results merged by log-sum-exp;
# fp4_block_codes: e2m1 codes by bucketize, fp8 block scales, two codes a byte; grouped_biased_routing: unsorted
# top-k calls compared in the sorted order (settled_order.py); block_table_gather: a slice at a length read on
# the host, of a gather; selective_state_step: a state-space decode step writing its state in place
@pytest.mark.parametrize("name", ["centered_swish", "seen_token_penalty", "held_scale_norm", "complex_rotation",
                                  "longest_prefix_mean", "init_table_rope", "distance_biased_attention",
                                  "kept_token_rows", "channel_mixing_conv", "biased_score_softmax",
                                  "expert_row_order", "int8_row_scaled_gemm", "token_group_means",
                                  "blockwise_row_softmax", "fp8_row_scaled_projection",
                                  "routed_rows_scatter_combine", "grouped_expert_mlp",
                                  "int8_weight_projection", "int4_group_dequant_gemm", "gathered_adapter_delta",
                                  "merged_partial_attention", "fp4_block_codes", "grouped_biased_routing",
                                  "block_table_gather", "selective_state_step"])
def test_compiler_seed_on_cuda_is_real_and_timed(name: str) -> None:
    problem = load_problem(UNSEEN / name)
    probes = make_probes(problem, "cuda")
    seed = build_seed(problem, probes, "full", "cuda")
    assert seed.source is not None, seed.reason
    op, result = _evaluate(name, seed.source)
    assert op.correct and op.real, [(s.shape_id, s.status, s.error, s.audit) for s in result.shapes]
    assert op.s_op > 0
    for shape in result.shapes:
        if not shape.fuzz:
            assert shape.audit is not None and shape.audit.own_share is not None and shape.audit.own_share >= 0.9


def test_transferred_kernel_on_cuda_is_real() -> None:
    problem = load_problem(UNSEEN / "scaled_hidden_norm")
    probes = matching_probes(problem, "cuda")  # the search's own probes (on the CPU where the reference runs)
    kernels = reference_kernels(load_kb(default_kb_dir()))
    match = find_transfers(problem, kernels, probes, default_suite_dir())[0]
    reference, _ = load_modules(problem)
    op, result = _evaluate("scaled_hidden_norm", transferred_kernel(match, reference.Model).source)
    assert op.correct and op.real and op.s_op > 0, [(s.shape_id, s.status, s.error) for s in result.shapes]
