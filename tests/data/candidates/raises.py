"""Raises inside forward."""

from torch import nn


class Model(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()

    def forward(self, *args, **kwargs):
        raise RuntimeError("kernel launch failed: invalid grid")
