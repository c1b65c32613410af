import torch
import torch.nn as nn


class Model(nn.Module):
    """Weight-only int4 GEMM: eight 4-bit codes packed per int32 along K, a zero point and a scale per group of
    rows of K and output column."""

    def __init__(self, group_size: int = 32):
        super().__init__()
        self.group_size = group_size

    def forward(self, x, qweight, scales, zeros):
        k = qweight.shape[0] * 8
        shifts = torch.arange(0, 32, 4, device=qweight.device, dtype=torch.int32)
        codes = (qweight.unsqueeze(1) >> shifts.view(1, 8, 1)) & 0xF
        codes = codes.reshape(k, -1)
        group = torch.arange(k, device=x.device) // self.group_size
        w = (codes.to(scales.dtype) - zeros[group]) * scales[group]
        return x @ w
