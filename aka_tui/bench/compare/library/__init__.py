"""Our kernels against torch.matmul, torch._scaled_mm and scaled_dot_product_attention on the same problems, and
against the Liger-Kernel peer on the ops it covers where it is installed: every side checked against the
problem's reference and timed interleaved with the engine's timer (`aka bench libraries`).
"""
