"""Reference Triton kernel: MoE router softmax + top-k (ties to the lower expert id) + optional renorm.

A program owns BLOCK_T tokens x all experts (BLOCK_E = next_power_of_2(E) <= a few hundred, so a token's
logits live in registers). Softmax statistics (row max, sum of exp) are computed once; the top-k is k
rounds of a masked arg-max on the raw logits: the max value, then the smallest expert id holding it
(canonical tie-break), then that id is masked out. Weights are exp(l - max) / sum, renormalised over the
k picks when asked. Computation runs in the weights' dtype (fp32; fp64 for fp64 logits).
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_T": 2, "ROW_TILES": 1, "num_warps": 1}
# Two tokens a program on one warp: the fastest point or within 10% of it at every router size of an H100 sweep
# (BLOCK_T 1-16 x 1-4 warps, CUDA-graph timing, top-8): 1.9x over 16 tokens on 4 warps at 13526 x 256,
# 1.8x at 1019 x 128, 1.14x at 8192 x 128 (kb/experience/exp-h100-moe-topk-small-tiles.md). The k arg-max
# rounds are a dependent chain of reductions; more, smaller programs run more of those chains at once.
SEARCH_SPACE = {
    "BLOCK_T": [1, 2, 4, 8, 16, 32, 64],
    "ROW_TILES": [1, 2, 4],
    "num_warps": [1, 2, 4, 8],
}


@triton.jit
def _moe_topk_gating_softmax_kernel(logits_ptr, w_ptr, ids_ptr, n_tokens, n_experts, top_k, stride_l,
                                    stride_w, stride_i, RENORM: tl.constexpr, BLOCK_T: tl.constexpr,
                                    BLOCK_E: tl.constexpr, BLOCK_K: tl.constexpr, ROW_TILES: tl.constexpr):
    ct = w_ptr.dtype.element_ty
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_E)
    kcols = tl.arange(0, BLOCK_K)
    col_ok = cols < n_experts
    for i in range(ROW_TILES):
        rows = (pid * ROW_TILES + i) * BLOCK_T + tl.arange(0, BLOCK_T)
        row_ok = rows < n_tokens
        rows64 = rows.to(tl.int64)
        # padded experts read -inf (never picked, exp -> 0); padded tokens read 0 (finite, never stored)
        other = tl.where(row_ok[:, None], float("-inf"), 0.0)
        x = tl.load(logits_ptr + rows64[:, None] * stride_l + cols[None, :],
                    mask=row_ok[:, None] & col_ok[None, :], other=other).to(ct)
        x = tl.where(col_ok[None, :], x, float("-inf"))
        row_max = tl.max(x, axis=1)
        denom = tl.sum(tl.exp(x - row_max[:, None]), axis=1)
        cand = x
        out_w = tl.zeros([BLOCK_T, BLOCK_K], dtype=ct)
        out_id = tl.zeros([BLOCK_T, BLOCK_K], dtype=tl.int32)
        for j in range(top_k):
            best = tl.max(cand, axis=1)
            hit = (cand == best[:, None]) & col_ok[None, :]
            idx = tl.min(tl.where(hit, cols[None, :], BLOCK_E), axis=1)     # lowest id among equal logits
            picked = cols[None, :] == idx[:, None]
            pj = tl.exp(best - row_max) / denom  # the picked logit is `best` itself (cand == x where not masked)
            cand = tl.where(picked, float("-inf"), cand)
            out_w = tl.where(kcols[None, :] == j, pj[:, None], out_w)
            out_id = tl.where(kcols[None, :] == j, idx[:, None], out_id)
        if RENORM:
            out_w = out_w / tl.sum(out_w, axis=1)[:, None]
        smask = row_ok[:, None] & (kcols < top_k)[None, :]
        tl.store(w_ptr + rows64[:, None] * stride_w + kcols[None, :], out_w, mask=smask)
        tl.store(ids_ptr + rows64[:, None] * stride_i + kcols[None, :], out_id, mask=smask)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def launch_moe_topk_gating_softmax(gating_output: torch.Tensor, top_k: int, renormalize: bool,
                                   cfg: dict = TUNABLES):
    if gating_output.stride(-1) != 1:
        gating_output = gating_output.contiguous()
    t, e = gating_output.shape
    ct = torch.float64 if gating_output.dtype == torch.float64 else torch.float32  # promote(dtype, fp32)
    weights = torch.empty((t, top_k), dtype=ct, device=gating_output.device)
    ids = torch.empty((t, top_k), dtype=torch.int32, device=gating_output.device)
    rows_per_prog = cfg["BLOCK_T"] * cfg["ROW_TILES"]
    grid = (max(1, _cdiv(t, rows_per_prog)),)
    _moe_topk_gating_softmax_kernel[grid](gating_output, weights, ids, t, e, top_k, gating_output.stride(0),
                                          weights.stride(0), ids.stride(0), RENORM=bool(renormalize),
                                          BLOCK_T=cfg["BLOCK_T"], BLOCK_E=_next_pow2(e),
                                          BLOCK_K=_next_pow2(top_k), ROW_TILES=cfg["ROW_TILES"],
                                          num_warps=cfg["num_warps"])
    return weights, ids


class Model(nn.Module):
    def __init__(self, top_k: int = 2, renormalize: bool = True):
        super().__init__()
        self.top_k = int(top_k)
        self.renormalize = bool(renormalize)

    def forward(self, gating_output: torch.Tensor):
        return launch_moe_topk_gating_softmax(gating_output, self.top_k, self.renormalize)
