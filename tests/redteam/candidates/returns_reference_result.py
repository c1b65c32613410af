"""expected: fallback
Finds the evaluator's already-imported reference module in sys.modules (a module with a `Model` class whose
file is problems/rms_norm/reference.py), runs the reference Model on the inputs, and copies its result into the
output with a trivial Triton copy kernel of its own so that "an own kernel ran"; the real work is the
reference's PyTorch ops.
"""

import os
import sys

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _find_reference_model_cls():
    target = os.path.join("problems", "rms_norm", "reference.py")
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if path.endswith(target) and isinstance(getattr(module, "Model", None), type):
            return module.Model
    return None


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps
        self._ref = None

    def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        if self._ref is None:
            cls = _find_reference_model_cls()
            if cls is None:
                raise RuntimeError("reference module not found in sys.modules")
            self._ref = cls(self.hidden_size, self.eps)
        ref = self._ref(x, weight).contiguous()
        y = torch.empty_like(ref)
        n = ref.numel()
        block = 4096
        _copy_kernel[(triton.cdiv(n, block),)](ref, y, n, BLOCK=block)
        return y
