"""Rotary position embedding, neox style (rotate-half), with optional partial rotary dimension.

For every token t with position p = positions[t], and every head of q and k:

    cos = cos_sin_cache[p, :R/2],  sin = cos_sin_cache[p, R/2:]        (R = rotary_dim)
    x1  = x[..., :R/2],            x2  = x[..., R/2:R]
    out[..., :R/2]  = x1 * cos - x2 * sin
    out[..., R/2:R] = x2 * cos + x1 * sin
    out[..., R:]    = x[..., R:]                                       (pass-through when R < head_size)

computed in ``ct = promote_types(q.dtype, float32)`` (the cache values are upcast, not recomputed) and
rounded to q.dtype once. Returns new tensors; q and k are not mutated.

Inputs:
    positions:     [num_tokens] int64, 0 <= positions < max_position
    q:             [num_tokens, num_q_heads, head_size], float dtype; or [num_tokens, num_q_heads * head_size]
                   (the heads flattened per token, as vLLM's rotary embedding takes them)
    k:             [num_tokens, num_kv_heads, head_size] or [num_tokens, num_kv_heads * head_size], same dtype
    cos_sin_cache: [max_position, rotary_dim], same dtype; row p = [cos(p * f_i) for i < R/2] ++
                   [sin(p * f_i) for i < R/2], f_i = base ** (-2 i / R)
Outputs (tuple):
    q_out: shaped like q, dtype of q
    k_out: shaped like k, dtype of k

Init kwargs: head_size (int), rotary_dim (int, even, <= head_size), sections (three ints adding up to R/2, or None).

Multimodal rotary: with positions [3, num_tokens] (a time, a height and a width position per token) and
sections (s0, s1, s2), band i < R/2 of cos and sin is read at positions[j, t], j the section holding i
(i < s0: 0; i < s0 + s1: 1; else 2). A positions tensor [num_tokens] ignores sections.
"""

import torch
from torch import nn


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, rotary_dim: int, ct: torch.dtype,
            head_size: int) -> torch.Tensor:
    half = rotary_dim // 2
    xf = x.to(ct).reshape(x.shape[0], -1, head_size)  # [T, H, D], also for heads flattened per token
    x1 = xf[..., :half]
    x2 = xf[..., half:rotary_dim]
    o1 = x1 * cos - x2 * sin
    o2 = x2 * cos + x1 * sin
    out = torch.cat([o1, o2, xf[..., rotary_dim:]], dim=-1)
    return out.to(x.dtype).reshape(x.shape)


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
        ct = torch.promote_types(q.dtype, torch.float32)
        half = self.rotary_dim // 2
        if positions.dim() == 2:  # [3, T] streams: each band's section picks its stream
            if self.sections is None or sum(self.sections) != half or positions.shape[0] != len(self.sections):
                raise ValueError(f"positions {tuple(positions.shape)} need sections adding up to {half}")
            rows = cos_sin_cache[positions].to(ct)  # [3, T, R]
            cs = torch.cat([part[j] for j, part in enumerate(rows[..., :half].split(self.sections, dim=-1))]
                           + [part[j] for j, part in enumerate(rows[..., half:].split(self.sections, dim=-1))], -1)
        else:
            cs = cos_sin_cache.index_select(0, positions).to(ct)  # [T, R]
        cos = cs[:, None, :half]  # broadcast over heads
        sin = cs[:, None, half:]
        return (_rotate(q, cos, sin, self.rotary_dim, ct, self.head_size),
                _rotate(k, cos, sin, self.rotary_dim, ct, self.head_size))


def roofline_flops(inputs, outputs, head_size: int, rotary_dim: int | None = None, **_) -> int:
    """3 FLOPs (2 mul + 1 add) per rotated element of q and k; pass-through dims are free."""
    rotary_dim = head_size if rotary_dim is None else rotary_dim
    t = inputs["q"].shape[0]
    hq, hk = inputs["q"][0].numel() // head_size, inputs["k"][0].numel() // head_size
    return 3 * t * (hq + hk) * rotary_dim


def roofline_bytes(inputs, outputs, head_size: int, rotary_dim: int | None = None, **_) -> tuple[int, int]:
    """Read q, k, positions and only the cache rows that are used; write q_out and k_out."""
    q, k, pos, cache = inputs["q"], inputs["k"], inputs["positions"], inputs["cos_sin_cache"]
    rows = int(torch.unique(pos).numel())
    read = (q.numel() * q.element_size() + k.numel() * k.element_size() + pos.numel() * pos.element_size()
            + rows * cache.shape[1] * cache.element_size())
    written = sum(o.numel() * o.element_size() for o in outputs)
    return read, written
