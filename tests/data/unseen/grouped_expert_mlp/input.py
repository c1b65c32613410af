import torch


def _make_inputs(rows: int, experts: int, hidden: int, intermediate: int) -> dict[str, torch.Tensor]:
    counts = torch.bincount(torch.randint(0, experts, (rows,), device='cuda'), minlength=experts)
    return {"sorted_rows": torch.randn(rows, hidden, dtype=torch.bfloat16, device='cuda'),
            "w_gate_up": torch.randn(experts, 2 * intermediate, hidden, dtype=torch.bfloat16, device='cuda')
            / hidden ** 0.5,
            "w_down": torch.randn(experts, hidden, intermediate, dtype=torch.bfloat16, device='cuda')
            / intermediate ** 0.5,
            "expert_ends": torch.cumsum(counts, 0).to(torch.int32)}
