import torch


def _make_inputs(tokens: int, hidden_size: int, experts: int, topk: int) -> dict[str, torch.Tensor]:
    ids = torch.stack([torch.randperm(experts, device='cuda')[:topk] for _ in range(tokens)]).to(torch.int32)
    ids[::3, -1] = -1  # every third token routed to one expert fewer
    return {"hidden": torch.randn(tokens, hidden_size, dtype=torch.bfloat16, device='cuda'), "topk_ids": ids}
