import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """One decode step of a selective state space: the state decays by exp(dt*A), takes dt*B*x, is read by C; the
    state is updated in place."""

    def forward(self, state, x, dt, A, B, C, D, dt_bias, z):
        dt = F.softplus(dt.float() + dt_bias.float())                       # [b, h, d]
        dA = torch.exp(dt.unsqueeze(-1) * A.float())                        # [b, h, d, n]
        dBx = (dt * x.float()).unsqueeze(-1) * B.float().unsqueeze(1).unsqueeze(1)  # B: [b, n]
        new_state = state.float() * dA + dBx
        state.copy_(new_state.to(state.dtype))
        out = (new_state * C.float().unsqueeze(1).unsqueeze(1)).sum(-1) + D.float() * x.float()
        out = out * F.silu(z.float())
        return out.to(x.dtype)
