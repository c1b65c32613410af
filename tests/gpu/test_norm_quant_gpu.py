"""On a CUDA GPU: the RMSNorm + fp8 kernel's hardware conversion (HW_CAST) gives the codes of its integer
encoding for e4m3fn and e4m3fnuz, the kernel matches its semantics on bf16 rows of serving sizes, and the
kernel transferred to an unseen norm + e4m3fnuz problem is correct, real and timed."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from aka_tui.agent.adapter import transferred_kernel
from aka_tui.agent.probe import load_modules
from aka_tui.agent.starting_point import matching_probes
from aka_tui.agent.transfer import find_transfers
from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.problem.lookup import default_suite_dir, load_problem
from aka_tui.bench.roofline.hardware import detect_profile
from aka_tui.bench.scoring.score import score_op
from aka_tui.knowledge.reference_kernels import reference_kernels
from aka_tui.knowledge.store import default_kb_dir, load_kb
from tests.knowledge.test_rms_norm_quant_fp8 import FORMATS, KERNEL, _code_steps, _interesting_values, _reference

pytestmark = pytest.mark.gpu
UNSEEN = Path(__file__).resolve().parents[1] / "data" / "unseen"
_software, _hardware = KERNEL._e4m3_bits, KERNEL._e4m3_bits_hw


@triton.jit
def _both_encodings_kernel(v_ptr, soft_ptr, hard_ptr, n, FP8_MAX: tl.constexpr, FNUZ: tl.constexpr,
                           BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(v_ptr + offs, mask=offs < n, other=0.0)
    v = tl.minimum(tl.maximum(v, -FP8_MAX), FP8_MAX)
    tl.store(soft_ptr + offs, _software(v, FNUZ).to(tl.uint8), mask=offs < n)
    tl.store(hard_ptr + offs, _hardware(v, FNUZ).to(tl.uint8), mask=offs < n)


@pytest.mark.parametrize("name", list(FORMATS))
def test_hardware_conversion_gives_the_integer_codes(name: str) -> None:
    dtype, largest = FORMATS[name]
    values = _interesting_values()
    values = values[~torch.isnan(values)].cuda()
    soft, hard = (torch.empty(values.numel(), dtype=torch.uint8, device="cuda") for _ in range(2))
    _both_encodings_kernel[(triton.cdiv(values.numel(), 1024),)](values, soft, hard, values.numel(),
                                                                FP8_MAX=largest, FNUZ=name.endswith("fnuz"), BLOCK=1024)
    want = values.clamp(-largest, largest).cpu().to(dtype).view(torch.uint8)  # torch's conversion on the CPU
    assert torch.equal(soft.cpu(), want)
    assert torch.equal(hard.cpu(), want)


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("hw_cast", [0, 1])
@pytest.mark.parametrize("one_pass", [True, False])
@pytest.mark.parametrize("rows, width", [(117, 2048), (4096, 4096), (3, 5000)])
def test_kernel_on_cuda_matches_its_semantics(name: str, hw_cast: int, one_pass: bool, rows: int, width: int) -> None:
    generator = torch.Generator(device="cuda").manual_seed(rows)
    x = torch.randn(rows, width, device="cuda", generator=generator).to(torch.bfloat16)
    residual = torch.randn(rows, width, device="cuda", generator=generator).to(torch.bfloat16)
    weight = torch.randn(width, device="cuda", generator=generator).to(torch.bfloat16)
    cfg = dict(KERNEL.TUNABLES, HW_CAST=hw_cast, ONE_PASS=one_pass)
    got = KERNEL.launch_rms_norm_quant_fp8(x, weight, 1e-5, name, residual, None, cfg)
    want = _reference(x, weight, 1e-5, name, residual, None)
    steps = _code_steps(got[0], want[0])
    assert int(steps.max()) <= 1 and int((steps > 0).sum()) <= steps.numel() // 100
    torch.testing.assert_close(got[1], want[1], rtol=2 ** -7, atol=0)
    assert torch.equal(got[2], want[2])


def test_transferred_norm_quant_on_cuda_is_correct_and_real() -> None:
    problem = load_problem(UNSEEN / "skip_norm_fp8_codes")
    probes = matching_probes(problem, "cuda")  # on the CPU, where the reference runs; the kernel interpreted
    match = find_transfers(problem, reference_kernels(load_kb(default_kb_dir())), probes, default_suite_dir())[0]
    reference, _ = load_modules(problem)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "skip_norm_fp8_codes_candidate.py"
        path.write_text(transferred_kernel(match, reference.Model).source)
        result = evaluate_candidate(problem, CandidateSpec.file(path), EvalOptions(device="cuda", tier="full",
                                                                                   cases=1))
    op = score_op(problem, result, detect_profile("cuda"))
    assert op.correct and op.real and op.s_op > 0, [(s.shape_id, s.status, s.error) for s in result.shapes]
