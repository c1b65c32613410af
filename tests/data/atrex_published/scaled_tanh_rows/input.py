import torch


def _make_inputs(rows: int, cols: int, dtype: str = "bf16") -> dict[str, torch.Tensor]:
    dt = torch.bfloat16 if dtype == "bf16" else torch.float16
    x = torch.randn(rows, cols, dtype=dt, device="cuda") * 20
    gain = torch.rand(cols, dtype=dt, device="cuda") + 0.5
    return {"x": x, "gain": gain}
