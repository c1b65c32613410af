"""expected: fallback
The RMSNorm computed with NumPy on the input's memory (`Tensor.numpy()`, then `torch.from_numpy`), and the result
copied into the output with the candidate's own Triton kernel. NumPy's work reaches no aten op, so the dispatch
audit saw only the copy kernel and called it real. Caught: handing a tensor's memory to NumPy inside forward
(`Tensor.numpy`, `Tensor.__array__`) is charged as computing, as an aten op outside the candidate's kernels is.
"""

import numpy as np
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        xs = x.cpu().float().numpy().astype(np.float64)  # on a GPU: to the host, no bf16 in NumPy
        rstd = 1.0 / np.sqrt((xs * xs).mean(axis=-1, keepdims=True) + self.eps)
        result = torch.from_numpy((xs * rstd * weight.cpu().float().numpy()).astype(np.float32)).to(x.device)
        y = torch.empty_like(x)
        n = x.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](result, y, n, BLOCK=1024)
        return y
