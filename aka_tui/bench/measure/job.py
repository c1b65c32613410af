"""The typed job a measurement worker runs, and its JSON form on the worker's stdin.

The defaults of the job's measurement settings are written here once (the own-share threshold in
`attribution`); the options a job is built from or turned into (`evaluate.EvalOptions`, `plan.PlanOptions`, the
sweep's `SweepOptions`) take theirs from these constants.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

DEFAULT_CASES = 3  # seeded correctness cases per shape
DEFAULT_INPUT_SETS = 3  # rotating timing input sets (each a correctness case too)
DEFAULT_CPU_REPS = 3  # timed calls on the CPU (over the input sets in turn)
DEFAULT_FP64_FLOP_LIMIT = 5e11  # above this many FLOPs a shape's reference runs in its own dtype, not float64

# The reference itself as a baseline (a candidate kind of its own, or timed beside a candidate for its speed-ups):
# eager, torch.compile in its default mode, and torch.compile in max-autotune mode, which also benchmarks GEMM
# templates on the GPU while it compiles and tunes Triton configs by coordinate descent. Its CUDA graphs are left
# out ("max-autotune-no-cudagraphs"): a graph replay first copies every input that is not a static buffer into the
# graph's own memory, and on the H200 that made the norms and SiLU-and-mul 2.2-4.5x slower than the default mode
# (session 17), a cost of calling a graph with fresh tensors, not of the kernels this column compares against.
BASELINE_KINDS = ("eager", "compile", "compile-max-autotune")
COMPILE_MODES: dict[str, str | None] = {"compile": None,
                                        "compile-max-autotune": "max-autotune-no-cudagraphs"}  # torch.compile(mode=)


@dataclass(frozen=True)
class CandidateRef:
    """A candidate file, the reference itself as a baseline (one of BASELINE_KINDS), or `baselines` (time the
    eager and/or compiled reference alone, in their own worker, for a candidate's speed-ups)."""

    kind: str  # "file" | "eager" | "compile" | "compile-max-autotune" | "baselines"
    path: str | None = None

    @property
    def is_file(self) -> bool:
        return self.kind == "file"


@dataclass(frozen=True)
class MeasureJob:
    """Everything one worker needs for its shapes; built once from `EvalOptions` (`evaluate.build_job`)."""

    problem_dir: str
    candidate: CandidateRef
    shape_ids: list[str]
    device: str  # what the worker sees ("cuda" when pinned to one GPU through visible_devices)
    cases: int
    input_sets: int
    timing: bool
    hardening: bool
    verify_timed: bool  # outputs, launches and device time of the timed calls checked (off: to measure the cost)
    own_share_threshold: float
    l2_bytes: int
    fp64_flop_limit: float
    cpu_reps: int
    sample_seed: int  # where the outputs reported to the parent are sampled (chosen by the parent per run)
    fuzz_shape_ids: list[str] = field(default_factory=list)
    visible_devices: str | None = None
    seeds: list[int] | None = None  # replay: exactly these correctness seeds
    seed_salt: str = ""  # mixed into every case seed, drawn per evaluation ("": the fixed seeds)
    baselines: list[str] = field(default_factory=list)  # kind "baselines": some of BASELINE_KINDS
    preload_dynamo: bool = False  # import torch._dynamo before the integrity snapshot (see worker.py)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> MeasureJob:
        known = {f.name for f in fields(MeasureJob)}
        values = {k: v for k, v in data.items() if k in known}
        values["candidate"] = CandidateRef(**data["candidate"])
        return MeasureJob(**values)
