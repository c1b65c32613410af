import torch
import torch.nn as nn


class Model(nn.Module):
    """A mixture of experts' MLP on rows already sorted by expert: torch._grouped_mm for the gate/up and the down
    projections (each expert's rows end at `expert_ends`), SiLU-and-mul between them."""

    def forward(self, sorted_rows, w_gate_up, w_down, expert_ends):
        gate_up = torch._grouped_mm(sorted_rows, w_gate_up.transpose(-2, -1), offs=expert_ends)
        gate, up = gate_up.chunk(2, dim=-1)
        return torch._grouped_mm(torch.nn.functional.silu(gate) * up, w_down.transpose(-2, -1), offs=expert_ends)
