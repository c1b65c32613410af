"""Inputs for linear_attn_gated_delta_decode.

q, k, v ~N(0, 1) in the activation dtype; g = log decay, log-uniform in magnitude so exp(g) spans
0.37 .. 0.999 (g = -exp(U(ln 1e-3, 0))), float32; beta = sigmoid(N(0, 1)), float32; the incoming state
is ~N(0, 1) float32 (an associative memory holding O(1) values per unit key direction).
"""

import math

import torch


def _make_inputs(batch: int, heads: int, k_dim: int, v_dim: int, dtype: str = "bfloat16",
                 device: str = "cuda") -> dict[str, torch.Tensor]:
    dt = getattr(torch, dtype)
    q = torch.randn(batch, heads, k_dim, device=device, dtype=dt)
    k = torch.randn(batch, heads, k_dim, device=device, dtype=dt)
    v = torch.randn(batch, heads, v_dim, device=device, dtype=dt)
    g = -torch.exp(torch.rand(batch, heads, device=device) * math.log(1e3) - math.log(1e3))
    beta = torch.sigmoid(torch.randn(batch, heads, device=device))
    state = torch.randn(batch, heads, k_dim, v_dim, device=device, dtype=torch.float32)
    return {"q": q, "k": k, "v": v, "g": g, "beta": beta, "state": state}
