"""The benchmark core, in pipeline order: `problem` (what is measured: operators, shapes, inputs, tolerances) →
`roofline` (the yardstick: hardware profiles and each shape's work W and traffic Q, hence T_SOL) → `sandbox` (how
candidate code is started) → `measure` (the per-shape engine and its checks: correctness, fallback attribution,
tamper detection, timing) → `evaluator` (one candidate on one problem, in worker processes the parent checks) →
`scoring` (S per shape, S_op, S_agg, reports) → `compare` (the library comparison and the correctness illusion, thin
users of the engine). It imports nothing beyond torch, triton and numpy (and `aka_tui.errors`, `paths`, `secrets`,
`safe_ast`), so it runs on a bare GPU server; where evaluations run (local GPUs, Ray) is `aka_tui.executors`, above
it. The import contracts in pyproject.toml hold these layers.
"""
