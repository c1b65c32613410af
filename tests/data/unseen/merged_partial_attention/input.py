import torch


def _make_inputs(tokens: int, heads: int, head_dim: int) -> dict[str, torch.Tensor]:
    return {"prefix_output": torch.randn(tokens, heads, head_dim, dtype=torch.bfloat16, device='cuda'),
            "prefix_lse": torch.randn(heads, tokens, dtype=torch.float32, device='cuda') * 3,
            "suffix_output": torch.randn(tokens, heads, head_dim, dtype=torch.bfloat16, device='cuda'),
            "suffix_lse": torch.randn(heads, tokens, dtype=torch.float32, device='cuda') * 3}
