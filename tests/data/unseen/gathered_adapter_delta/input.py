import torch


def _make_inputs(tokens: int, hidden: int, out: int, rank: int, adapters: int) -> dict[str, torch.Tensor]:
    return {"x": torch.randn(tokens, hidden, dtype=torch.bfloat16, device='cuda'),
            "base": torch.randn(tokens, out, dtype=torch.bfloat16, device='cuda'),
            "lora_a": torch.randn(adapters, rank, hidden, dtype=torch.bfloat16, device='cuda') * 0.05,
            "lora_b": torch.randn(adapters, out, rank, dtype=torch.bfloat16, device='cuda') * 0.05,
            "indices": torch.randint(0, adapters, (tokens,), dtype=torch.int64, device='cuda')}
