"""The Liger-Kernel peer of `aka bench libraries`: which ops it joins, the one line a run without it says, how the
problems' inputs map to Liger's arguments, the end-to-end figures, and (where liger-kernel is installed: the test
requirements install it) Liger's RoPE and fused SiLU-and-mul checked and timed beside our kernels on the Triton
interpreter. Liger's norm kernels take a float scalar the interpreter cannot pass: tests/gpu/test_liger_peers.py
runs every Liger peer on a GPU."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from aka_tui.bench.compare.library import liger, render, results, run
from aka_tui.bench.compare.library.plans import Context
from aka_tui.bench.compare.library.shape import compare_shape, library_groups
from aka_tui.bench.measure.timing import Timers
from aka_tui.bench.problem.inputs import make_inputs
from aka_tui.bench.problem.lookup import load_problem, load_suite
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.scoring.bench_report import find_candidate
from aka_tui.errors import EvaluationError
from tests.conftest import PROBLEMS, REPO

HAS_LIGER = importlib.util.find_spec("liger_kernel") is not None
MISSING = liger.PeerStatus(liger.PEER, None, "ModuleNotFoundError: No module named 'liger_kernel'")


class _Recorder:
    """Stands in for a Liger autograd Function: records the arguments of `apply`, returns `result(*args)`."""

    def __init__(self, result: Any) -> None:
        self.calls: list[tuple] = []
        self.result = result

    def apply(self, *args: Any) -> Any:
        self.calls.append(args)
        return self.result(*args)


def _fake_liger() -> tuple[liger.PeerStatus, dict[str, _Recorder]]:
    fns = {"rms": _Recorder(lambda x, *_: x.clone()), "add": _Recorder(lambda x, r, *_: (x.clone(), (x + r))),
           "ln": _Recorder(lambda x, *_: x.clone()), "packed": _Recorder(lambda x: x[:, : x.shape[1] // 2].clone()),
           "split": _Recorder(lambda a, b: a * b), "rope": _Recorder(lambda q, k, *_: (q, k))}
    modules = {"rms_norm": SimpleNamespace(LigerRMSNormFunction=fns["rms"]),
               "fused_add_rms_norm": SimpleNamespace(LigerFusedAddRMSNormFunction=fns["add"]),
               "layer_norm": SimpleNamespace(LigerLayerNormFunction=fns["ln"]),
               "swiglu": SimpleNamespace(LigerFusedGateUpSiLUMulFunction=fns["packed"],
                                         LigerSiLUMulFunction=fns["split"]),
               "rope": SimpleNamespace(LigerRopeFunction=fns["rope"])}
    return liger.PeerStatus(liger.PEER, "0.8.5", "", modules), fns


def _context(op: str, status: liger.PeerStatus | None) -> Context:
    problem = load_problem(PROBLEMS / op)
    cache = {} if status is None else {"liger": status}
    return Context(problem, import_file(problem.reference_path, "ref"), import_file(problem.input_path, "inp"), "cpu",
                   cache)


def _shape_and_inputs(ctx: Context, shape_id: str) -> tuple[Any, dict]:
    shape = next(s for s in ctx.problem.shapes_for("smoke") if s.shape_id == shape_id)
    return shape, make_inputs(ctx.problem, ctx.input_module, shape, "cpu", 1234)


def test_without_liger_the_ops_are_as_before_and_the_run_says_so_once() -> None:
    suite = load_suite(PROBLEMS)
    lines: list[str] = []
    assert run.select_ops(None, suite, {"liger": MISSING}, lines.append) == list(results.TARGETS)
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert "Liger-Kernel peer skipped" in lines[0] and "pip install liger-kernel==0.8.5" in lines[0]
    assert ".[peers]" in lines[0] and "No module named 'liger_kernel'" in lines[0]
    with pytest.raises(EvaluationError, match=r"rms_norm compared only against the Liger-Kernel peer.*pip install"):
        run.select_ops(["gemm_bf16_linear_epilogue", "rms_norm"], suite, {"liger": MISSING}, lines.append)
    cache: dict = {}
    assert run.select_ops(["attention_prefill_varlen"], suite, cache, lines.append) == ["attention_prefill_varlen"]
    assert cache == {} and len(lines) == 1  # no Liger op asked for: not probed, nothing said
    with pytest.raises(EvaluationError, match="no library comparison for moe_sum_reduce"):
        run.select_ops(["moe_sum_reduce"], suite, {}, lines.append)


def test_with_liger_the_ops_it_covers_join_the_default_set() -> None:
    status, _ = _fake_liger()
    lines: list[str] = []
    ops = run.select_ops(None, load_suite(PROBLEMS), {"liger": status}, lines.append)
    assert ops == [*results.TARGETS, *results.PEER_OPS] and lines == []


def test_probe_reports_a_missing_or_broken_install_as_unavailable() -> None:
    def missing(name: str) -> Any:
        raise ModuleNotFoundError(f"No module named '{name.split('.')[0]}'")

    status = liger.probe_liger(missing)
    assert not status.available and status.version is None and status.to_json()["available"] is False
    assert status.reason == "ModuleNotFoundError: No module named 'liger_kernel'"

    def broken(name: str) -> Any:
        if name.endswith("rope"):
            raise RuntimeError("triton too old\nsecond line")
        return SimpleNamespace()

    assert liger.probe_liger(broken).reason == "RuntimeError: triton too old"


@pytest.mark.parametrize(("op", "labels"), [
    ("rms_norm", ["LigerRMSNormFunction, casting_mode gemma", "LigerRMSNormFunction, casting_mode llama"]),
    ("fused_add_rms_norm", ["LigerFusedAddRMSNormFunction, casting_mode gemma",
                            "LigerFusedAddRMSNormFunction, casting_mode llama"]),
    ("layer_norm", ["LigerLayerNormFunction"]),
    ("silu_and_mul", ["LigerFusedGateUpSiLUMulFunction (packed gate|up)",
                      "LigerSiLUMulFunction (gate, up split before timing)"]),
    ("rope", ["LigerRopeFunction (cos/sin rows gathered before timing)"]),
])
def test_each_liger_op_gets_one_peer_group(op: str, labels: list[str]) -> None:
    status, _ = _fake_liger()
    ctx = _context(op, status)
    shape = ctx.problem.shapes_for("smoke")[0]
    groups = library_groups(shape, {}, ctx)
    assert [(g.role, g.title, g.select) for g in groups] == [("peer", "Liger-Kernel", "fastest")]
    assert [p.label for p in groups[0].alternatives] == labels
    assert all(p.flops == ctx.flops(shape) > 0 and p.details["peer"] == "Liger-Kernel 0.8.5"
               for p in groups[0].alternatives)
    assert library_groups(shape, {}, _context(op, MISSING)) == []  # not importable: no peer side


def test_ops_liger_lacks_keep_their_own_groups_only() -> None:
    status, _ = _fake_liger()
    ctx = _context("gemm_bf16_linear_epilogue", status)
    shape = ctx.problem.shapes_for("smoke")[0]
    inputs = make_inputs(ctx.problem, ctx.input_module, shape, "cpu", 1)
    assert all(g.role != "peer" for g in library_groups(shape, inputs, ctx))
    assert liger.liger_groups(shape, inputs, _context("moe_sum_reduce", status)) == []


@pytest.mark.parametrize("op", ["rms_norm", "fused_add_rms_norm", "layer_norm"])
def test_norms_pass_the_shapes_eps_offset_zero_and_the_casting_modes(op: str) -> None:
    status, fns = _fake_liger()
    ctx = _context(op, status)
    shape, inputs = _shape_and_inputs(ctx, "smoke_t7_h1000_fp16")
    fn = fns[{"rms_norm": "rms", "fused_add_rms_norm": "add", "layer_norm": "ln"}[op]]
    for plan in library_groups(shape, inputs, ctx)[0].alternatives:
        plan.call(plan.prepare(inputs))
    weight, eps = inputs["weight"], shape.init_kwargs["eps"]
    if op == "layer_norm":
        (x, w, b, e), = fn.calls
        assert x is inputs["x"] and w is weight and b is inputs["bias"] and e == eps
        return
    tensors = (inputs["x"], weight) if op == "rms_norm" else (inputs["x"], inputs["residual"], weight)
    modes = []
    for args in fn.calls:
        n = len(tensors)
        assert all(a is t for a, t in zip(args[:n], tensors))  # as given: no copy, no transpose
        assert args[n:n + 2] == (eps, 0.0)  # the shape's eps, no weight offset
        modes.append(args[n + 2])
    assert modes == ["gemma", "llama"]


def test_silu_and_mul_passes_the_packed_input_or_its_contiguous_halves() -> None:
    status, fns = _fake_liger()
    ctx = _context("silu_and_mul", status)
    shape, inputs = _shape_and_inputs(ctx, "smoke_t7_i300_fp16")
    packed, split = library_groups(shape, inputs, ctx)[0].alternatives
    assert packed.prepare(inputs)["x"] is inputs["x"]
    halves = split.prepare(inputs)
    assert halves["gate"].is_contiguous() and halves["up"].is_contiguous()
    assert torch.equal(torch.cat([halves["gate"], halves["up"]], dim=-1), inputs["x"])  # gate first


def test_rope_gathers_and_upcasts_the_cache_rows_before_timing_and_copies_q_k_inside() -> None:
    status, fns = _fake_liger()
    ctx = _context("rope", status)
    shape, inputs = _shape_and_inputs(ctx, "smoke_t5_hq3_hk1_d80_r48_fp32")
    plan, = library_groups(shape, inputs, ctx)[0].alternatives
    prepared = plan.prepare(inputs)
    rows = inputs["cos_sin_cache"][inputs["positions"]]
    assert prepared["cos"].shape == (5, 24) and prepared["cos"].dtype == torch.float32
    assert torch.equal(prepared["cos"], rows[:, :24].float()) and torch.equal(prepared["sin"], rows[:, 24:48].float())
    q_out, k_out = plan.call(prepared)
    (q_view, k_view, cos, sin, position_ids, unsqueeze_dim, rotary_dim), = fns["rope"].calls
    assert q_view.shape == (1, 3, 5, 80) and k_view.shape == (1, 1, 5, 80) and rotary_dim == 48
    assert q_view.transpose(1, 2).is_contiguous()  # token-major storage, as Liger reads it
    assert q_view.data_ptr() != inputs["q"].data_ptr()  # a copy: Liger rotates in place, the problem does not
    assert cos is prepared["cos"] and position_ids is None and unsqueeze_dim == 1
    assert q_out.shape == inputs["q"].shape and torch.equal(q_out, inputs["q"])  # the fake rotates nothing
    fp16 = _shape_and_inputs(ctx, "smoke_t7_hq4_hk2_d64_fp16")[1]
    assert plan.prepare(fp16)["cos"].dtype == torch.float32  # the reference's compute type, not the cache's


def test_rows_give_device_and_end_to_end_ratios_and_peers_have_no_target() -> None:
    ours = results.SideResult("ours: k", "ours", 2e9, "ok", median_ms=1.0, e2e_ms=1.5)
    peer = results.SideResult("LigerRMSNormFunction", "peer", 2e9, "ok", median_ms=2.0, e2e_ms=2.0)
    comp = results.ShapeComparison("rms_norm", "s", 1.0, ["largest", "weighted"], None, "native", ours, [peer])
    row, = comp.rows()
    assert row["ratio"] == pytest.approx(2.0) and row["e2e_ratio"] == pytest.approx(2.0 / 1.5)
    assert row["ours_e2e_ms"] == 1.5 and row["library_e2e_ms"] == 2.0 and row["met"] is None
    assert comp.bar_ratio() == pytest.approx(2.0)  # no bar: the peer is the op's headline ratio
    report = results.LibraryCompareReport("cuda", "H200", "full", False, 3, "kb/family", {}, [], [comp], 1.0,
                                          peers={"Liger-Kernel": {"available": True, "version": "0.8.5", "reason": ""}})
    summary, = report.op_summary()
    assert summary["target"] is None and summary["largest_met"] is None and summary["largest_ratio"] == pytest.approx(2)
    text = render.render_text(report)
    assert "peer: LigerRMSNormFunction" in text and "peers only, no target" in text
    assert "peer: Liger-Kernel 0.8.5" in text
    assert "e2e ours/lib" in text and "1.33" in text
    assert report.to_json()["peers"]["Liger-Kernel"]["version"] == "0.8.5"
    report.peers = {"Liger-Kernel": MISSING.to_json()}
    assert "skipped" not in render.render_text(report)  # the run says it once, on stderr
    assert "peer: Liger-Kernel skipped (ModuleNotFoundError" in render.render_markdown(report)  # the record has it


@pytest.mark.slow
@pytest.mark.skipif(not HAS_LIGER, reason="liger-kernel not installed (requirements-test.txt installs it)")
@pytest.mark.parametrize(("op", "shape_id", "label"), [
    ("rope", "smoke_t5_hq3_hk1_d80_r48_fp32", "LigerRopeFunction (cos/sin rows gathered before timing)"),
    ("rope", "smoke_t7_hq4_hk2_d64_fp16", "LigerRopeFunction (cos/sin rows gathered before timing)"),
    ("silu_and_mul", "smoke_t7_i300_fp16", "LigerFusedGateUpSiLUMulFunction (packed gate|up)"),
])
def test_liger_on_the_interpreter_agrees_with_the_reference_and_is_timed(op: str, shape_id: str, label: str) -> None:
    """Liger's own kernels through the comparison: checked against the problem's reference (float64 here, with the
    problem's tolerance) before timing, then timed interleaved with our kernel."""
    ctx = _context(op, None)
    shape, _ = _shape_and_inputs(ctx, shape_id)
    path = find_candidate(REPO / "kb" / "family", ctx.problem)
    assert path is not None
    lines: list[str] = []
    with torch.no_grad():
        comp = compare_shape(ctx, shape, ["largest"], import_file(path, "cand").Model, str(path), Timers.capture(), 0,
                             2, results.EXACT_FLOP_LIMIT, lines.append)
    assert comp.reference_precision == "float64" and comp.target is None and comp.ours.ok, comp.ours.check
    peer, = comp.library
    assert (peer.role, peer.label, peer.check, peer.status) == ("peer", label, "ok", "passed"), lines
    assert peer.max_abs_error is not None and peer.details["alternatives"][0]["check"] == "ok"
    assert len(peer.round_ms) == 2 and peer.median_ms and peer.e2e_ms == peer.median_ms  # CPU: wall time is both
    row, = comp.rows()
    assert row["ratio"] is not None and row["e2e_ratio"] is not None and row["met"] is None
    assert peer.details["peer"].startswith("Liger-Kernel ") and peer.details["api"].startswith("liger_kernel.ops.")


def test_the_peer_extra_pins_the_version_the_plans_were_written_for() -> None:
    text = (REPO / "pyproject.toml").read_text()
    assert f'peers = ["{liger.PIN}"]' in text
    assert liger.PIN in (REPO / "requirements-test.txt").read_text()
