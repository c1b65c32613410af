import torch


def _make_inputs(num_tokens: int, hidden_size: int, intermediate_size: int, num_experts: int, top_k: int,
                 renormalize: bool = True, dtype: str = "bfloat16", device: str = "cuda"):
    """Activations ~N(0,1) (post-RMSNorm scale); expert weights ~N(0, 1/fan_in) so gate/up/down outputs
    stay O(1); routing from softmax over biased random router logits (uneven expert load), top-k distinct
    experts per token, weights optionally renormalised to sum to 1."""
    dt = getattr(torch, dtype)
    T, H, I, E = num_tokens, hidden_size, intermediate_size, num_experts
    hidden = torch.randn(T, H, device=device, dtype=dt)
    w1 = (torch.randn(E, 2 * I, H, device=device, dtype=dt) * (H ** -0.5)).to(dt)
    w2 = (torch.randn(E, H, I, device=device, dtype=dt) * (I ** -0.5)).to(dt)
    logits = torch.randn(T, E, device=device) + 0.5 * torch.randn(E, device=device)
    probs = torch.softmax(logits, dim=-1)
    topk_weights, topk_ids = torch.topk(probs, top_k, dim=-1)
    if renormalize:
        topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True)
    return {"hidden": hidden, "w1": w1, "w2": w2,
            "topk_weights": topk_weights.to(torch.float32), "topk_ids": topk_ids.to(torch.int32)}
