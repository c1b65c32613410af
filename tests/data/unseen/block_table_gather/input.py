import torch


def _make_inputs(batch: int, max_len: int, block_size: int, width: int) -> dict[str, torch.Tensor]:
    max_blocks = (max_len + block_size - 1) // block_size
    lens = torch.randint(1, max_len + 1, (batch,), device='cuda')
    cu = torch.zeros(batch + 1, dtype=torch.int32, device='cuda')
    cu[1:] = torch.cumsum(lens, 0)
    num_blocks = batch * max_blocks + 3
    table = torch.randperm(num_blocks, device='cuda')[:batch * max_blocks].view(batch, max_blocks).to(torch.int32)
    return {"cache": torch.randn(num_blocks, block_size, width, dtype=torch.bfloat16, device='cuda'),
            "block_table": table, "cu_seq_lens": cu}
