"""Reference Triton kernel: neox-style (rotate-half) rotary embedding of q and k with partial rotary_dim.

For token t at position p, per head:  x1 = x[:R/2], x2 = x[R/2:R], cos/sin = cos_sin_cache[p, :R/2 | R/2:]
    out[:R/2] = x1 cos - x2 sin,  out[R/2:R] = x2 cos + x1 sin,  out[R:] = x[R:]  (pass-through copy)
fp32 math on upcast cache values, one rounding; q and k are not mutated (new outputs).

Tiling: a program owns TOKENS_PER_PROGRAM tokens. Per token it gathers the cache row once (cos and sin:
R elements, int64 offset pos * stride), then walks the heads in blocks of BLOCK_H as [BLOCK_H, R/2] tiles:
x1 and x2 are two contiguous half-row loads, the rotated halves two stores, and the pass-through columns
(R < head_size) a masked copy. SINGLE_LAUNCH: q and k heads of a token are handled by the same program
(cos/sin gathered once for both); otherwise one launch per tensor. Head and token strides are taken from the
tensors, so q/k may be slices of a fused qkv buffer; heads flattened per token ([T, H * head_size], as vLLM's
rotary embedding takes them) are the same rows with head stride head_size, the outputs in the inputs' shapes.
Three position streams ([3, T]: time, height, width of a multimodal token) with `sections` (three band counts
adding up to R/2): band r of the cos/sin row is read at the position of the stream whose section holds r.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_H": 16, "TOKENS_PER_PROGRAM": 1, "SINGLE_LAUNCH": True, "num_warps": 4}
SEARCH_SPACE = {
    "BLOCK_H": [1, 2, 4, 8, 16, 32, 64],
    "TOKENS_PER_PROGRAM": [1, 2, 4, 8],
    "SINGLE_LAUNCH": [True, False],
    "num_warps": [1, 2, 4, 8],
}


@triton.jit
def _rope_token_heads(x_ptr, o_ptr, tok, n_heads, sx_t, sx_h, so_t, so_h, cos, sin,
                      HALF: tl.constexpr, ROT: tl.constexpr, HEAD_SIZE: tl.constexpr, BLOCK_H: tl.constexpr,
                      BLOCK_HALF: tl.constexpr, BLOCK_PASS: tl.constexpr):
    offs_h = tl.arange(0, BLOCK_H)
    offs_r = tl.arange(0, BLOCK_HALF)
    r_mask = offs_r < HALF
    x_tok = x_ptr + tok * sx_t
    o_tok = o_ptr + tok * so_t
    for h0 in range(0, n_heads, BLOCK_H):
        heads = (h0 + offs_h).to(tl.int64)
        h_mask = heads < n_heads
        x_h = x_tok + heads[:, None] * sx_h
        o_h = o_tok + heads[:, None] * so_h
        mask = h_mask[:, None] & r_mask[None, :]
        x1 = tl.load(x_h + offs_r[None, :], mask=mask, other=0.0).to(tl.float32)
        x2 = tl.load(x_h + HALF + offs_r[None, :], mask=mask, other=0.0).to(tl.float32)
        o1 = x1 * cos[None, :] - x2 * sin[None, :]
        o2 = x2 * cos[None, :] + x1 * sin[None, :]
        tl.store(o_h + offs_r[None, :], o1.to(o_ptr.dtype.element_ty), mask=mask)
        tl.store(o_h + HALF + offs_r[None, :], o2.to(o_ptr.dtype.element_ty), mask=mask)
        if ROT < HEAD_SIZE:  # pass-through tail, copied unchanged
            offs_p = tl.arange(0, BLOCK_PASS)
            p_mask = h_mask[:, None] & (offs_p < HEAD_SIZE - ROT)[None, :]
            xp = tl.load(x_h + ROT + offs_p[None, :], mask=p_mask, other=0.0)
            tl.store(o_h + ROT + offs_p[None, :], xp.to(o_ptr.dtype.element_ty), mask=p_mask)


@triton.jit
def _rope_kernel(pos_ptr, cache_ptr, q_ptr, qo_ptr, k_ptr, ko_ptr, n_tokens, n_q_heads, n_k_heads,
                 sq_t, sq_h, sqo_t, sqo_h, sk_t, sk_h, sko_t, sko_h, s_cache,
                 HALF: tl.constexpr, ROT: tl.constexpr, HEAD_SIZE: tl.constexpr, BLOCK_H: tl.constexpr,
                 BLOCK_HALF: tl.constexpr, BLOCK_PASS: tl.constexpr, TOKENS: tl.constexpr, DO_K: tl.constexpr,
                 SECTIONS: tl.constexpr):
    pid = tl.program_id(0)
    offs_r = tl.arange(0, BLOCK_HALF)
    r_mask = offs_r < HALF
    for i in range(TOKENS):
        tok = pid.to(tl.int64) * TOKENS + i
        if tok < n_tokens:
            if SECTIONS == 0:
                pos = tl.load(pos_ptr + tok).to(tl.int64)
                row = cache_ptr + pos * s_cache
                cos = tl.load(row + offs_r, mask=r_mask, other=0.0).to(tl.float32)
                sin = tl.load(row + HALF + offs_r, mask=r_mask, other=0.0).to(tl.float32)
            else:  # three position streams [3, T]: band r reads the stream whose section holds it
                p0 = tl.load(pos_ptr + tok).to(tl.int64)
                p1 = tl.load(pos_ptr + n_tokens + tok).to(tl.int64)
                p2 = tl.load(pos_ptr + 2 * n_tokens + tok).to(tl.int64)
                band_pos = tl.where(offs_r < SECTIONS // 4096, p0, tl.where(offs_r < SECTIONS % 4096, p1, p2))
                rows = cache_ptr + band_pos * s_cache + offs_r
                cos = tl.load(rows, mask=r_mask, other=0.0).to(tl.float32)
                sin = tl.load(rows + HALF, mask=r_mask, other=0.0).to(tl.float32)
            _rope_token_heads(q_ptr, qo_ptr, tok, n_q_heads, sq_t, sq_h, sqo_t, sqo_h, cos, sin,
                              HALF, ROT, HEAD_SIZE, BLOCK_H, BLOCK_HALF, BLOCK_PASS)
            if DO_K:
                _rope_token_heads(k_ptr, ko_ptr, tok, n_k_heads, sk_t, sk_h, sko_t, sko_h, cos, sin,
                                  HALF, ROT, HEAD_SIZE, BLOCK_H, BLOCK_HALF, BLOCK_PASS)


def _last_dim_contiguous(t: torch.Tensor) -> tuple[torch.Tensor, tuple[int, ...]]:
    """t with unit stride in its last dimension, and its strides (one query: each costs host time per call)."""
    strides = t.stride()
    if strides[-1] == 1:
        return t, strides
    t = t.contiguous()
    return t, t.stride()


def _out_like(t: torch.Tensor) -> tuple[torch.Tensor, tuple[int, ...]]:
    """An uninitialised contiguous tensor shaped like t and its strides: empty_like where t is contiguous (a third
    of torch.empty's host time with dtype and device keywords), else torch.empty."""
    out = torch.empty_like(t) if t.is_contiguous() else torch.empty(t.shape, dtype=t.dtype, device=t.device)
    return out, out.stride()


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def _flat_heads(q: torch.Tensor, k: torch.Tensor, strides: list, head_size: int | None) -> tuple:
    """Head counts and [token, head] strides of q, k and their outputs (in `strides`' order) for heads flattened
    per token ([T, H * head_size], unit last stride)."""
    if head_size is None or q.dim() != 2 or k.dim() != 2 or q.shape[1] % head_size or k.shape[1] % head_size:
        raise ValueError(f"q {tuple(q.shape)} / k {tuple(k.shape)}: [T, H, D], or [T, H * D] with head_size given")
    return q.shape[1] // head_size, k.shape[1] // head_size, [(s[0], head_size) for s in strides]


def _section_ends(positions: torch.Tensor, sections: list[int] | None, half: int) -> int:
    """The SECTIONS constexpr: 0 for one position per token, else the ends of the first two bands' sections
    (end1 * 4096 + end2) for three position streams [3, T]."""
    if positions.dim() == 1:
        return 0
    if sections is None or positions.dim() != 2 or positions.shape[0] != 3 or len(sections) != 3 \
            or sum(sections) != half:
        raise ValueError(f"positions {tuple(positions.shape)}: [T], or [3, T] with three sections adding up to "
                         f"rotary_dim / 2 = {half} (got {sections})")
    return sections[0] * 4096 + sections[0] + sections[1]


def launch_rope(positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor, cos_sin_cache: torch.Tensor,
                rotary_dim: int, cfg: dict | None = None, head_size: int | None = None,
                sections: list[int] | None = None):
    """q / k as [T, H, D], or as [T, H * D] with `head_size` given; outputs shaped like them. positions [T],
    or [3, T] with `sections` (multimodal rotary: the bands of each section read their own stream)."""
    cfg = TUNABLES if cfg is None else cfg
    q, sq = _last_dim_contiguous(q)
    k, sk = _last_dim_contiguous(k)
    positions = positions.contiguous()
    cache, s_cache = _last_dim_contiguous(cos_sin_cache)
    q_out, sqo = _out_like(q)
    k_out, sko = _out_like(k)
    if len(sq) == 3:
        n_tokens, n_q_heads, head_size = q.shape
        n_k_heads = k.shape[1]
    else:
        n_tokens = q.shape[0]
        n_q_heads, n_k_heads, (sq, sk, sqo, sko) = _flat_heads(q, k, [sq, sk, sqo, sko], head_size)
    if n_tokens == 0:
        return q_out, k_out
    half = rotary_dim // 2
    tokens = cfg["TOKENS_PER_PROGRAM"]
    grid = (_cdiv(n_tokens, tokens),)
    meta = dict(HALF=half, ROT=rotary_dim, HEAD_SIZE=head_size, BLOCK_H=cfg["BLOCK_H"],
                BLOCK_HALF=_next_pow2(max(half, 1)),
                BLOCK_PASS=_next_pow2(max(head_size - rotary_dim, 1)),
                TOKENS=tokens, SECTIONS=_section_ends(positions, sections, half), num_warps=cfg["num_warps"])
    q_part = (q, q_out)
    q_dims = (sq[0], sq[1], sqo[0], sqo[1])
    k_part = (k, k_out)
    k_dims = (sk[0], sk[1], sko[0], sko[1])
    if cfg["SINGLE_LAUNCH"]:
        _rope_kernel[grid](positions, cache, *q_part, *k_part, n_tokens, n_q_heads, n_k_heads,
                           *q_dims, *k_dims, s_cache[0], DO_K=True, **meta)
    else:
        # one launch per tensor: the tensor goes in the q slot, the unused k slot repeats it
        for part, dims, n_heads in ((q_part, q_dims, n_q_heads), (k_part, k_dims, n_k_heads)):
            if n_heads > 0:
                _rope_kernel[grid](positions, cache, *part, *part, n_tokens, n_heads, n_heads,
                                   *dims, *dims, s_cache[0], DO_K=False, **meta)
    return q_out, k_out


class Model(nn.Module):
    def __init__(self, head_size: int, rotary_dim: int | None = None, sections: list[int] | None = None):
        super().__init__()
        rotary_dim = head_size if rotary_dim is None else rotary_dim
        if rotary_dim % 2 != 0 or rotary_dim > head_size:
            raise ValueError(f"rotary_dim {rotary_dim} must be even and <= head_size {head_size}")
        self.head_size = head_size
        self.rotary_dim = rotary_dim
        self.sections = None if sections is None else [int(s) for s in sections]

    def forward(self, positions: torch.Tensor, q: torch.Tensor, k: torch.Tensor, cos_sin_cache: torch.Tensor):
        return launch_rope(positions, q, k, cos_sin_cache, self.rotary_dim, head_size=self.head_size,
                           sections=self.sections)
