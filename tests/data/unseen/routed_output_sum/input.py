import torch

def _make_inputs(num_tokens: int, top_k: int, hidden_size: int) -> dict[str, torch.Tensor]:
    expert_out = torch.randn(num_tokens, top_k, hidden_size, dtype=torch.bfloat16, device='cuda')
    return {'expert_out': expert_out}
