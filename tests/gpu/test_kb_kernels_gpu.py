"""On a CUDA GPU: the KB kernels' configurations that only the GPU compiles the way they run there — the fp8
GEMM's exact upcast pass and the varlen attention's AUTO tiles with a register cap — against exact results."""

from __future__ import annotations

from types import ModuleType

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO

pytestmark = pytest.mark.gpu
GROUP = 128


@pytest.fixture(scope="module")
def gemm() -> ModuleType:
    return import_file(REPO / "kb/family/gemm/gemm_fp8_blockscale.py", "gemm_fp8_gpu")


@pytest.fixture(scope="module")
def probe() -> ModuleType:
    """scripts/fp8_gemm_probe_device.py: its block-scaled operands and float64 product (one definition)."""
    return import_file(REPO / "scripts/fp8_gemm_probe_device.py", "fp8_probe_gpu")


@pytest.fixture(scope="module")
def varlen() -> ModuleType:
    return import_file(REPO / "kb/family/attention/attention_prefill_varlen.py", "varlen_gpu")


@pytest.mark.parametrize("m", [300, 2048])
def test_fp8_gemm_upcast_pass_meets_a_float16_tolerance(gemm: ModuleType, probe: ModuleType, m: int) -> None:
    """The accuracy step (fp16 copies, TMA tiles) is within 5e-3 of the exact float64 product on every element,
    where the fp8 MMA's own accumulation is not (the reason the step exists)."""
    torch.manual_seed(0)
    a, sa, b, sb = probe.quantised(m, 1024, 2048)
    exact = probe.exact(a, sa, b, sb)
    step = dict(gemm.TUNABLES, **gemm.ACCURACY_STEPS[0])
    got = gemm.launch_gemm_fp8_blockscale(a, sa, b, sb, torch.float32, GROUP, step).double()
    torch.testing.assert_close(got, exact, rtol=5e-3, atol=5e-3)


@pytest.mark.parametrize("block_n", [128, 256])
def test_fp8_gemm_rescaled_accumulator_meets_a_float16_tolerance(gemm: ModuleType, probe: ModuleType,
                                                                  block_n: int) -> None:
    """RESCALE (one fp16-operand accumulator rescaled between K groups, compiled for wgmma here) stays within 5e-3
    of the exact product, with a zero-scale group of A rows and a zero-scale block of B."""
    torch.manual_seed(0)
    a, sa, b, sb = probe.quantised(1000, 1024, 2048)
    sa[7, 3] = 0.0
    sb[2, 5] = 0.0
    exact = probe.exact(a, sa, b, sb)
    cfg = dict(gemm.TUNABLES, UPCAST=1, UPCAST_PASS=1, RESCALE=1, BLOCK_M=128, BLOCK_N=block_n, BLOCK_K=64,
               num_warps=8)
    got = gemm.launch_gemm_fp8_blockscale(a, sa, b, sb, torch.float32, GROUP, cfg).double()
    torch.testing.assert_close(got, exact, rtol=5e-3, atol=5e-3)


@pytest.mark.parametrize("gluon", [0, 1])
@pytest.mark.parametrize(("seqs", "length", "heads", "kv_heads", "dim"),
                         [(40, 256, 16, 4, 128), (1, 875, 16, 2, 256), (3, 700, 8, 8, 80)])
def test_varlen_auto_matches_sdpa_on_a_paged_cache(varlen: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                                   seqs: int, length: int, heads: int, kv_heads: int, dim: int,
                                                   gluon: int) -> None:
    """AUTO's picks (short-sequence tiles with the register cap, 64-row tiles for few programs, long tiles; the
    Gluon path for 16-slot pages where the head is a power of two) give causal attention over a shuffled paged
    cache within bf16 rounding of SDPA on the gathered keys."""
    monkeypatch.setitem(varlen.TUNABLES, "GLUON", gluon)
    torch.manual_seed(0)
    page, tokens = 16, seqs * length
    per_seq = -(-length // page)
    q = torch.randn(tokens, heads, dim, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(seqs * per_seq, page, kv_heads, dim, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    table = torch.randperm(seqs * per_seq, device="cuda").view(seqs, per_seq).to(torch.int32)
    cu = torch.arange(0, tokens + 1, length, device="cuda", dtype=torch.int32)
    used = torch.full((seqs,), length, device="cuda", dtype=torch.int32)
    got = varlen.Model(heads, kv_heads, dim)(q, k, v, cu, seqused_k=used, block_table=table)
    for s in range(seqs):
        rows = (table[s].long()[:, None] * page + torch.arange(page, device="cuda")).flatten()[:length]
        ks = k.view(-1, kv_heads, dim)[rows].transpose(0, 1).repeat_interleave(heads // kv_heads, 0)
        vs = v.view(-1, kv_heads, dim)[rows].transpose(0, 1).repeat_interleave(heads // kv_heads, 0)
        want = torch.nn.functional.scaled_dot_product_attention(
            q[s * length:(s + 1) * length].transpose(0, 1).float(), ks.float(), vs.float(), is_causal=True)
        torch.testing.assert_close(got[s * length:(s + 1) * length].float(), want.transpose(0, 1),
                                   rtol=2e-2, atol=2e-2)
