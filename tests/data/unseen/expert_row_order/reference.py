import torch
import torch.nn as nn


class Model(nn.Module):
    """Token rows in expert order: the (token, slot) pairs sorted stably by expert id, the pairs routed nowhere
    (id -1) dropped, and each expert's offset into that order."""

    def __init__(self, num_experts: int = 8) -> None:
        super().__init__()
        self.num_experts = num_experts

    def forward(self, hidden, topk_ids):
        flat = topk_ids.flatten()
        routed = flat >= 0
        order = torch.argsort(flat, stable=True)
        order = order[routed[order]]
        rows = hidden.index_select(0, order // topk_ids.shape[1])
        counts = torch.bincount(flat[routed], minlength=self.num_experts)
        return rows, order.to(torch.int32), (torch.cumsum(counts, 0) - counts).to(torch.int32)
