"""Inputs (bfloat16 activations and weights): activations, gate-and-up and down projections per expert, the routing of each token."""

import torch


def _make_inputs(tokens: int, hidden: int, inter: int, experts: int, top_k: int, device: str = "cpu"):
    x = torch.randn(tokens, hidden, device=device).to(torch.bfloat16)
    gate_up = (torch.randn(experts, 2 * inter, hidden, device=device) * hidden ** -0.5).to(torch.bfloat16)
    down = (torch.randn(experts, hidden, inter, device=device) * inter ** -0.5).to(torch.bfloat16)
    scores = torch.randn(tokens, experts, device=device)
    weights, ids = torch.softmax(scores, dim=-1).topk(top_k, dim=-1)
    return {"x": x, "gate_up": gate_up, "down": down, "route_weights": weights, "route_ids": ids.to(torch.int32)}
