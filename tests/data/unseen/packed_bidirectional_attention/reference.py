"""Every token of a sequence attends to every token of the same sequence (no mask across the sequence),
scale 1/sqrt(head size); sequences are packed along the first axis, delimited by `offsets`."""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                offsets: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(query)
        bounds = offsets.tolist()
        for start, end in zip(bounds[:-1], bounds[1:]):
            q, k, v = (t[start:end].transpose(0, 1).float() for t in (query, key, value))
            out[start:end] = F.scaled_dot_product_attention(q, k, v).transpose(0, 1).to(query.dtype)
        return out
