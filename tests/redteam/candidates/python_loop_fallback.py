"""expected: fallback
The RMSNorm computed in plain Python: the input read to the host with `tolist()`, each row normalised in a loop,
the values made a tensor again with `torch.tensor` (an allocation to the audit), and that tensor copied into the
output with the candidate's own Triton kernel. No aten op computed and no memory went to another library, so the
audit saw only the copy kernel and called it real. Caught: values read back to the host inside the audited call
(`tolist()`, `item()`) at a quarter of the output's size or more are computing the audit cannot see.
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
        rows, w = x.reshape(-1, x.shape[-1]).tolist(), weight.tolist()
        normed = []
        for row in rows:
            rstd = 1.0 / math.sqrt(sum(v * v for v in row) / len(row) + self.eps)
            normed.append([v * rstd * g for v, g in zip(row, w)])
        result = torch.tensor(normed, dtype=x.dtype, device=x.device).reshape(x.shape)
        y = torch.empty_like(x)
        n = x.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](result, y, n, BLOCK=1024)
        return y
