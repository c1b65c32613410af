import torch


def _make_inputs(tokens: int, hidden: int, out_features: int) -> dict[str, torch.Tensor]:
    x = torch.randn(tokens, hidden, device='cuda')
    w = torch.randn(out_features, hidden, device='cuda') / hidden ** 0.5
    x_scale = x.abs().amax(dim=1, keepdim=True) / 448.0
    w_scale = w.abs().amax(dim=1, keepdim=True).t() / 448.0
    return {"x_fp8": (x / x_scale).to(torch.float8_e4m3fn),
            "w_fp8": (w / w_scale.t()).to(torch.float8_e4m3fn),
            "x_scale": x_scale.float().contiguous(),
            "w_scale": w_scale.float().contiguous(),
            "bias": torch.randn(out_features, dtype=torch.bfloat16, device='cuda') * 0.1}
