"""The MoE align/sort reference kernel in both output conventions its reference defines (CPU interpreter, int
ids): static worst-case buffers (sentinel tail, -1 blocks) and exact, data-dependent sizes (views of the same
buffers); ids outside [0, num_experts) (expert parallelism's -1) are dropped by both."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO


@pytest.mark.parametrize("exact_sizes", [False, True])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_moe_align_kernel_matches_its_reference_in_either_size_convention(exact_sizes: bool,
                                                                           dtype: torch.dtype) -> None:
    kernel = import_file(REPO / "kb/family/moe/moe_align_sort.py", "align_kernel")
    reference = import_file(REPO / "problems/moe_align_sort/reference.py", "align_reference")
    # several chunks and scan steps; 1200 ids make chunks of 16 (about TARGET_PROGRAMS of them), fewer make 8
    cfg = dict(kernel.TUNABLES, CHUNK=16, SUB=8, SCAN_CHUNKS=2, BLOCK_B=4)
    torch.manual_seed(0)
    for tokens, top_k, experts, block in [(1, 2, 8, 4), (13, 3, 6, 4), (40, 2, 5, 8), (600, 2, 5, 8)]:
        ids = torch.randint(-1, experts + 2, (tokens, top_k), dtype=dtype)  # -1 and ids past the last expert
        want = reference.Model(experts, block, exact_sizes=exact_sizes)(ids)
        got = kernel.launch_moe_align_sort(ids, experts, block, cfg, exact_sizes=exact_sizes)
        for w, g in zip(want, got):
            assert g.dtype == torch.int32 and torch.equal(w, g), (tokens, experts, block)
        used = int(want[2].item())
        length = used if exact_sizes else kernel.max_padded_len(ids.numel(), experts, block)
        assert got[0].numel() == length and got[1].numel() == length // block
        assert bool((got[1][: used // block] >= 0).all()) and bool((got[1][used // block:] == -1).all())
        dropped = ((ids < 0) | (ids >= experts)).reshape(-1).nonzero().flatten()
        assert not torch.isin(got[0], dropped.to(torch.int32)).any()


def test_moe_align_kernel_with_counts_is_a_stable_counting_sort_at_block_size_one() -> None:
    """with_counts adds each expert's count and their offsets; with block_size 1 and exact sizes the outputs are
    a plain stable sort of the flat ids by expert (what torch.argsort(stable=True) and bincount give)."""
    kernel = import_file(REPO / "kb/family/moe/moe_align_sort.py", "align_kernel_counts")
    cfg = dict(kernel.TUNABLES, CHUNK=16, SUB=8, SCAN_CHUNKS=2, BLOCK_B=4)
    torch.manual_seed(1)
    for tokens, top_k, experts in [(1, 2, 8), (33, 4, 16), (300, 2, 5)]:
        ids = torch.randint(0, experts, (tokens, top_k), dtype=torch.int32)
        flat = ids.flatten().long()
        order, owner, total, counts, offsets = kernel.launch_moe_align_sort(ids, experts, 1, cfg, exact_sizes=True,
                                                                             with_counts=True)
        want_counts = torch.bincount(flat, minlength=experts).to(torch.int32)
        assert torch.equal(counts, want_counts) and int(total.item()) == flat.numel()
        assert torch.equal(offsets, torch.cat([torch.zeros(1, dtype=torch.int32), want_counts.cumsum(0).int()]))
        assert torch.equal(order, torch.argsort(flat, stable=True).int())
        assert torch.equal(owner, flat[order.long()].int())
        # padded blocks: the counts stay unpadded, the sort is the usual one
        padded = kernel.launch_moe_align_sort(ids, experts, 4, cfg, with_counts=True)
        assert torch.equal(padded[3], want_counts) and len(padded) == 5


def test_fused_experts_routing_over_several_chunks_matches_the_reference() -> None:
    """160 (token, expert) pairs: the routing sort runs as three 64-pair chunks (sized for the pair count), and
    the fused experts still give the reference's output."""
    kernel = import_file(REPO / "kb/family/moe/moe_fused_experts.py", "fused_experts_kernel")
    # a decode batch's 512 pairs in 8 programs, not one; a prefill's 65536 in 128; never past ROUTE_CHUNK
    assert [kernel.route_chunk(n, 1024) for n in (1, 160, 512, 65536, 1 << 20)] == [64, 64, 64, 512, 1024]
    reference = import_file(REPO / "problems/moe_fused_experts/reference.py", "fused_experts_reference")
    make = import_file(REPO / "problems/moe_fused_experts/input.py", "fused_experts_inputs")._make_inputs
    torch.manual_seed(0)
    inputs = make(num_tokens=40, hidden_size=64, intermediate_size=32, num_experts=8, top_k=4, dtype="float32",
                  device="cpu")
    torch.testing.assert_close(kernel.Model()(**inputs), reference.Model()(**inputs), rtol=1e-4, atol=1e-5)



def _small_case(name: str, seed: int):  # type: ignore[no-untyped-def]
    """The kernel module, 24 tokens over 4 experts (top-2, I 48) as fp32 inputs, and the reference's output."""
    kernel = import_file(REPO / "kb/family/moe/moe_fused_experts.py", f"fused_experts_{name}")
    reference = import_file(REPO / "problems/moe_fused_experts/reference.py", f"fused_experts_reference_{name}")
    make = import_file(REPO / "problems/moe_fused_experts/input.py", f"fused_experts_inputs_{name}")._make_inputs
    torch.manual_seed(seed)
    inputs = make(num_tokens=24, hidden_size=64, intermediate_size=48, num_experts=4, top_k=2, dtype="float32",
                  device="cpu")
    return kernel, inputs, reference.Model()(**inputs)


def test_joint_gate_up_dot_gives_the_reference_output() -> None:
    """GATE_UP_JOINT loads the gate and up weight rows interleaved as one operand and splits the one dot's
    columns back; odd tile widths against I (a partial last N tile) must still pair each gate column with its
    own up column."""
    kernel, inputs, want = _small_case("joint", 3)
    for joint, block_n in ((1, 16), (1, 32), (0, 32)):  # 48 = 3 x 16; 32 leaves a partial tile
        cfg = dict(kernel.TUNABLES, GATE_UP_JOINT=joint, BLOCK_M=16, BLOCK_N=block_n, BLOCK_K=32,
                   SMALL_MAX_PAIRS_PER_EXPERT=0)
        got = kernel.launch_moe_fused_experts(**inputs, cfg=cfg)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_tma_operands_give_the_reference_output() -> None:
    """TMA: the weight tiles (and the down GEMM's act rows) through descriptors; padding rows of a block read
    whatever act holds there and are masked at the store; a partial last N tile reads zero-filled rows."""
    kernel, inputs, want = _small_case("tma", 4)
    for block_n in (16, 32):
        cfg = dict(kernel.TUNABLES, TMA=1, BLOCK_M=16, BLOCK_N=block_n, BLOCK_K=16, DOWN_BLOCK_N=block_n,
                   DOWN_BLOCK_K=16, SMALL_MAX_PAIRS_PER_EXPERT=0)
        assert kernel._descriptors(cfg, True, w1=(inputs["w1"], block_n, 16))
        got = kernel.launch_moe_fused_experts(**inputs, cfg=cfg)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
