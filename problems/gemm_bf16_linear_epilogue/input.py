import torch


def _make_inputs(M: int, N: int, K: int, has_bias: bool = False, has_residual: bool = False,
                 dtype: str = "bfloat16", device: str = "cuda", has_gate: bool = False):
    """x ~ N(0,1) (normalised activations), w ~ N(0, 1/K) (so x @ w^T is O(1)), bias ~ N(0, 0.1^2),
    residual stream ~ N(0,1), gate ~ N(0,1)."""
    dt = getattr(torch, dtype)
    inputs = {
        "x": torch.randn(M, K, device=device, dtype=dt),
        "w": (torch.randn(N, K, device=device, dtype=dt) * (K ** -0.5)).to(dt),
    }
    if has_bias:
        inputs["bias"] = (0.1 * torch.randn(N, device=device)).to(dt)
    if has_residual:
        inputs["residual"] = torch.randn(M, N, device=device, dtype=dt)
    if has_gate:
        inputs["gate"] = torch.randn(M, N, device=device, dtype=dt)
    return inputs
