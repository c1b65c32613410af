"""Our kernels against torch.matmul, torch._scaled_mm and scaled_dot_product_attention on the same problems:
both sides checked against the problem's reference and timed interleaved with the engine's timer
(`aka bench libraries`).
"""
