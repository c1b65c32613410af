import torch
import torch.nn as nn


class Model(nn.Module):
    """4-bit float (e2m1) codes with an fp8 scale per block of 16 values, two codes packed per byte."""

    def forward(self, x):
        rows, cols = x.shape
        blocks = x.float().view(rows, cols // 16, 16)
        amax = blocks.abs().amax(dim=-1, keepdim=True)
        scale = (amax / 6.0).clamp(min=2.0 ** -9).to(torch.float8_e4m3fn)
        q = blocks / scale.float()
        bounds = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], device=x.device)
        code = torch.bucketize(q.abs(), bounds).to(torch.uint8)
        code = code | ((q < 0).to(torch.uint8) << 3)
        code = code.view(rows, cols // 2, 2)
        packed = code[..., 0] | (code[..., 1] << 4)
        return packed, scale.view(rows, cols // 16)
