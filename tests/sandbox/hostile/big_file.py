"""expected: limit_exceeded: file size limit exceeded: limit 1 MiB
limits: file_mib=1
Writes a 4 MiB file into its work directory in its forward; the file size limit refuses it.
"""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with open("dump.bin", "wb") as handle:
            for _ in range(4):
                handle.write(b"\0" * (1 << 20))
        return x[..., : x.shape[-1] // 2].clone()
