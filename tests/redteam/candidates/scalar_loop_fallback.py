"""expected: fallback|timeout
The RMSNorm computed in plain Python from the input's values read one at a time (iterating the tensor: a select
and an `item()` per value, both allowed to read metadata), the result made a tensor with `torch.tensor` and copied
into the output with the candidate's own Triton kernel. Caught as `python_loop_fallback` is: scalars read back
inside the audited call count toward the values read to the host. On a GPU every read is a device sync: the
larger smoke shapes may run past the shape limit there (H100, 2026-12-05: a timeout beside fallbacks, S_op 0).
gpu tier: smoke
"""

import math

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
        flat = x.reshape(-1, x.shape[-1])
        w = [float(g) for g in weight]
        normed = []
        for row in flat:
            values = [float(v) for v in row]
            rstd = 1.0 / math.sqrt(sum(v * v for v in values) / len(values) + self.eps)
            normed.append([v * rstd * g for v, g in zip(values, w)])
        result = torch.tensor(normed, dtype=x.dtype, device=x.device).reshape(x.shape)
        y = torch.empty_like(x)
        n = x.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](result, y, n, BLOCK=1024)
        return y
