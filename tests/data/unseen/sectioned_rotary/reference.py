"""Made-up test problem (published format): rotary embedding whose frequency bands take their positions from
different position streams (a time, a height and a width index per token, as multimodal models lay out image
patches). Band i of the rotated half uses positions[s(i)], where s(i) is the stream whose section holds i.
q and k arrive flattened to [tokens, heads * head_size]; the rotary part is neox style (rotate half)."""

import torch
import torch.nn as nn


class Model(nn.Module):

    def __init__(self, head_size: int, rotary_dim: int, bands_per_stream: list) -> None:
        super().__init__()
        if sum(bands_per_stream) * 2 != rotary_dim:
            raise ValueError(f"bands_per_stream {bands_per_stream} must add up to rotary_dim / 2 = {rotary_dim // 2}")
        self.head_size = head_size
        self.rotary_dim = rotary_dim
        self.bands_per_stream = list(bands_per_stream)

    def _bands(self, table: torch.Tensor) -> torch.Tensor:
        # table: [streams, tokens, rotary_dim / 2] -> [tokens, rotary_dim / 2], band by band from its stream
        pieces = table.split(self.bands_per_stream, dim=-1)
        return torch.cat([piece[stream] for stream, piece in enumerate(pieces)], dim=-1)

    def _rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        tokens = x.shape[0]
        heads = x.view(tokens, -1, self.head_size)
        half = self.rotary_dim // 2
        first = heads[..., :half].float()
        second = heads[..., half:self.rotary_dim].float()
        c, s = cos[:, None, :], sin[:, None, :]
        turned = torch.cat([first * c - second * s, second * c + first * s], dim=-1).to(x.dtype)
        return torch.cat([turned, heads[..., self.rotary_dim:]], dim=-1).reshape(tokens, -1)

    def forward(self, positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor,
                cos_sin_cache: torch.Tensor) -> tuple:
        looked_up = cos_sin_cache[positions].float()  # [streams, tokens, rotary_dim]
        cos, sin = looked_up.chunk(2, dim=-1)
        return self._rotate(query, self._bands(cos), self._bands(sin)), \
            self._rotate(key, self._bands(cos), self._bands(sin))
