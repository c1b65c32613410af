import torch


def _make_inputs(num_tokens: int, num_experts: int, dtype: str = "bfloat16", device: str = "cuda"):
    """Router logits: per-token N(0, 1) noise plus a per-expert popularity bias (load imbalance),
    stored in the router's output dtype."""
    dt = getattr(torch, dtype)
    bias = 0.5 * torch.randn(num_experts, device=device, dtype=torch.float32)
    logits = torch.randn(num_tokens, num_experts, device=device, dtype=torch.float32) + bias
    return {"gating_output": logits.to(dt)}
