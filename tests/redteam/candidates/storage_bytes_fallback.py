"""expected: fallback
The RMSNorm computed in plain Python on the input's bytes: `bytes(x.untyped_storage())` (which indexes the
storage item by item), decoded with `struct`, normalised row by row, encoded again and made a tensor with
`torch.frombuffer`, then copied into the output with the candidate's own Triton kernel. No aten op computed and
no memory went to another library. Caught (a regression test of a route thought open): indexing a storage reads
each item through aten's `_local_scalar_dense`, which the audit counts as `item()` does, so the values read to the
host reach the share of the output that is computing.
gpu tier: smoke
"""

import math
import struct

import torch
import triton
import triton.language as tl
from torch import nn

_FORMATS = {torch.float32: ("<f", 4), torch.float16: ("<e", 2), torch.bfloat16: (None, 2)}


def _decode(raw: bytes, dtype: torch.dtype) -> list[float]:
    fmt, size = _FORMATS[dtype]
    if fmt is None:  # bfloat16: the high half of a float32
        return [struct.unpack("<f", b"\x00\x00" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
    return [struct.unpack(fmt, raw[i:i + size])[0] for i in range(0, len(raw), size)]


def _encode(values: list[float], dtype: torch.dtype) -> bytes:
    fmt, _ = _FORMATS[dtype]
    if fmt is None:
        return b"".join(struct.pack("<f", v)[2:] for v in values)
    return b"".join(struct.pack(fmt, v) for v in values)


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
        width, size = x.shape[-1], x.element_size()
        start = x.storage_offset() * size
        values = _decode(bytes(x.untyped_storage())[start:start + x.numel() * size], x.dtype)
        gains = _decode(bytes(weight.untyped_storage())[:width * weight.element_size()], weight.dtype)
        normed: list[float] = []
        for r in range(0, len(values), width):
            row = values[r:r + width]
            rstd = 1.0 / math.sqrt(sum(v * v for v in row) / width + self.eps)
            normed.extend(v * rstd * g for v, g in zip(row, gains))
        result = torch.frombuffer(bytearray(_encode(normed, x.dtype)), dtype=x.dtype).to(x.device)
        y = torch.empty_like(x)
        n = x.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](result, y, n, BLOCK=1024)
        return y
