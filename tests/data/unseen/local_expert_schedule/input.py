"""Routing choices as one rank of an expert-parallel layer sees them: each token picks `choices` distinct experts
of `all_experts`; experts at or above `local_experts` live on other ranks and show as -1."""

import torch


def _make_inputs(tokens: int, choices: int, local_experts: int, all_experts: int, device: str = "cpu"):
    picked = torch.rand(tokens, all_experts, device=device).argsort(dim=-1)[:, :choices]
    return {"routing": torch.where(picked < local_experts, picked, -1).to(torch.int32)}
