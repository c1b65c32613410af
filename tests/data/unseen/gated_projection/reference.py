"""Made-up test problem (published format): a projection with a bias, gated by a sigmoid and scaled by a second
input, out = sigmoid(x @ weight.T + bias) * up. Inductor lowers the product to a library GEMM."""

import torch
import torch.nn as nn


class Model(nn.Module):

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(torch.nn.functional.linear(x, weight, bias)) * up
