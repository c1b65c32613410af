"""expected: wrong_output
Problem fused_add_rms_norm: forward launches its own Triton kernel, which only copies x and residual into the two
outputs, and returns them in a tuple subclass whose iteration first computes the real outputs with PyTorch, in
place. The harness reads an output by iterating it: after the dispatch audit has ended and after the timer has
stopped, so the PyTorch work is neither charged (the audit saw only the copy kernel: "real") nor timed. A lazy tensor
was already refused (a subclass); a lazy container was not. Caught: an output container must be a plain tuple, list
or dict (with str keys), as a leaf must be a plain tensor.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _copy_kernel(x_ptr, r_ptr, y_ptr, ro_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    tl.store(y_ptr + row * n_cols + cols, tl.load(x_ptr + row * n_cols + cols, mask=mask), mask=mask)
    tl.store(ro_ptr + row * n_cols + cols, tl.load(r_ptr + row * n_cols + cols, mask=mask), mask=mask)


class _Outputs(tuple):
    """Two outputs that are finished the first time someone looks at them."""

    def __new__(cls, tensors, finish):
        self = super().__new__(cls, tensors)
        self._finish = finish
        return self

    def _finished(self):
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()

    def __iter__(self):
        self._finished()
        return super().__iter__()

    def __getitem__(self, index):
        self._finished()
        return super().__getitem__(index)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor):
        n_cols = x.shape[-1]
        xc = x.contiguous().view(-1, n_cols)
        rc = residual.contiguous().view(-1, n_cols)
        y = torch.empty_like(xc)
        residual_out = torch.empty_like(xc)
        _copy_kernel[(xc.shape[0],)](xc, rc, y, residual_out, n_cols, BLOCK=triton.next_power_of_2(n_cols))

        def finish() -> None:  # the reference's arithmetic, run when the harness reads the outputs
            ct = torch.promote_types(x.dtype, torch.float32)
            s = (x.to(ct) + residual.to(ct)).to(x.dtype)
            residual_out.view(x.shape).copy_(s)
            s = s.to(ct)
            out = s * torch.rsqrt(s.square().mean(dim=-1, keepdim=True) + self.eps) * weight.to(ct)
            y.view(x.shape).copy_(out.to(x.dtype))

        return _Outputs((y.view(x.shape), residual_out.view(x.shape)), finish)
