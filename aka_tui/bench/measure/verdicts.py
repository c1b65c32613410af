"""The one vocabulary of verdicts: what the evaluator, `aka kb sweep` and the library comparison report."""

from __future__ import annotations

PASSED = "passed"
WRONG_OUTPUT = "wrong_output"  # an output (checked or timed call) outside tolerance, or a read-only input modified
RUNTIME_ERROR = "runtime_error"
COMPILE_ERROR = "compile_error"
TIMEOUT = "timeout"
CRASHED = "crashed"
CUDA_ERROR = "cuda_error"
TAMPERED = "tampered"  # the harness or the channel was interfered with, or timed calls did other work than checked ones
PROBLEM_ERROR = "problem_error"  # the problem itself failed: a suite bug
NO_CANDIDATE = "no_candidate"
SKIPPED = "skipped"
LIMIT_EXCEEDED = "limit_exceeded"  # a sandbox limit ended it (memory, CPU time, tasks, file size, disk): the message says which

# Shape statuses a worker (or the parent, over a worker's report) gives.
STATUSES = (PASSED, WRONG_OUTPUT, RUNTIME_ERROR, COMPILE_ERROR, TIMEOUT, CRASHED, CUDA_ERROR, TAMPERED,
            PROBLEM_ERROR, NO_CANDIDATE, SKIPPED, LIMIT_EXCEEDED)

# Verdicts given when scoring, held until a person accepts them (S = 0 meanwhile).
SUSPICIOUS = "suspicious"  # the candidate's source reads the harness (frames, gc, ctypes, fds, evaluator modules)
OVER_ROOFLINE = "over_roofline"  # S_raw > 1: faster than the roofline allows
HOLDS = (SUSPICIOUS, OVER_ROOFLINE)

VERDICTS = STATUSES + HOLDS
