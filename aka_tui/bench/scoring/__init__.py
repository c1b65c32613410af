"""Scores and reports: S = T_SOL / T per shape when the shape passed and the candidate is a real kernel (S_raw
and a launch-aware S beside it), S_op and S_agg with the suite's weights, fast_1 and pass rates (`score`); the
record of a suite run, rescoring a stored one and merging partial ones (`bench_report`); the weights a run used
(`weights`); terminal and Markdown tables (`report`); the benchmark table in Markdown and SVG (`paper_table`,
`paper_render`, `svg_charts`).
"""
