"""WRONG Triton RMSNorm candidate (must fail the evaluator).

Bugs: drops eps (harmless at realistic magnitudes on its own) AND divides the sum of squares by the padded
BLOCK width instead of hidden_size. For non-power-of-two hidden sizes (the smoke shapes: 1000 -> 1024,
2880 -> 4096) the output is scaled by sqrt(BLOCK / hidden) (1.2% and 19%), far outside tolerance.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    var = tl.sum(x * x, axis=0) / BLOCK  # BUG: padded width instead of n_cols
    rstd = 1.0 / tl.sqrt(var)  # BUG: no eps
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * rstd * w
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def launch_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    n_cols = x.shape[-1]
    x2 = x.view(-1, n_cols)
    y = torch.empty_like(x2)
    block = triton.next_power_of_2(n_cols)
    _rms_norm_kernel[(x2.shape[0],)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, eps,
                                     BLOCK=block, num_warps=4 if block <= 1024 else 8)
    return y.view(x.shape)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return launch_rms_norm(x, weight, self.eps)
