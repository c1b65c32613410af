"""Made-up test problem (published format): rotary embedding of a query from a cos/sin table the reference
computes at init as a non-persistent buffer (outside its state dict)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, head_size: int, max_positions: int = 4096, base: float = 10000.0) -> None:
        super().__init__()
        inv = 1.0 / (base ** (torch.arange(0, head_size, 2, dtype=torch.float32) / head_size))
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv)
        self.register_buffer("cos_sin_cache", torch.cat([freqs.cos(), freqs.sin()], dim=-1), persistent=False)

    def forward(self, positions: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        cos, sin = self.cos_sin_cache[positions].chunk(2, dim=-1)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        x1, x2 = query.float().chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(query.dtype)
