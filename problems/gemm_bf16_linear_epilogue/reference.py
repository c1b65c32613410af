"""Linear layer with a fused epilogue: y = act(x @ w^T + bias) * gate + residual.

    acc = x @ w^T                    fp32 accumulation (torch matmul in the input dtype)
    z   = acc + bias                 if has_bias
    z   = act(z)                     activation in {"none", "gelu_tanh", "silu", "sigmoid"}
                                     gelu_tanh(z) = 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))
                                     silu(z)      = z * sigmoid(z)
    z   = z * gate                   if has_gate (a gated projection: sigmoid(x W^T + b) * up)
    y   = z + residual               if has_residual (added AFTER the activation)
Inputs:
    x         [M, K]   bfloat16 (float16/float32 in smoke shapes)
    w         [N, K]   same dtype (nn.Linear weight layout)
    bias      [N]      same dtype, present only when has_bias
    residual  [M, N]   same dtype, present only when has_residual
    gate      [M, N]   same dtype, present only when has_gate
Init kwargs: activation (str), has_bias (bool), has_residual (bool), has_gate (bool, default False)
Output:
    y         [M, N]   dtype of x; the epilogue is computed in promote(dtype, float32)
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

ACTIVATIONS = ("none", "gelu_tanh", "silu", "sigmoid")


class Model(nn.Module):
    def __init__(self, activation: str = "none", has_bias: bool = False, has_residual: bool = False,
                 has_gate: bool = False):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, not {activation!r}")
        self.activation = activation
        self.has_bias = bool(has_bias)
        self.has_residual = bool(has_residual)
        self.has_gate = bool(has_gate)

    def forward(self, x, w, bias=None, residual=None, gate=None):
        dt = x.dtype
        ct = torch.promote_types(dt, torch.float32)
        z = torch.matmul(x, w.t())                      # input dtype, fp32 accumulation
        if not (self.has_bias or self.has_residual or self.has_gate or self.activation != "none"):
            return z
        z = z.to(ct)
        if self.has_bias:
            z = z + bias.to(ct)
        if self.activation == "gelu_tanh":
            z = F.gelu(z, approximate="tanh")
        elif self.activation == "silu":
            z = F.silu(z)
        elif self.activation == "sigmoid":
            z = torch.sigmoid(z)
        if self.has_gate:
            z = z * gate.to(ct)
        if self.has_residual:
            z = z + residual.to(ct)
        return z.to(dt)


def roofline_flops(inputs, outputs, activation: str = "none", has_bias: bool = False,
                   has_residual: bool = False, has_gate: bool = False, **_):
    """2*M*N*K for the GEMM plus the epilogue per output element: 1 for the bias, ~8 for gelu_tanh,
    ~4 for silu, ~3 for sigmoid, 1 for the gate, 1 for the residual."""
    m, k = inputs["x"].shape
    n = inputs["w"].shape[0]
    per_elem = ((1 if has_bias else 0) + {"none": 0, "gelu_tanh": 8, "silu": 4, "sigmoid": 3}[activation]
                + (1 if has_gate else 0) + (1 if has_residual else 0))
    return 2 * m * n * k + per_elem * m * n
