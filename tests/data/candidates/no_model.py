"""Defines no Model class."""

import torch


class Kernel(torch.nn.Module):
    pass
