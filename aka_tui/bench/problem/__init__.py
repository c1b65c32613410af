"""The problem model: a benchmark operator (reference, input maker, shapes, tolerances, weights) loaded from a
native directory (`problem.json`) or a published Atrex-Bench one (`metadata.json`); the one lookup from a name or a
folder to a `Problem` (`lookup`); reproducible inputs, seeds and shape fuzzing inside a problem's declared domain;
the tolerance table and the output comparison every candidate goes through; `python -m
aka_tui.bench.problem.check` validates problem directories.
"""
