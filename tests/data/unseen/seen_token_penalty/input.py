import torch

def _make_inputs(num_seqs: int, vocab_size: int) -> dict[str, torch.Tensor]:
    return {
        "logits": torch.randn(num_seqs, vocab_size, dtype=torch.float32, device='cuda'),
        "prompt_mask": torch.rand(num_seqs, vocab_size, device='cuda') < 0.05,
        "output_counts": torch.randint(0, 3, (num_seqs, vocab_size), device='cuda').to(torch.uint8)
        * (torch.rand(num_seqs, vocab_size, device='cuda') < 0.05),
        "penalties": 1.0 + torch.rand(num_seqs, dtype=torch.float32, device='cuda'),
    }
