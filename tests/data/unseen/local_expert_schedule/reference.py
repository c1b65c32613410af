"""The rows of a grouped GEMM on one expert-parallel rank: the flat (token, choice) positions routed to each local
expert, in increasing position, each expert's run padded with the position count to a whole number of tiles;
the local expert of each tile; the padded length. Every size is data-dependent (no worst-case buffers)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, tile: int, local_experts: int):
        super().__init__()
        self.tile = tile
        self.local_experts = local_experts

    def forward(self, routing: torch.Tensor) -> dict[str, torch.Tensor]:
        flat = routing.reshape(-1).long()
        positions = flat.numel()
        local = flat >= 0
        per_expert = torch.bincount(flat[local], minlength=self.local_experts).tolist()
        by_expert = torch.argsort(torch.where(local, flat, self.local_experts), stable=True)
        rows, owners = [], []
        for expert, group in enumerate(torch.split(by_expert[: sum(per_expert)], per_expert)):
            tiles = -(-group.numel() // self.tile)
            filler = torch.full((tiles * self.tile - group.numel(),), positions, device=routing.device)
            rows.append(torch.cat([group, filler]))
            owners += [expert] * tiles
        row_ids = torch.cat(rows).to(torch.int32)
        return {"rows": row_ids,
                "tile_expert": torch.tensor(owners, dtype=torch.int32, device=routing.device),
                "padded_rows": torch.tensor([row_ids.numel()], dtype=torch.int32, device=routing.device)}
