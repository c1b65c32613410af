"""The static part of a model prompt: the reference, the shapes, the roofline per shape, the hardware."""

from __future__ import annotations

from aka_tui.bench.dtypes import dtype_name
from aka_tui.bench.hardware import HardwareProfile
from aka_tui.bench.problem import Problem
from aka_tui.bench.roofline import bound


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
