"""The benchmark core: problems, hardware, roofline, evaluator, scoring.

Imports nothing beyond torch, triton and numpy (and `aka_tui.errors`), so it runs on a bare GPU server.
"""
