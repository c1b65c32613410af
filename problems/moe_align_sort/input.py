import torch


def _make_inputs(num_tokens: int, top_k: int, num_experts: int, device: str = "cuda"):
    """Router choices: each token picks top_k distinct experts from noisy logits with a per-expert
    popularity bias, so expert loads are uneven as in real routing."""
    bias = 0.7 * torch.randn(num_experts, device=device)
    logits = torch.randn(num_tokens, num_experts, device=device) + bias
    ids = torch.topk(logits, top_k, dim=-1).indices
    return {"topk_ids": ids.to(torch.int32)}
