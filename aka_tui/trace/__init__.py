"""Profiler-trace ingestion: link kernels to operators, derive per-op/per-shape GPU-time weights, record a
serving-style workload. Needs only torch + numpy + the standard library."""
