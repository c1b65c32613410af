"""Made-up test problem (published format): attention whose scores are biased by the distance between positions,
with a slope per head (an ALiBi-style bias computed in forward), through scaled_dot_product_attention."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        length = q.shape[2]
        slopes = 2.0 ** (-8.0 * torch.arange(1, self.num_heads + 1, device=q.device, dtype=torch.float32)
                         / self.num_heads)
        pos = torch.arange(length, device=q.device, dtype=torch.float32)
        bias = -(pos[None, :] - pos[:, None]).abs()[None] * slopes[:, None, None]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))
