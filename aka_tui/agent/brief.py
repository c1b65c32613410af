"""The static part of a model prompt: the reference, the shapes, the roofline per shape, the hardware."""

from __future__ import annotations

from aka_tui.bench.problem.dtypes import dtype_name
from aka_tui.bench.problem.model import Problem
from aka_tui.bench.roofline.bound import bound
from aka_tui.bench.roofline.hardware import HardwareProfile


def problem_brief(problem: Problem, profile: HardwareProfile, tier: str = "full") -> str:
    lines = [f"# Problem {problem.name} ({problem.family}, {dtype_name(problem.dtype)})", problem.description, "",
             "## reference.py", "```python", problem.reference_path.read_text(), "```", "",
             "## input.py", "```python", problem.input_path.read_text(), "```", "",
             f"## Shapes ({tier} tier) and roofline on {profile.display_name}"]
    for shape in problem.shapes_for(tier):
        entry = problem.roofline.get(shape.shape_id)
        roof = ""
        if entry is not None:
            b = bound(entry, profile)
            roof = f"; W {entry.flops:.3g} FLOP, Q {entry.bytes_total:.3g} B, T_SOL {b.t_sol_s * 1e6:.2f} us ({b.bottleneck})"
        lines.append(f"- {shape.shape_id} (weight {shape.weight:.2f}): init {shape.init_kwargs}, "
                     f"inputs {shape.input_kwargs}{roof}")
    lines += ["", f"Hardware: {profile.display_name}: HBM {profile.hbm_bandwidth_tbps} TB/s, L2 {profile.l2_bytes >> 20} MiB, "
              f"{profile.sm_count} SMs, peaks (TFLOP/s) {profile.peaks_tflops}"]
    return "\n".join(lines)


def closest_kernel(problem: Problem, kernels: list) -> object | None:
    """The knowledge base's kernel to show a model as an example for a problem it has none for: one that
    declares the operator, else one of the same family, else the one whose forward takes as many arguments."""
    import re

    if not kernels:
        return None
    declared = [k for k in kernels if problem.name in k.ops]
    if declared:
        return declared[0]
    source = problem.reference_path.read_text()
    found = re.search(r"def forward\(self,?(.*?)\)", source, re.DOTALL)
    arity = len([a for a in (found.group(1).split(",") if found else []) if a.strip()])

    def forward_arity(kernel: object) -> int:
        text = kernel.source  # type: ignore[attr-defined]
        match = re.search(r"class Model\b.*?def forward\(self,?(.*?)\)", text, re.DOTALL)
        return len([a for a in (match.group(1).split(",") if match else []) if a.strip()])

    return min(kernels, key=lambda k: (k.family != problem.family, abs(forward_arity(k) - arity), k.entry_id))


def example_section(problem: Problem, kernel: object | None) -> str:
    """The prompt section that shows the closest knowledge-base kernel (house style, TUNABLES, launch code)."""
    if kernel is None:
        return ""
    declared = problem.name in kernel.ops  # type: ignore[attr-defined]
    note = ("written for this operator" if declared else
            "written for another operator: it shows the house style, TUNABLES / SEARCH_SPACE and launch code, "
            "not this problem's semantics")
    return "\n".join(["", f"## Closest knowledge-base kernel: {kernel.entry_id} ({note})",  # type: ignore[attr-defined]
                      "```python", kernel.source, "```"])  # type: ignore[attr-defined]
