import torch
import torch.nn as nn


class Model(nn.Module):
    """Sigmoid routing with a score bias: the best groups by their two best biased scores, then the best experts
    inside them; weights are the unbiased scores, renormalised and scaled."""

    def __init__(self, groups: int = 8, topk_groups: int = 4, top_k: int = 8, scale: float = 2.5):
        super().__init__()
        self.groups, self.topk_groups, self.top_k, self.scale = groups, topk_groups, top_k, scale

    def forward(self, logits, bias):
        tokens, experts = logits.shape
        scores = logits.float().sigmoid()
        biased = scores + bias.float()
        group_scores = biased.view(tokens, self.groups, -1).topk(2, dim=-1).values.sum(-1)
        group_idx = group_scores.topk(self.topk_groups, dim=-1, sorted=False).indices
        group_mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1.0)
        mask = group_mask.unsqueeze(-1).expand(tokens, self.groups, experts // self.groups).reshape(tokens, -1)
        masked = biased.masked_fill(mask == 0, float("-inf"))
        ids = masked.topk(self.top_k, dim=-1, sorted=False).indices
        weights = scores.gather(1, ids)
        weights = weights / weights.sum(-1, keepdim=True) * self.scale
        return weights, ids.to(torch.int32)
