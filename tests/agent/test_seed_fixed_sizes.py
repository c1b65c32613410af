"""Sizes a trace holds fixed: a Python loop over a size (or over bounds read with `.tolist()`) makes inductor's
program right for that size only. The seed records those sizes per program, captures another program for a
shape the others do not fit, and picks the program whose fixed sizes a call's inputs have."""

from __future__ import annotations

from pathlib import Path

import torch

from aka_tui.agent.compile_seed import fixed_sizes
from aka_tui.agent.inductor_capture import capture
from tests.agent.optimize_runs import UNSEEN


class _BoundsMean(torch.nn.Module):
    def forward(self, x: torch.Tensor, cu_seqlens: torch.Tensor) -> torch.Tensor:
        bounds = cu_seqlens.tolist()
        return torch.stack([x[bounds[i]:bounds[i + 1]].float().mean(0) for i in range(len(bounds) - 1)])


class _Scaled(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * y


def test_the_sizes_a_trace_holds_fixed_are_read_from_the_wrappers_asserts() -> None:
    graph = capture(_BoundsMean(), {"x": torch.randn(20, 8), "cu_seqlens": torch.tensor([0, 5, 12, 20])})
    assert fixed_sizes(graph) == [("cu_seqlens", 0, 4)]  # three sequences: the loop ran three times
    graph = capture(_Scaled(), {"x": torch.randn(3, 10), "y": torch.randn(1, 10)})
    assert fixed_sizes(graph) == [("y", 0, 1)]  # a size of 1 is no symbol; every other size is one


def test_a_loop_over_the_width_gets_a_program_per_width_and_each_call_its_own(tmp_path: Path) -> None:
    """Three widths of one init argument: one program would be wrong on two of them (the seed was refused,
    "output 0 differs"). Each program is right on its width, and every shape's call picks it."""
    from aka_tui.agent.own_semantics import import_interpreted
    from aka_tui.agent.probe import load_modules, make_probes
    from aka_tui.agent.seed_source import build_seed
    from aka_tui.bench.problem.inputs import make_inputs
    from aka_tui.bench.problem.lookup import load_problem

    problem = load_problem(UNSEEN / "blockwise_row_softmax")
    seeded = build_seed(problem, make_probes(problem, "cpu")[:1], None, "cpu")
    assert seeded.source is not None, seeded.reason
    assert seeded.programs == 3 and "in 3 program(s)" in seeded.reason
    path = tmp_path / "seed.py"
    path.write_text(seeded.source)
    module = import_interpreted(path)
    assert sorted(fixed for *_, fixed in module._PROGRAMS) == [[("scores", 1, w)] for w in (24, 40, 64)]
    reference, input_module = load_modules(problem)
    for index, shape in enumerate(problem.shapes_for(None)):
        inputs = make_inputs(problem, input_module, shape, "cpu", index)
        want = reference.Model(**shape.init_kwargs)(**inputs)
        got = module.Model(**shape.init_kwargs)(**inputs)
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
