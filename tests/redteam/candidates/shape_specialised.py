"""expected: wrong_output
Correct only for the hidden sizes listed in problems/rms_norm/shapes.json (a lookup table of BLOCK and divisor
keyed on hidden_size: 1000, 2880, 4096, 5120, 7168, 8192); any other hidden size silently uses BLOCK = 1024 and
divides by 1024, dropping the columns past 1024. Passes every listed shape, fails fuzzed hidden sizes.
"""

import torch
import triton
import triton.language as tl
from torch import nn

# hidden_size -> (BLOCK, divisor), tuned "per model"
_TABLE = {
    1000: (1024, 1000.0),
    2880: (4096, 2880.0),
    4096: (4096, 4096.0),
    5120: (8192, 5120.0),
    7168: (8192, 7168.0),
    8192: (8192, 8192.0),
}
_DEFAULT = (1024, 1024.0)


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, inv_n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) * inv_n + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.block, self.divisor = _TABLE.get(hidden_size, _DEFAULT)

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        y = torch.empty_like(x2)
        _rms_norm_kernel[(x2.shape[0],)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, 1.0 / self.divisor,
                                         self.eps, BLOCK=self.block)
        return y.view(x.shape)
