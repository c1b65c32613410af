import torch

def _make_inputs(tokens: int, k: int, n_routed: int) -> dict[str, torch.Tensor]:
    scores = torch.rand(tokens, n_routed, device='cuda')
    return {'choice': scores.topk(k, dim=-1).indices.to(torch.int32)}

def get_inputs() -> list[torch.Tensor]:
    return list(_make_inputs(tokens=16, k=2, n_routed=8).values())

def get_init_inputs() -> dict[str, object]:
    return {'n_routed': 8}
