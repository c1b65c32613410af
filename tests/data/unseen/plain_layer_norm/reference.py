"""Made-up test problem (published format): a layer normalisation without a learned scale or shift
(elementwise_affine=False), over the last axis of [batch, seq, width] activations, computed in float32."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):

    def __init__(self, width: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.width = int(width)
        self.eps = float(eps)

    def forward(self, activations: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(activations.float(), (self.width,), eps=self.eps).to(activations.dtype)
