"""Never returns from forward (an infinite loop)."""

from torch import nn


class Model(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()

    def forward(self, *args, **kwargs):
        while True:
            pass
