"""Routed SwiGLU experts over block-quantised fp8 operands: each operand is its fp8 codes times the scale of
its block (activations: a token's 64 columns; weights: 64 x 64); each token goes through the feed-forward of
each expert it is routed to, weighted by its routing weight; the sum is returned in float32."""

import torch
import torch.nn.functional as F
from torch import nn

BLOCK = 64


def _dequantise(codes: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """fp8 codes times their block's scale, in float32 (scale has one entry per block of each trailing dim)."""
    full = scale.float()
    for dim in range(scale.dim() - 2, scale.dim()):
        full = full.repeat_interleave(codes.shape[dim] // scale.shape[dim], dim=dim)
    return codes.float() * full


class Model(nn.Module):
    def forward(self, x: torch.Tensor, x_scale: torch.Tensor, gate_up: torch.Tensor, gate_up_scale: torch.Tensor,
                down: torch.Tensor, down_scale: torch.Tensor, route_weights: torch.Tensor,
                route_ids: torch.Tensor) -> torch.Tensor:
        inter = gate_up.shape[1] // 2
        xs = x.float() * x_scale.float().repeat_interleave(BLOCK, dim=1)
        out = torch.zeros(x.shape[0], x.shape[1], dtype=torch.float32, device=x.device)
        for expert in range(gate_up.shape[0]):
            rows, slots = torch.nonzero(route_ids == expert, as_tuple=True)
            if rows.numel() == 0:
                continue
            h = xs[rows] @ _dequantise(gate_up[expert], gate_up_scale[expert]).t()
            y = (F.silu(h[:, :inter]) * h[:, inter:]) @ _dequantise(down[expert], down_scale[expert]).t()
            out.index_add_(0, rows, y * route_weights[rows, slots].float()[:, None])
        return out
