"""expected: fallback
Hides a PyTorch fallback in an operator of its own named like a view: `torch.library.custom_op("cand::alias")`
whose implementation computes the RMSNorm with PyTorch. The aten audit named ops without their namespace, so it
counted `cand::alias` as the allowed view `aten::alias`, and the ops inside the implementation run below its
dispatch mode; a Triton kernel then applies the weight so that the forward looked real.
"""

import torch
import triton
import triton.language as tl
from torch import nn

_EPS = 1e-6


@torch.library.custom_op("cand::alias", mutates_args=())
def _normalise(x: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + _EPS)).to(x.dtype)


@triton.jit
def _scale_kernel(n_ptr, w_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    n = tl.load(n_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, (n * w).to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        normed = _normalise(x.reshape(-1, n_cols).contiguous())
        y = torch.empty_like(normed)
        _scale_kernel[(normed.shape[0],)](normed, weight, y, normed.stride(0), n_cols,
                                          BLOCK=triton.next_power_of_2(n_cols))
        return y.view(x.shape)
