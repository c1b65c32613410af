"""Inputs hard-coded to CUDA, as published Atrex-Bench input files are."""

import torch


def _make_inputs(rows: int, cols: int):
    return {"x": torch.randn(rows, cols, device="cuda", dtype=torch.float32) * 2.0}
