"""aka-tui: pair with an agent that turns PyTorch operators into fast GPU kernels, scored on the roofline."""

__version__ = "0.1.0"
