"""expected: passed
Opens TCP connections to a server the test runs on this machine ({{PORT}}) and to an outside address, and
sends a UDP datagram to the test's port; it would raise if any connection succeeded, so `passed` means the
network is closed (the test also checks that its server saw no connection).
"""

import socket

import torch
from torch import nn

reached = []
for host, port in (("127.0.0.1", {{PORT}}), ("1.1.1.1", 53), ("8.8.8.8", 443)):
    try:
        socket.create_connection((host, port), timeout=2).close()
        reached.append(f"{host}:{port}")
    except OSError:
        pass
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"{{MARKER}}", ("127.0.0.1", {{PORT}}))
except OSError:
    pass
if reached:
    raise RuntimeError(f"network reachable: {reached}")


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ct = torch.promote_types(x.dtype, torch.float32)
        d = x.shape[-1] // 2
        gate, up = x[..., :d].to(ct), x[..., d:].to(ct)
        return (gate * torch.sigmoid(gate) * up).to(x.dtype)
