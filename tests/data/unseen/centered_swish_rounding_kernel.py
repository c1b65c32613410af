"""A person's kernel for the made-up centered_swish problem whose defaults round the activation to fp16 (wrong
for an fp32 output at 1e-5); its ACCURACY_STEPS setting keeps it in fp32. The agent's recovery from a wrong
start is tested with it."""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"ROUND_F16": 1, "num_warps": 4}
SEARCH_SPACE = {"ROUND_F16": [0, 1], "num_warps": [2, 4]}
ACCURACY_STEPS = [{"ROUND_F16": 0}]


@triton.jit
def _centered_swish_kernel(x_ptr, out_ptr, mean_ptr, cols, scale, stride, BLOCK: tl.constexpr,
                           ROUND_F16: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.sigmoid(x)
    if ROUND_F16:
        y = y.to(tl.float16).to(tl.float32)
    mean = tl.sum(tl.where(mask, y, 0.0), axis=0) / cols
    tl.store(out_ptr + row * stride + offs, ((y - mean) * scale).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + row, mean)


class Model(nn.Module):
    def __init__(self, scale: float = 0.5):
        super().__init__()
        self.scale = float(scale)

    def forward(self, x: torch.Tensor) -> tuple:
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        mean = torch.empty(rows, 1, dtype=torch.float32, device=x.device)
        _centered_swish_kernel[(rows,)](x, out, mean, cols, self.scale, x.stride(0),
                                        BLOCK=triton.next_power_of_2(cols), ROUND_F16=TUNABLES["ROUND_F16"],
                                        num_warps=TUNABLES["num_warps"])
        return out, mean
