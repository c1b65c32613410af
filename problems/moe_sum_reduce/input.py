import torch


def _make_inputs(num_tokens: int, top_k: int, hidden_size: int, dtype: str = "bfloat16", device: str = "cuda"):
    """Per-slot expert outputs already multiplied by their routing weight: N(0,1) scaled by a random
    weight that sums to 1 over the k slots (as after a renormalised top-k)."""
    dt = getattr(torch, dtype)
    w = torch.softmax(torch.randn(num_tokens, top_k, 1, device=device), dim=1)
    x = torch.randn(num_tokens, top_k, hidden_size, device=device) * w
    return {"x": x.to(dt)}
