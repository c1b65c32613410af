import torch


def _make_inputs(tokens: int, top_k: int, hidden: int) -> dict[str, torch.Tensor]:
    rows = tokens * top_k
    return {"rows": torch.randn(rows, hidden, dtype=torch.bfloat16, device='cuda'),
            "token_of_row": torch.randperm(rows, device='cuda') % tokens,
            "weight": torch.rand(rows, device='cuda'),
            "token_ids": torch.arange(tokens, device='cuda')}
