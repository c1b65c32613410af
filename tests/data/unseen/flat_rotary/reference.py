"""Made-up test problem (published format): neox-style rotary embedding of q and k whose heads arrive flattened
per token ([tokens, heads * head_size], as a projection writes them), a partial rotary width, the cos / sin table
given as an input and read at each token's position."""

import torch
import torch.nn as nn


class Model(nn.Module):

    def __init__(self, head_size: int, rotary_dim: int) -> None:
        super().__init__()
        self.head_size = head_size
        self.rotary_dim = rotary_dim

    def _turn(self, flat: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        heads = flat.view(flat.shape[0], -1, self.head_size)
        half = self.rotary_dim // 2
        first = heads[..., :half].float()
        second = heads[..., half:self.rotary_dim].float()
        turned = torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1).to(flat.dtype)
        return torch.cat([turned, heads[..., self.rotary_dim:]], dim=-1).reshape(flat.shape)

    def forward(self, positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor,
                cos_sin_cache: torch.Tensor) -> tuple:
        cos, sin = cos_sin_cache[positions].float().chunk(2, dim=-1)
        return self._turn(query, cos[:, None, :], sin[:, None, :]), self._turn(key, cos[:, None, :], sin[:, None, :])
