"""Reference Triton kernel for attention_prefill_varlen (causal GQA flash attention over packed sequences).

Grid (tiles, num_heads): axis 0 enumerates the query tiles of all sequences (sequence b contributes
cdiv(L_b, BLOCK_M) tiles); its size cdiv(total_tokens, BLOCK_M) + batch bounds that sum without reading
cu_seqlens on the host, and surplus programs find no tile and store nothing. A program maps its id to
(sequence, tile) with a scalar scan over cu_seqlens (batch is small), taking the tiles of a sequence in
reverse order so the long causal rows start first.

Per tile: Q [BLOCK_M, D] stays in registers; K/V of the sequence's KV head (head // group) stream in
BLOCK_N chunks through an online softmax in fp32 (exp2 with the scale folded into log2(e)). Keys below the
tile's first row (rounded down to BLOCK_N) need no mask; only the chunks overlapping the diagonal apply the
causal mask. P is cast to V's dtype for the second dot (bf16/fp16 tensor cores); fp32 inputs use IEEE
dots so they meet the fp32 tolerance.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2}
SEARCH_SPACE = {
    "BLOCK_M": [16, 32, 64, 128],
    "BLOCK_N": [16, 32, 64, 128],
    "num_warps": [4, 8],
    "num_stages": [1, 2, 3, 4],
}

LOG2E = 1.4426950408889634


def _cap_stages(requested: int, stage_bytes: int, fixed_bytes: int = 0, budget: int = 160 * 1024) -> int:
    """Software-pipelining depth capped so that the staged K/V tiles fit in shared memory (H100/H200: 228 KB
    per SM); keeps every point of the search space compilable."""
    return max(1, min(requested, (budget - fixed_bytes) // max(stage_bytes, 1)))


@triton.jit
def _attention_prefill_varlen_kernel(
    q_ptr, k_ptr, v_ptr, cu_ptr, out_ptr,
    batch, group, head_dim, qk_scale,
    sq_t, sq_h, sq_d, sk_t, sk_h, sk_d, sv_t, sv_h, sv_d, so_t, so_h, so_d,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid = tl.program_id(0)
    head = tl.program_id(1)

    # program id -> (sequence start, length, tile index); no hit leaves seq_len = 0 (nothing stored)
    seq_start = 0
    seq_len = 0
    m_tile = 0
    seen = 0
    for b in range(batch):
        s0 = tl.load(cu_ptr + b)
        s1 = tl.load(cu_ptr + b + 1)
        n_tiles = (s1 - s0 + BLOCK_M - 1) // BLOCK_M
        hit = (pid >= seen) & (pid < seen + n_tiles)
        seq_start = tl.where(hit, s0, seq_start)
        seq_len = tl.where(hit, s1 - s0, seq_len)
        m_tile = tl.where(hit, n_tiles - 1 - (pid - seen), m_tile)  # heaviest (last) tile first
        seen += n_tiles

    kv_head = head // group
    m_start = m_tile * BLOCK_M
    offs_m = m_start + tl.arange(0, BLOCK_M)
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    m_ok = offs_m < seq_len
    d_ok = offs_d < head_dim
    base = seq_start.to(tl.int64)
    rows_m = (base + offs_m).to(tl.int64)

    q = tl.load(q_ptr + rows_m[:, None] * sq_t + head * sq_h + offs_d[None, :] * sq_d,
                mask=m_ok[:, None] & d_ok[None, :], other=0.0)
    k_base = k_ptr + kv_head * sk_h + offs_d[:, None] * sk_d   # [BLOCK_D, 1] (K read transposed)
    v_base = v_ptr + kv_head * sv_h + offs_d[None, :] * sv_d   # [1, BLOCK_D]

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)

    # 1) keys strictly before the tile: every row sees all of them, no mask
    n_full = (m_start // BLOCK_N) * BLOCK_N
    for n0 in range(0, n_full, BLOCK_N):
        rows_n = (base + n0 + offs_n0).to(tl.int64)
        kt = tl.load(k_base + rows_n[None, :] * sk_t, mask=d_ok[:, None], other=0.0)
        s = tl.dot(q, kt, input_precision="ieee") * qk_scale
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        vv = tl.load(v_base + rows_n[:, None] * sv_t, mask=d_ok[None, :], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(vv.dtype), vv, input_precision="ieee")
        m_i = m_new

    # 2) chunks overlapping the diagonal: causal + length mask
    n_end = tl.minimum(m_start + BLOCK_M, seq_len)
    for n0 in range(n_full, n_end, BLOCK_N):
        offs_n = n0 + offs_n0
        n_ok = offs_n < seq_len
        rows_n = (base + offs_n).to(tl.int64)
        kt = tl.load(k_base + rows_n[None, :] * sk_t, mask=d_ok[:, None] & n_ok[None, :], other=0.0)
        s = tl.dot(q, kt, input_precision="ieee") * qk_scale
        vis = (offs_n[None, :] <= offs_m[:, None]) & n_ok[None, :]
        s = tl.where(vis, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        vv = tl.load(v_base + rows_n[:, None] * sv_t, mask=d_ok[None, :] & n_ok[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(vv.dtype), vv, input_precision="ieee")
        m_i = m_new

    l_safe = tl.where(m_ok, l_i, 1.0)
    o = acc / l_safe[:, None]
    tl.store(out_ptr + rows_m[:, None] * so_t + head * so_h + offs_d[None, :] * so_d,
             o.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & d_ok[None, :])


def launch_attention_prefill_varlen(q, k, v, cu_seqlens, num_heads, num_kv_heads, softmax_scale):
    total, _, head_dim = q.shape
    batch = cu_seqlens.shape[0] - 1
    out = torch.empty_like(q)
    if total == 0 or batch <= 0:
        return out
    bm, bn = TUNABLES["BLOCK_M"], TUNABLES["BLOCK_N"]
    block_d = max(16, triton.next_power_of_2(head_dim))
    grid = (triton.cdiv(total, bm) + batch, num_heads)
    _attention_prefill_varlen_kernel[grid](
        q, k, v, cu_seqlens, out, batch, num_heads // num_kv_heads, head_dim, softmax_scale * LOG2E,
        *q.stride(), *k.stride(), *v.stride(), *out.stride(),
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=block_d,
        num_warps=TUNABLES["num_warps"],
        num_stages=_cap_stages(TUNABLES["num_stages"], 2 * bn * block_d * q.element_size(),
                               bm * block_d * q.element_size()),
    )
    return out


class Model(nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, softmax_scale: float | None = None):
        super().__init__()
        assert num_heads % num_kv_heads == 0
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim
        self.softmax_scale = float(softmax_scale) if softmax_scale is not None else head_dim ** -0.5

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
        return launch_attention_prefill_varlen(q, k, v, cu_seqlens, self.num_heads, self.num_kv_heads,
                                               self.softmax_scale)
