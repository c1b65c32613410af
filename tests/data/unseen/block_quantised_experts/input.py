"""Inputs: activations and both projections of every expert stored as float8_e4m3fn with float32 scales
(activations: one per token and 64 columns; weights: one per 64 x 64 block), and the routing of each token."""

import torch

BLOCK = 64


def _to_fp8(values: torch.Tensor, group: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """values (each dim a multiple of its group) as e4m3fn codes and the per-group scale (largest |value| / 448)."""
    shape = [d for size, g in zip(values.shape, group) for d in (size // g, g)]
    blocks = values.reshape(shape)
    inner = tuple(range(1, len(shape), 2))
    scale = blocks.abs().amax(dim=inner, keepdim=True) / 448.0
    codes = (blocks / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return codes.reshape(values.shape), scale.squeeze(inner)


def _make_inputs(tokens: int, hidden: int, inter: int, experts: int, top_k: int, device: str = "cpu"):
    x, x_scale = _to_fp8(torch.randn(tokens, hidden, device=device), (1, BLOCK))
    gate_up, gate_up_scale = _to_fp8(torch.randn(experts, 2 * inter, hidden, device=device) * hidden ** -0.5,
                                     (1, BLOCK, BLOCK))
    down, down_scale = _to_fp8(torch.randn(experts, hidden, inter, device=device) * inter ** -0.5, (1, BLOCK, BLOCK))
    weights, ids = torch.softmax(torch.randn(tokens, experts, device=device), dim=-1).topk(top_k, dim=-1)
    return {"x": x, "x_scale": x_scale, "gate_up": gate_up, "gate_up_scale": gate_up_scale, "down": down,
            "down_scale": down_scale, "route_weights": weights, "route_ids": ids.to(torch.int32)}
