"""Roofline W and Q on hand-computed cases, T_SOL and the bottleneck label."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.model import RooflineEntry
from aka_tui.bench.roofline.bound import bound
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.roofline.refresh import refresh
from tests.conftest import PROBLEMS


def _problem(tmp_path: Path, name: str, reference: str, inputs: str, shapes: dict, dtype: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "reference.py").write_text(reference)
    (d / "input.py").write_text(inputs)
    (d / "shapes.json").write_text(json.dumps(shapes))
    (d / "problem.json").write_text(json.dumps({"name": name, "family": "other", "dtype": dtype}))
    return d


def test_gemm_counts_2mnk_and_each_operand_once(tmp_path: Path) -> None:
    d = _problem(tmp_path, "mm", (
        "import torch\nclass Model(torch.nn.Module):\n"
        "    def forward(self, a, b):\n        return a @ b.t()\n"), (
        "import torch\ndef _make_inputs(m, n, k, device='cpu'):\n"
        "    return {'a': torch.randn(m, k, device=device, dtype=torch.float16),"
        " 'b': torch.randn(n, k, device=device, dtype=torch.float16)}\n"),
        {"s": {"input_kwargs": {"m": 64, "n": 48, "k": 32}}}, "float16")
    problem = load_problem(d)
    refresh(problem, "cpu")
    entry = load_problem(d).roofline["s"]  # read back from the cache file
    assert entry.flops == 2 * 64 * 48 * 32
    assert entry.bytes_read == (64 * 32 + 48 * 32) * 2
    assert entry.bytes_written == 64 * 48 * 2
    assert entry.path == "fp16_tc"


def test_rms_norm_counts_elementwise_and_reduction_flops(tmp_path: Path) -> None:
    # x*x (T*H) + mean (T*H) + add eps (T) + rsqrt (T) + x*rstd (T*H) + *w (T*H) = 4TH + 2T
    d = _problem(tmp_path, "rms", (
        "import torch\nclass Model(torch.nn.Module):\n"
        "    def forward(self, x, w):\n"
        "        r = torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)\n        return x * r * w\n"), (
        "import torch\ndef _make_inputs(t, h, device='cpu'):\n"
        "    return {'x': torch.randn(t, h, device=device), 'w': torch.randn(h, device=device)}\n"),
        {"s": {"input_kwargs": {"t": 5, "h": 40}}}, "float32")
    problem = load_problem(d)
    refresh(problem, "cpu")
    entry = problem.roofline["s"]
    assert entry.flops == 4 * 5 * 40 + 2 * 5
    assert entry.bytes_read == (5 * 40 + 40) * 4 and entry.bytes_written == 5 * 40 * 4
    assert entry.path == "fp32"


def test_integer_op_is_bandwidth_only(tmp_path: Path) -> None:
    d = _problem(tmp_path, "intadd", (
        "import torch\nclass Model(torch.nn.Module):\n"
        "    def forward(self, a, b):\n        return (a + b) * 3\n"), (
        "import torch\ndef _make_inputs(n, device='cpu'):\n"
        "    return {'a': torch.randint(0, 9, (n,), device=device, dtype=torch.int32),"
        " 'b': torch.randint(0, 9, (n,), device=device, dtype=torch.int32)}\n"),
        {"s": {"input_kwargs": {"n": 1000}}}, "int32")
    problem = load_problem(d)
    refresh(problem, "meta")
    entry = problem.roofline["s"]
    assert entry.flops == 0 and entry.bytes_read == 8000 and entry.bytes_written == 4000
    t_sol = bound(entry, get_profile("h200"))
    assert t_sol.bottleneck == "memory" and t_sol.t_sol_s == pytest.approx(12000 / 4.8e12)


def test_in_place_output_aliasing_an_input_counts_once(tmp_path: Path) -> None:
    d = _problem(tmp_path, "inplace", (
        "import torch\nclass Model(torch.nn.Module):\n"
        "    def forward(self, a):\n        a.mul_(2.0)\n        return a\n"), (
        "import torch\ndef _make_inputs(n, device='cpu'):\n    return {'a': torch.randn(n, device=device)}\n"),
        {"s": {"input_kwargs": {"n": 256}}}, "float32")
    problem = load_problem(d)
    refresh(problem, "cpu")
    assert problem.roofline["s"].bytes_read == 1024 and problem.roofline["s"].bytes_written == 0


def test_t_sol_is_the_larger_of_compute_and_memory() -> None:
    h200 = get_profile("h200")
    gemm = RooflineEntry(2 * 8192**3, 3 * 8192 * 8192 * 2, 0, "bf16_tc", "counted")
    b = bound(gemm, h200)
    assert b.bottleneck == "compute"
    assert b.t_sol_s == pytest.approx(2 * 8192**3 / 989.5e12)
    a100 = get_profile("a100")
    fp8 = RooflineEntry(1e12, 1e6, 0, "fp8_tc", "counted")
    assert bound(fp8, a100).t_compute_s == pytest.approx(1e12 / 312e12)  # no fp8 path on A100


def test_shipped_hooks_override_generic_counts() -> None:
    problem = load_problem(PROBLEMS / "attention_prefill_varlen")
    shape = problem.shapes_for("smoke")[0]
    entry = problem.roofline[shape.shape_id]
    assert entry.source == "hook" and entry.flops > 0
    assert entry.path == "fp16_tc" if shape.dtype == torch.float16 else entry.path in ("fp32", "fp16_tc")


def test_rooflines_import_from_a_bench_report_only_for_matching_problems(tmp_path: Path) -> None:
    from aka_tui.bench.roofline.refresh import import_from_report

    d = _problem(tmp_path, "mm2", (
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, a):\n        return a * 2\n"), (
        "import torch\ndef _make_inputs(n, device='cpu'):\n    return {'a': torch.randn(n, device=device)}\n"),
        {"s": {"input_kwargs": {"n": 8}}}, "float32")
    problem = load_problem(d)
    entry = {"flops": 8.0, "bytes_read": 32.0, "bytes_written": 32.0, "path": "fp32", "source": "counted"}
    report = {"results": [{"problem": "mm2", "provenance": {"problem_hash": problem.content_hash},
                           "shapes": [{"shape_id": "s", "roofline": entry}]},
                          {"problem": "other", "provenance": {}, "shapes": []}]}
    assert import_from_report({"mm2": problem}, report) == {"mm2": 1}
    assert load_problem(d).roofline["s"].bytes_total == 64.0
    stale = {"results": [{**report["results"][0], "provenance": {"problem_hash": "different"}}]}
    assert import_from_report({"mm2": load_problem(d)}, stale) == {}


def test_cache_written_for_other_contents_is_ignored(tmp_path: Path) -> None:
    d = _problem(tmp_path, "mm3", (
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, a):\n        return a * 2\n"), (
        "import torch\ndef _make_inputs(n, device='cpu'):\n    return {'a': torch.randn(n, device=device)}\n"),
        {"s": {"input_kwargs": {"n": 8}}}, "float32")
    refresh(load_problem(d), "cpu")
    assert "s" in load_problem(d).roofline
    (d / "reference.py").write_text((d / "reference.py").read_text().replace("a * 2", "a * 3 + 1"))
    assert load_problem(d).roofline == {}


def test_shipped_rooflines_match_their_problems() -> None:
    """A shipped roofline.json counted for other reference or input code is recounted (and rewritten) by
    whoever loads it next — a test, or a CPU that cannot count the entries only a GPU could: refresh it with
    `aka roofline OP` in the same change instead."""
    from aka_tui.bench.roofline.bound import roofline_inputs_hash

    stale = [d.name for d in sorted(PROBLEMS.iterdir()) if (d / "roofline.json").is_file()
             and json.loads((d / "roofline.json").read_text()).get("inputs_hash") != roofline_inputs_hash(d)]
    assert not stale, f"roofline.json counted for other code: {stale}"


def test_a_recount_close_to_the_stored_entry_keeps_it_and_rehashes(tmp_path: Path) -> None:
    """`aka roofline P --keep-within PCT`: a reference edited without changing what it computes (its hash
    changed) keeps entries counted elsewhere when the recount agrees within PCT; a recount that does not agree
    replaces the entry."""
    d = _problem(tmp_path, "mm", (
        "import torch\nclass Model(torch.nn.Module):\n"
        "    def forward(self, a, b):\n        return a @ b.t()\n"), (
        "import torch\ndef _make_inputs(m, n, k, device='cpu'):\n"
        "    return {'a': torch.randn(m, k, device=device), 'b': torch.randn(n, k, device=device)}\n"),
        {"near": {"input_kwargs": {"m": 64, "n": 48, "k": 32}}, "far": {"input_kwargs": {"m": 8, "n": 8, "k": 8}}},
        "float32")
    refresh(load_problem(d), "cpu")
    stored = json.loads((d / "roofline.json").read_text())
    stored["shapes"]["near"]["bytes_read"] *= 1.004  # as if counted on another device's random inputs
    stored["shapes"]["far"]["bytes_read"] *= 1.5
    (d / "roofline.json").write_text(json.dumps(stored))
    (d / "reference.py").write_text((d / "reference.py").read_text() + "# a comment: the hash changes\n")
    assert load_problem(d).roofline == {}  # stale
    kept: list[str] = []
    refresh(load_problem(d), "cpu", keep_within=0.01, kept=kept)
    assert kept == ["near"]
    after = load_problem(d).roofline  # current again: the file's hash was updated
    assert after["near"].bytes_read == stored["shapes"]["near"]["bytes_read"]
    assert after["far"].bytes_read == 8 * 8 * 4 * 2
