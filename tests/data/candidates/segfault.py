"""Crashes the process with a segmentation fault inside forward (reads address 0)."""

import ctypes

from torch import nn


class Model(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()

    def forward(self, *args, **kwargs):
        ctypes.string_at(0)
        return args
