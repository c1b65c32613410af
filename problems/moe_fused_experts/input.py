import torch


def _make_inputs(num_tokens: int, hidden_size: int, intermediate_size: int, num_experts: int, top_k: int,
                 renormalize: bool = True, dtype: str = "bfloat16", device: str = "cuda", quant: str | None = None,
                 fp8: str = "float8_e4m3fn", block: int = 128):
    """Activations ~N(0,1) (post-RMSNorm scale); expert weights ~N(0, 1/fan_in) so gate/up/down outputs
    stay O(1); routing from softmax over biased random router logits (uneven expert load), top-k distinct
    experts per token, weights optionally renormalised to sum to 1.
    quant "w8a16": the same weights quantised to `fp8` with one fp32 scale per [block, block] block of each
    expert's matrix (amax / fp8 max, DeepSeek-V3 style), returned as w1_scale and w2_scale; "w8a8": also
    hidden quantised per token and group of `block` columns, its scales returned as a1_scale."""
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
    inputs = {"hidden": hidden, "w1": w1, "w2": w2,
              "topk_weights": topk_weights.to(torch.float32), "topk_ids": topk_ids.to(torch.int32)}
    if quant is None:
        return inputs
    if quant not in ("w8a16", "w8a8"):
        raise ValueError(f"quant must be None, 'w8a16' or 'w8a8', not {quant!r}")
    q_dtype = getattr(torch, fp8)
    inputs["w1"], inputs["w1_scale"] = _quantise(w1, (1, block, block), q_dtype)
    inputs["w2"], inputs["w2_scale"] = _quantise(w2, (1, block, block), q_dtype)
    if quant == "w8a8":
        inputs["hidden"], inputs["a1_scale"] = _quantise(hidden, (1, block), q_dtype)
    return inputs


def _quantise(x, blocks, q_dtype):
    """x as q_dtype values and one fp32 scale (amax / q_dtype max) per block (edge blocks partial)."""
    fp8_max = torch.finfo(q_dtype).max
    padded = [-(-n // b) * b for n, b in zip(x.shape, blocks)]
    xp = torch.zeros(padded, dtype=torch.float32, device=x.device)
    xp[tuple(slice(0, n) for n in x.shape)] = x.float()
    split = [d for n, b in zip(padded, blocks) for d in (n // b, b)]
    view = xp.view(split)
    reduce = tuple(range(1, len(split), 2))
    scale = view.abs().amax(dim=reduce, keepdim=True).clamp(min=1e-12) / fp8_max
    q = (view / scale).clamp(-fp8_max, fp8_max).to(q_dtype).view(padded)
    return q[tuple(slice(0, n) for n in x.shape)].contiguous(), scale.squeeze(reduce).contiguous()
