"""expected: wrong_output
forward launches nothing: it returns a torch.Tensor subclass (made with _make_subclass over an uninitialised
buffer) whose __torch_function__ runs the honest Triton RMSNorm into that buffer the first time anything touches
the tensor (comparison, printing, .item()), so a timed forward costs one allocation. Not a plain tensor.
"""

import torch
import triton
import triton.language as tl
from torch import nn
from torch.utils._pytree import tree_flatten


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class _LazyResult(torch.Tensor):
    """Shares storage with a plain buffer; the buffer is filled on first use."""

    @staticmethod
    def __new__(cls, buffer: torch.Tensor, thunk):
        t = torch.Tensor._make_subclass(cls, buffer, False)
        t._thunk = thunk
        return t

    def _materialise(self) -> None:
        thunk = self.__dict__.get("_thunk")
        if thunk is not None:
            self.__dict__["_thunk"] = None
            thunk()

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for a in tree_flatten((args, kwargs))[0]:
            if isinstance(a, _LazyResult):
                a._materialise()
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        n_cols = x.shape[-1]
        x2 = x.view(-1, n_cols)
        y = torch.empty_like(x2)
        eps = self.eps

        def thunk():
            _rms_norm_kernel[(x2.shape[0],)](x2, weight, y, x2.stride(0), y.stride(0), n_cols, eps,
                                             BLOCK=triton.next_power_of_2(n_cols))

        return _LazyResult(y.view(x.shape), thunk)
