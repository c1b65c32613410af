import torch

FP8_MAX = 448.0  # largest finite float8_e4m3fn


def _make_inputs(M: int, N: int, K: int, group_size: int = 128, device: str = "cuda"):
    """Quantise random data the way DeepSeek-V3 inference does: activations N(0,1) per token and
    128-wide K group (scale = amax / 448), weights N(0, 1/K) per 128x128 block; values cast to
    float8_e4m3fn. The product of the dequantised operands is O(1)."""
    G = group_size
    kg, ng = -(-K // G), -(-N // G)

    x = torch.randn(M, K, device=device)
    xp = torch.nn.functional.pad(x, (0, kg * G - K)).view(M, kg, G)
    a_scale = xp.abs().amax(dim=-1).clamp_min(1e-4) / FP8_MAX                         # [M, kg]
    a = (xp / a_scale[..., None]).clamp(-FP8_MAX, FP8_MAX).view(M, kg * G)[:, :K]
    a = a.to(torch.float8_e4m3fn).contiguous()

    w = torch.randn(N, K, device=device) * (K ** -0.5)
    wp = torch.nn.functional.pad(w, (0, kg * G - K, 0, ng * G - N)).view(ng, G, kg, G)
    b_scale = wp.abs().amax(dim=(1, 3)).clamp_min(1e-4) / FP8_MAX                      # [ng, kg]
    b = (wp / b_scale[:, None, :, None]).clamp(-FP8_MAX, FP8_MAX).view(ng * G, kg * G)[:N, :K]
    b = b.to(torch.float8_e4m3fn).contiguous()
    return {"a": a, "a_scale": a_scale.contiguous(), "b": b, "b_scale": b_scale.contiguous()}
