"""Comparisons, as thin users of the measurement engine: our kernels against the vendor library on the same
problem, timed side by side (`library`), and the correctness illusion — pass rates under a naive check, the
hardened check and real kernels (`illusion`).
"""
