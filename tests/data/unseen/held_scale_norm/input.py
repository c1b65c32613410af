import torch

def _make_inputs(num_tokens: int, hidden: int) -> dict[str, torch.Tensor]:
    return {"residual": torch.randn(num_tokens, hidden, dtype=torch.bfloat16, device='cuda'),
            "hidden_states": torch.randn(num_tokens, hidden, dtype=torch.bfloat16, device='cuda')}
