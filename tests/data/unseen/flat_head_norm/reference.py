"""Made-up test problem (published format): RMSNorm of every query and key head, the heads arriving flattened
per token ([tokens, heads * head_dim], as a projection writes them) and leaving in that layout."""

import torch
import torch.nn as nn


class Model(nn.Module):

    def __init__(self, head_dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.eps = eps

    def _norm(self, flat: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
        heads = flat.view(flat.shape[0], -1, self.head_dim).float()
        scaled = heads * torch.rsqrt(heads.pow(2).mean(dim=-1, keepdim=True) + self.eps) * gain.float()
        return scaled.to(flat.dtype).view(flat.shape)

    def forward(self, query: torch.Tensor, key: torch.Tensor, query_gain: torch.Tensor,
                key_gain: torch.Tensor) -> tuple:
        return self._norm(query, query_gain), self._norm(key, key_gain)
