"""Where evaluations run, above the benchmark core: one interface (`base.Executor`: jobs in, results streamed
back as they finish), the local executor (one slot per visible GPU, or N CPU workers: `local`) and a Ray cluster
(`ray_cluster`, the optional `ray` extra, imported lazily), and a whole suite run on one of them (`suite`). Each
slot runs one evaluation at a time and every CUDA evaluation holds its GPU's lock, so concurrent evaluations never
share a GPU.
"""
