"""On a CUDA GPU: the gated delta rule kernels in bf16 at serving sizes (the recurrent kernel over tokens with
grouped heads, gates from A_log/a/dt_bias/b and a returned slot pool; the chunked state pass on the tensor
cores), and the candidates transferred to the published recurrent update and chunked state pass correct and
real on the evaluator (when the published subset is beside the checkout)."""

from __future__ import annotations

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO
from tests.knowledge.test_chunk_delta_state import chunk_states

pytestmark = pytest.mark.gpu
LINATT = REPO / "kb" / "family" / "linear_attention"
SUBSET = REPO.parent / "shared" / "atrex-bench-subset"


def test_recurrent_kernel_over_tokens_in_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = import_file(LINATT / "linear_attn_gated_delta_decode.py", "gdr_kernel_gpu")
    monkeypatch.setitem(kernel.TUNABLES, "CHUNK", 0)  # the token loop (the chunked form has its own test)
    reference = import_file(REPO / "problems/linear_attn_gated_delta_decode/reference.py", "gdr_reference_gpu")
    torch.manual_seed(0)
    dev, bf = "cuda", torch.bfloat16
    batch, tokens, q_heads, heads, dim, slots = 2, 96, 16, 32, 128, 5
    args = {"q": torch.randn(batch, tokens, q_heads, dim, device=dev, dtype=bf),
            "k": torch.randn(batch, tokens, q_heads, dim, device=dev, dtype=bf),
            "v": torch.randn(batch, tokens, heads, dim, device=dev, dtype=bf),
            "A_log": torch.randn(heads, device=dev) * 0.5, "a": torch.randn(batch, tokens, heads, device=dev, dtype=bf),
            "dt_bias": torch.randn(heads, device=dev, dtype=bf), "b": torch.randn(batch, tokens, heads, device=dev, dtype=bf),
            "state": torch.randn(slots, heads, dim, dim, device=dev) * 0.1,
            "state_indices": torch.tensor([4, 1], dtype=torch.int32, device=dev)}
    init = {"inplace_final_state": False, "l2norm_clamp": True}
    given = args["state"].clone()
    out, final = kernel.Model(**init)(**args)
    want_out, want_final = reference.Model(**init)(**{k: v.clone() for k, v in args.items()})
    torch.testing.assert_close(out.float(), want_out.float(), atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(final, want_final, atol=1e-3, rtol=1e-3)
    assert torch.equal(args["state"], given)


@pytest.mark.parametrize("chunk, warps, tf32", [(16, 4, 1), (32, 4, 1), (64, 4, 1), (64, 8, 0)])
def test_chunked_form_over_tokens_in_bf16(monkeypatch: pytest.MonkeyPatch, chunk: int, warps: int, tf32: int) -> None:
    """CHUNK (the recurrence folded into chunks of dots; tf32 or fp32 products) matches the reference at serving
    sizes: 300 tokens (a partial last chunk) with grouped heads, gates from A_log/a/dt_bias/b, a returned pool."""
    kernel = import_file(LINATT / "linear_attn_gated_delta_decode.py", "gdr_kernel_chunk_gpu")
    reference = import_file(REPO / "problems/linear_attn_gated_delta_decode/reference.py", "gdr_reference_chunk_gpu")
    for key, value in {"CHUNK": chunk, "CHUNK_WARPS": warps, "CHUNK_TF32": tf32}.items():
        monkeypatch.setitem(kernel.TUNABLES, key, value)
    torch.manual_seed(1)
    dev, bf = "cuda", torch.bfloat16
    batch, tokens, q_heads, heads, dim, slots = 1, 300, 4, 8, 128, 3
    args = {"q": torch.randn(batch, tokens, q_heads, dim, device=dev, dtype=bf),
            "k": torch.randn(batch, tokens, q_heads, dim, device=dev, dtype=bf),
            "v": torch.randn(batch, tokens, heads, dim, device=dev, dtype=bf),
            "A_log": torch.randn(heads, device=dev) * 0.5 - 2.0,  # slow decays: long memories
            "a": torch.randn(batch, tokens, heads, device=dev, dtype=bf),
            "dt_bias": torch.randn(heads, device=dev, dtype=bf), "b": torch.randn(batch, tokens, heads, device=dev, dtype=bf),
            "state": torch.randn(slots, heads, dim, dim, device=dev) * 0.1,
            "state_indices": torch.tensor([2], dtype=torch.int32, device=dev)}
    init = {"inplace_final_state": False}
    out, final = kernel.Model(**init)(**args)
    want_out, want_final = reference.Model(**init)(**{k: v.clone() for k, v in args.items()})
    scale = want_out.float().abs().max().item()
    torch.testing.assert_close(out.float(), want_out.float(), atol=2e-2 * scale, rtol=2e-2)
    torch.testing.assert_close(final, want_final, atol=2e-2 * want_final.abs().max().item(), rtol=2e-2)


def test_chunk_state_pass_in_bf16() -> None:
    kernel = import_file(LINATT / "linear_attn_chunk_delta_state.py", "chunk_kernel_gpu")
    torch.manual_seed(0)
    dev, bf = "cuda", torch.bfloat16
    batch, tokens, k_heads, heads, dim = 2, 300, 4, 8, 128
    k = (torch.randn(batch, tokens, k_heads, dim, device=dev) * 0.1).to(bf)
    w = (torch.randn(batch, tokens, heads, dim, device=dev) * 0.1).to(bf)
    u = torch.randn(batch, tokens, heads, dim, device=dev).to(bf)
    g = torch.cat([c.cumsum(1) for c in (-torch.rand(batch, tokens, heads, device=dev) * 0.05).split(64, 1)], 1)
    state = torch.randn(batch, heads, dim, dim, device=dev) * 0.1
    h, v_new, final = kernel.Model(chunk_size=64)(k, w, u, g, state)
    want_h, want_v, want_final = chunk_states(k.float().cpu(), w.float().cpu(), u.float().cpu(), g.cpu(),
                                              state.cpu(), 64)
    scale = want_final.abs().max().item()
    torch.testing.assert_close(h.float().cpu(), want_h, atol=2e-2 * scale, rtol=2e-2)
    torch.testing.assert_close(v_new.float().cpu(), want_v, atol=5e-2, rtol=2e-2)
    torch.testing.assert_close(final.cpu(), want_final, atol=2e-2 * scale, rtol=2e-2)
