import torch

def _make_inputs(num_tokens: int, hidden_size: int, out_features: int) -> dict[str, torch.Tensor]:
    x = torch.randn(num_tokens, hidden_size, dtype=torch.float32, device='cuda')
    weight = torch.randn(out_features, hidden_size, dtype=torch.float32, device='cuda') / hidden_size ** 0.5
    bias = torch.randn(out_features, dtype=torch.float32, device='cuda')
    up = torch.randn(num_tokens, out_features, dtype=torch.float32, device='cuda')
    return {'x': x, 'weight': weight, 'bias': bias, 'up': up}
