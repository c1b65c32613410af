"""`aka bench --library-compare`: the CPU dry-run of the three ops, the fp8 form fallback, the GPU-required error,
the end-to-end time per side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from aka_tui.bench.compare.library import forms, plans, results, run
from aka_tui.bench.compare.library.shape import _time_interleaved, _timer
from aka_tui.bench.measure.results import TimingStats
from aka_tui.bench.measure.timing import Timers
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.cli import main
from aka_tui.errors import EvaluationError
from tests.conftest import PROBLEMS, REPO

CPU_ONLY = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU paths: dry-run and the GPU-required error")


def test_scaled_mm_form_falls_back_from_blockwise_to_rowwise() -> None:
    probed = []

    def probe(form: forms.ScaledMMForm) -> tuple[bool, str]:
        probed.append(form)
        if form.kind == "blockwise":
            if form.layout:
                raise RuntimeError("Invalid scaling configuration.\n- For BlockWise 128x128 scaling ...")
            return False, "runs but disagrees with the dequantised product"
        return True, "ok"

    choice = forms.select_scaled_mm_form(probe)
    assert choice.form == forms.ScaledMMForm("rowwise")
    assert [a["ok"] for a in choice.attempts] == [False, False, False, False, True]
    assert choice.attempts[1]["reason"] == "RuntimeError: Invalid scaling configuration."  # first line only
    assert all(f.kind != "tensorwise" for f in probed)  # stops at the first form that works


def test_scaled_mm_form_tensorwise_last_and_none_when_nothing_runs() -> None:
    assert forms.select_scaled_mm_form(lambda f: (f.kind == "tensorwise", "no")).form == forms.ScaledMMForm("tensorwise")
    nothing = forms.select_scaled_mm_form(lambda f: (False, "unsupported"))
    assert nothing.form is None and len(nothing.attempts) == len(forms.FP8_FORMS)
    assert forms.select_scaled_mm_form(lambda f: (True, "ok")).form == forms.FP8_FORMS[0]  # block-wise first


@pytest.mark.parametrize("blockwise_runs", [True, False])
def test_blockwise_scaled_mm_is_the_fp8_bar_when_it_runs(blockwise_runs: bool) -> None:
    """The problem's own (block-wise) scaling is the bar; row-wise is context then, and the bar without it."""
    attempts = [{"form": f.label, "ok": f.kind != "blockwise" or (blockwise_runs and not f.layout and f.api != "F.scaled_mm"),
                 "reason": "ok"} for f in forms.FP8_FORMS]

    class Ctx:
        def fp8_probe(self) -> forms.FormChoice:
            return forms.FormChoice(None, attempts)

    shape = load_problem(PROBLEMS / "gemm_fp8_blockscale").shapes_for("full")[0]
    inputs = {"a": torch.empty(256, 512), "b": torch.empty(384, 512)}
    groups = plans.gemm_fp8_groups(shape, inputs, Ctx())  # type: ignore[arg-type]
    if blockwise_runs:
        assert [g.role for g in groups] == ["bar", "context"]
        assert {p.details["form"] for p in groups[0].alternatives} == {"blockwise"}
        assert {p.details["form"] for p in groups[1].alternatives} == {"rowwise", "tensorwise"}
    else:
        assert [g.role for g in groups] == ["bar"]
        first_runnable = next(p for p in groups[0].alternatives if not p.unavailable)
        assert first_runnable.details["form"] == "rowwise"


def test_blockwise_scales_have_the_strides_pytorch_checks_for() -> None:
    a_scale, b_scale = torch.rand(64, 3), torch.rand(5, 3)  # M = 64, K = 384, N = 600
    sa, sb = forms.scaled_mm_scales(forms.ScaledMMForm("blockwise"), a_scale, b_scale, n=600)
    assert sa.shape == (64, 3) and sa.stride() == (1, 64) and torch.equal(sa, a_scale)  # outer-dim-major
    assert sb.t().shape == (5, 3) and sb.t().stride() == (3, 1) and torch.equal(sb.t(), b_scale)
    _, padded = forms.scaled_mm_scales(forms.ScaledMMForm("blockwise", layout="padded-stride"), a_scale, b_scale, n=600)
    assert padded.t().stride() == (4, 1) and torch.equal(padded, sb)


def test_coarser_fp8_scales_are_the_problem_on_coarser_scales() -> None:
    """Row-wise `_scaled_mm` scales, applied by the problem's reference layout, give the same product."""
    a = torch.randn(8, 256).to(torch.float8_e4m3fn)
    b = torch.randn(200, 256).to(torch.float8_e4m3fn)
    a_scale, b_scale = torch.rand(8, 2) + 0.5, torch.rand(2, 2) + 0.5
    form = forms.ScaledMMForm("rowwise")
    sa, sb = forms.scaled_mm_scales(form, a_scale, b_scale, n=200)
    direct = (a.float() * sa) @ (b.float() * sb.t()).t()
    applied_a, applied_b = forms.problem_scales_for(form, a_scale, b_scale)
    via_problem = forms.dequant_matmul(a, applied_a, b, applied_b)
    torch.testing.assert_close(direct, via_problem)


def test_select_shapes_largest_by_flops_and_weighted() -> None:
    problem = load_problem(PROBLEMS / "gemm_bf16_linear_epilogue")
    chosen = run.select_shapes(problem, "full", ["largest", "weighted"], lambda s: problem.roofline[s.shape_id].flops)
    assert {s.shape_id: why for s, why in chosen} == {
        "qwen2.5_7b_qkv_bias_prefill_m8192": ["weighted"], "llama3_8b_down_residual_prefill_m8192": ["weighted"],
        "starcoder2_15b_fc_gelu_bias_prefill_m4096": ["largest"]}
    with pytest.raises(EvaluationError):
        run.parse_shape_sets("largest,biggest")


def test_end_to_end_is_the_host_time_of_a_call_when_it_exceeds_the_device_time() -> None:
    def stats(median: float, host: float | None) -> TimingStats:
        return TimingStats(median, median, median, median, 10, 1, "cuda_events", 0, host_call_ms=host)

    device_bound = results.SideResult("a", "bar", 1.0, "ok")
    host_bound = results.SideResult("b", "bar", 1.0, "ok")
    cpu = results.SideResult("c", "bar", 1.0, "ok")
    _time_interleaved([(device_bound, lambda: stats(0.5, 0.01)), (host_bound, lambda: stats(0.004, 0.02)),
                       (cpu, lambda: stats(3.0, None))], rounds=2)
    assert device_bound.e2e_ms == 0.5 and host_bound.e2e_ms == 0.02 and host_bound.median_ms == 0.004
    assert cpu.e2e_ms == 3.0 and host_bound.round_e2e_ms == [0.02, 0.02]
    assert host_bound.rounds[0]["host_call_ms"] == 0.02 and host_bound.rounds[0]["e2e_ms"] == 0.02
    # The end-to-end ratio reads like the device one (ours over the library's throughput), on e2e times.
    row, = results.ShapeComparison("op", "s", 1.0, ["largest"], 0.8, "native", host_bound, [device_bound]).rows()
    assert row["ratio"] == pytest.approx(0.5 / 0.004) and row["e2e_ratio"] == pytest.approx(0.5 / 0.02)
    assert row["ours_e2e_ms"] == 0.02 and row["library_e2e_ms"] == 0.5 and row["met"] is True


def test_a_library_call_is_timed_in_the_frames_our_calls_are_timed_in() -> None:
    """Our side's timed calls run in the engine's call loop (no_grad) with Triton's launch path wrapped by the
    launch recorder; a library side must run in the same frames, or the end-to-end ratio would compare
    harnesses rather than host paths."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    originals = (JITFunction.run, InterpretedFunction.run)
    seen: list[tuple[bool, bool, dict]] = []

    def library_call(inputs: dict) -> torch.Tensor:
        wrapped = (JITFunction.run, InterpretedFunction.run) != originals
        seen.append((torch.is_grad_enabled(), wrapped, inputs))
        return inputs["x"] * 2

    x = torch.ones(4)
    stats = _timer("cpu", Timers.capture(), 0)(library_call, [{"x": x}])
    assert seen and all(not grad and wrapped for grad, wrapped, _ in seen)
    assert all(inputs["x"] is x for _, _, inputs in seen)  # the prepared inputs themselves, not copies
    assert stats.reps >= 1 and stats.median_ms >= 0.0
    assert (JITFunction.run, InterpretedFunction.run) == originals  # the recorder is removed afterwards


@CPU_ONLY
@pytest.mark.parametrize("argv", [[], ["--device", "cpu"], ["--device", "cpu", "--tier", "full"], ["--device", "cuda"]],
                         ids=["auto", "cpu-full-by-default", "cpu-full", "cuda"])
def test_without_a_gpu_it_says_so_in_one_line(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc = main(["bench", "--library-compare", "--out", str(tmp_path), *argv])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "needs a CUDA GPU" in lines[0], captured.err
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
@CPU_ONLY
def test_dry_run_on_the_interpreter_exercises_all_three_ops(tmp_path: Path) -> None:
    """The CLI in a fresh process without TRITON_INTERPRET in its environment (it must switch the interpreter on
    before triton is imported), the largest smoke shape of each op with a target, two interleaved rounds (the
    peer-library ops: test_library_peers.py)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "aka_tui", "bench", "--library-compare", "--device", "cpu", "--tier", "smoke",
         "--ops", ",".join(results.TARGETS), "--shapes", "largest", "--rounds", "2", "--out", str(tmp_path),
         "--name", "lc"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "timings and ratios are meaningless" in proc.stdout
    data = json.loads((tmp_path / "lc.json").read_text())
    assert data["dry_run"] and "meaningless" in (tmp_path / "lc.md").read_text()
    comps = {c["op"]: c for c in data["comparisons"]}
    assert set(comps) == set(results.TARGETS) and not data["errors"]
    for op, comp in comps.items():
        assert comp["selected_as"] == ["largest"] and comp["target"] == results.TARGETS[op]
        assert comp["ours"]["check"] == "ok" and len(comp["ours"]["round_ms"]) == 2, comp["ours"]
        assert comp["ours"]["status"] == "passed"  # checked and timed (timed calls verified) by the engine
        for side in comp["library"]:
            assert side["check"] == "ok" and side["median_ms"] > 0 and len(side["round_ms"]) == 2, side
            assert side["status"] == "passed"
        assert all(row["ratio"] is not None and row["met"] is not None for row in comp["rows"])
        assert all(row["e2e_ratio"] is not None and row["library_e2e_ms"] > 0 for row in comp["rows"])
    gemm = comps["gemm_bf16_linear_epilogue"]  # smoke_m33: silu + residual, so both library rows
    assert [s["role"] for s in gemm["library"]] == ["bar", "context"]
    assert gemm["library"][0]["flops"] < gemm["ours"]["flops"] == gemm["library"][1]["flops"]
    fp8 = comps["gemm_fp8_blockscale"]["library"][0]  # the CPU's _scaled_mm has no block-wise scaling
    assert fp8["details"]["form"] == "rowwise"
    assert [a["ok"] for a in data["fp8_probe"]][:4] == [False] * 4
    attention = comps["attention_prefill_varlen"]["library"][0]
    assert attention["details"]["sdpa_backend"] != "unknown" and attention["details"]["strategy"]
    assert len(attention["details"]["alternatives"]) >= 3
