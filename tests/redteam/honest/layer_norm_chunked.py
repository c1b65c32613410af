"""expected: passed
Problem layer_norm: honest Triton LayerNorm whose BLOCK (256) is smaller than hidden; pass 1 loops over column
chunks accumulating shifted sums (shift = the mean of the row's first chunk, against cancellation) for mean and biased
variance in fp32, pass 2 loops again to normalise, scale, shift and store.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _layer_norm_chunked_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride_x, stride_y, n_cols, eps,
                               BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    first = tl.arange(0, BLOCK)
    first_mask = first < n_cols
    shift = tl.sum(tl.load(x_row + first, mask=first_mask, other=0.0).to(tl.float32), axis=0) / tl.minimum(n_cols, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):  # pass 1: statistics
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        d = tl.where(mask, tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32) - shift, 0.0)
        acc += d
        acc2 += d * d
    mean_d = tl.sum(acc, axis=0) / n_cols
    var = tl.maximum(tl.sum(acc2, axis=0) / n_cols - mean_d * mean_d, 0.0)
    mean = shift + mean_d
    rstd = 1.0 / tl.sqrt(var + eps)
    for start in range(0, n_cols, BLOCK):  # pass 2: normalise and store
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        y = torch.empty_like(x2)
        _layer_norm_chunked_kernel[(x2.shape[0],)](x2, weight, bias, y, x2.stride(0), y.stride(0), n_cols,
                                                   self.eps, BLOCK=256)
        return y.view(x.shape)
