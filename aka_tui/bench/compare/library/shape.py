"""One compared shape: our side checked and timed by the engine, each library group's formulations (the vendor
library's, a peer library's) checked against the problem's reference and the chosen one timed, all sides
interleaved on the same case inputs."""

from __future__ import annotations

import json
import secrets
import statistics
from typing import Any, Callable

import torch

from aka_tui.bench.compare.library.attention import attention_groups
from aka_tui.bench.compare.library.liger import liger_groups
from aka_tui.bench.compare.library.plans import Context, LibraryPlan, PlanGroup, gemm_bf16_groups, gemm_fp8_groups
from aka_tui.bench.compare.library.results import TARGETS, ShapeComparison, SideResult, short_error
from aka_tui.bench.measure.audit import TritonLaunchRecorder
from aka_tui.bench.measure.calls import MeasureFailure, run_calls
from aka_tui.bench.measure.cases import ShapeCases, case_seeds
from aka_tui.bench.measure.plan import PlanOptions, ShapePlan
from aka_tui.bench.measure.session import build_candidate_model
from aka_tui.bench.measure.timed_checks import drive_protocol
from aka_tui.bench.measure.timing import Timers, TimingHooks, cpu_protocol, cuda_protocol
from aka_tui.bench.problem.model import Shape
from aka_tui.bench.problem.tolerance import compare_outputs

GroupBuilder = Callable[[Shape, dict, Context], list[PlanGroup]]
OP_GROUPS: dict[str, GroupBuilder] = {  # the vendor library's side of the ops with a target
    "gemm_bf16_linear_epilogue": gemm_bf16_groups,
    "gemm_fp8_blockscale": gemm_fp8_groups,
    "attention_prefill_varlen": attention_groups,
}
PEER_GROUPS: tuple[GroupBuilder, ...] = (liger_groups,)  # peer libraries: each returns [] for an op it lacks


def library_groups(shape: Shape, inputs: dict, ctx: Context) -> list[PlanGroup]:
    """Every library side of the shape: the vendor library's groups, then each peer library's."""
    builder = OP_GROUPS.get(ctx.problem.name)
    groups = builder(shape, inputs, ctx) if builder is not None else []
    for peer in PEER_GROUPS:
        groups += peer(shape, inputs, ctx)
    return groups


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _ours_side(ctx: Context, cases: ShapeCases, shape: Shape, cand_cls: Any, cand_label: str, flops: float,
               timers: Timers, l2_bytes: int, n_sets: int) -> tuple[SideResult, Callable[[], Any]]:
    """Our side: the candidate's Model as the evaluator builds it, checked by the engine; and how to time it
    (the engine's timing protocol with the timed calls verified, a fresh plan per round)."""
    ours = SideResult(f"ours: {cand_label}", "ours", flops, "ok")
    options = PlanOptions(ctx.device, audit=False, watch_threads=False, recheck=False, evidence=False, n_sets=n_sets,
                          cpu_reps=2, l2_bytes=l2_bytes)
    recorder = TritonLaunchRecorder()
    model: Any = None

    def plan() -> ShapePlan:
        return ShapePlan(ctx.problem, cases, options, timers, recorder)

    def time_ours() -> Any:
        with recorder.installed():
            return run_calls(model, plan().timing_only())

    try:
        model = build_candidate_model(cand_cls, shape, cases.ref_model, ctx.device)
        checked = plan()
        with recorder.installed():
            run_calls(model, checked.check_only(0))
        ours.max_abs_error = checked.result.max_abs
    except MeasureFailure as failure:
        ours.check, ours.verdict = f"{failure.error.kind}: {failure.error.message[:300]}", failure.error.kind
    except Exception as exc:
        ours.check, ours.verdict = f"error: {short_error(exc)}", "runtime_error"
    return ours, time_ours


class _References:
    """The reference outputs (native, and float64 when exact) each library formulation is held to, computed once."""

    def __init__(self, ctx: Context, shape: Shape, check_inputs: dict, exact: bool) -> None:
        self.ctx, self.shape, self.check_inputs, self.exact = ctx, shape, check_inputs, exact
        self._outputs: dict[Any, tuple[Any, Any]] = {}

    def outputs(self, init: dict | None, to_inputs: Callable[[dict], dict] | None) -> tuple[Any, Any]:
        from aka_tui.bench.problem.inputs import clone_inputs, upcast_inputs

        key = (json.dumps(init, sort_keys=True) if init is not None else None, id(to_inputs) if to_inputs else None)
        if key not in self._outputs:
            ctx = self.ctx
            kwargs = self.shape.init_kwargs if init is None else init
            inputs = to_inputs(self.check_inputs) if to_inputs else self.check_inputs
            native = ctx.ref_module.Model(**kwargs).to(ctx.device).eval()(**clone_inputs(inputs))
            exact_out = native
            if self.exact:
                exact_model = ctx.ref_module.Model(**kwargs).to(ctx.device).double().eval()
                exact_out = exact_model(**upcast_inputs(clone_inputs(inputs)))
            _sync(ctx.device)
            self._outputs[key] = (native, exact_out)
        return self._outputs[key]

    def check(self, out: Any, init: dict | None = None,
              to_inputs: Callable[[dict], dict] | None = None) -> tuple[str, float | None]:
        native, exact_out = self.outputs(init, to_inputs)
        problem = self.ctx.problem
        cmp = compare_outputs(out, native, exact_out, problem.tolerance_for, problem.max_mismatch_fraction)
        return ("ok" if cmp.ok else f"disagrees with the reference: {cmp.reason}"), cmp.max_abs_error


def _timer(device: str, timers: Timers, l2_bytes: int) -> Callable[..., Any]:
    """`timed(fn, sets, quick=False)`: the engine's timing protocol on a library call (a short one to choose).

    A library call goes through the same frames as our side's timed calls (`_ours_side`): the engine's call loop
    (`run_calls`: keyword arguments, `torch.no_grad`), and a launch recorder wrapping Triton's launch path whose
    own bookkeeping is subtracted from the host time of a call. Our side cannot drop them (they are how its timed
    calls are verified), so the library side carries them too: the end-to-end times then differ by the two
    implementations' host paths, not by the harness around them (H200 host, 2026-12-04: the same SiLU Model read
    67.2 µs inside a call as our side, 50.1 as a library side under a bare timer, 61.5 in these frames)."""
    def timed(fn: Callable[[dict], Any], sets: list[dict], quick: bool = False) -> Any:
        recorder = TritonLaunchRecorder()

        def observe(call: Any, out: Any) -> None:
            recorder.end_call()

        hooks = TimingHooks(prepare=lambda i: recorder.begin_call(), observe=observe,
                            harness_seconds=lambda: recorder.own_seconds)
        if device.startswith("cuda"):
            extra: dict[str, Any] = {"target_ms": 50.0, "min_reps": 5, "max_reps": 50} if quick else {}
            protocol = cuda_protocol(len(sets), timers, l2_bytes, hooks, **extra)
        else:
            protocol = cpu_protocol(len(sets), timers, 1 if quick else 2, hooks)
        with recorder.installed():
            run = run_calls(lambda **inputs: fn(inputs), drive_protocol(protocol, sets))
        return run.stats
    return timed


Chosen = tuple[LibraryPlan, dict, "float | None"]


def _choose(group: PlanGroup, check_inputs: dict, refs: _References, device: str, timed: Callable[..., Any]
            ) -> tuple[Chosen | None, list[dict]]:
    """Each formulation of the group checked (up to the first that agrees, or all of them for `fastest`); the
    chosen one, and every attempt."""
    attempts: list[dict] = []
    passing: list[Chosen] = []
    for plan in group.alternatives:
        attempt: dict = {"label": plan.label}
        attempts.append(attempt)
        if plan.unavailable:
            attempt["check"] = plan.unavailable
            continue
        try:
            prepared = plan.prepare(check_inputs)
            out = plan.output(prepared, plan.call(prepared))
            _sync(device)
            attempt["check"], err = refs.check(out, plan.reference_init, plan.reference_inputs)
            del out
            if plan.describe is not None:
                attempt.update(plan.describe(prepared))
        except Exception as exc:
            attempt["check"] = f"error: {short_error(exc)}"
            continue
        if attempt["check"] == "ok":
            passing.append((plan, prepared, err))
            if group.select == "first":
                break
    chosen: Chosen | None = passing[0] if passing else None
    if group.select == "fastest" and len(passing) > 1:
        by_label = {a["label"]: a for a in attempts}
        best = None
        for plan, prepared, err in passing:
            try:
                ms = timed(plan.call, [prepared], quick=True).median_ms
            except Exception as exc:
                by_label[plan.label]["check"] = f"error while timing: {short_error(exc)}"
                continue
            by_label[plan.label]["quick_ms"] = ms
            if best is None or ms < best[0]:
                best = (ms, (plan, prepared, err))
        chosen = best[1] if best else None
    return chosen, attempts


def _library_sides(ctx: Context, shape: Shape, check_inputs: dict, refs: _References, timed: Callable[..., Any],
                   log: Callable[[str], None]) -> list[tuple[SideResult, LibraryPlan | None]]:
    """The library side: each group's formulations, checked; the chosen one per group (None: none agreed)."""
    sides: list[tuple[SideResult, LibraryPlan | None]] = []
    for group in library_groups(shape, check_inputs, ctx):
        chosen, attempts = _choose(group, check_inputs, refs, ctx.device, timed)
        for attempt in attempts:
            log(f"  {group.title}: {attempt['label']}: {attempt['check']}"
                + (f" ({attempt['quick_ms']:.4f} ms)" if "quick_ms" in attempt else "")
                + (f" [backend {attempt['sdpa_backend']}]" if "sdpa_backend" in attempt else ""))
        if chosen is None:
            reasons = "; ".join(f"{a['label']}: {a['check']}" for a in attempts) or "no formulation applies"
            sides.append((SideResult(group.title, group.role, 0.0, f"no formulation ran and agreed ({reasons})"[:600],
                                     details={"alternatives": attempts}), None))
            continue
        plan, _, err = chosen
        chosen_attempt = next(a for a in attempts if a["label"] == plan.label)
        details = {**plan.details, **{k: v for k, v in chosen_attempt.items() if k not in ("label", "check")},
                   "alternatives": attempts}
        sides.append((SideResult(plan.label, group.role, plan.flops, "ok", max_abs_error=err, details=details), plan))
        del chosen  # the checked formulation's prepared inputs
    return sides


def _time_interleaved(runs: list[tuple[SideResult, Callable[[], Any]]], rounds: int) -> None:
    """ours, library, ours, library, ... for `rounds` rounds; each side's median of its round medians, on device
    time and end to end (`e2e_time_ms`: max(host time of one call, device time), as the scores define it)."""
    from aka_tui.bench.scoring.score import e2e_time_ms  # imports triton: after the dry-run's interpreter switch

    for _ in range(rounds):
        for side, run in runs:
            if not side.ok:
                continue
            try:
                stats = run()
            except MeasureFailure as failure:
                side.check = f"{failure.error.kind} while timing: {failure.error.message[:300]}"
                side.verdict = failure.error.kind
                continue
            except Exception as exc:
                side.check, side.verdict = f"error while timing: {short_error(exc)}", "runtime_error"
                continue
            e2e = e2e_time_ms(stats)
            side.round_ms.append(stats.median_ms)
            side.round_e2e_ms.append(e2e if e2e is not None else stats.median_ms)
            side.rounds.append({"median_ms": stats.median_ms, "p20_ms": stats.p20_ms, "p80_ms": stats.p80_ms,
                                "reps": stats.reps, "saturated": getattr(stats, "saturated", None),
                                "saturation_note": getattr(stats, "saturation_note", ""),
                                "host_call_ms": getattr(stats, "host_call_ms", None), "e2e_ms": e2e})
    for side, _ in runs:
        if side.ok and side.round_ms:
            side.median_ms = statistics.median(side.round_ms)
            side.e2e_ms = statistics.median(side.round_e2e_ms)


def compare_shape(ctx: Context, shape: Shape, selected_as: list[str], cand_cls: Any, cand_label: str,
                   timers: Timers, l2_bytes: int, rounds: int, exact_flop_limit: float,
                   log: Callable[[str], None]) -> ShapeComparison:
    problem, device = ctx.problem, ctx.device
    flops = ctx.flops(shape)
    exact = problem.fp64_reference and flops <= exact_flop_limit
    cuda = device.startswith("cuda")
    cases = ShapeCases(problem, shape, device, ctx.ref_module, ctx.input_module, case_seeds(problem, shape,
                       3 if cuda else 1), exact, 0, secrets.randbits(62))
    check_inputs = cases.case(0).inputs  # the evaluator's first correctness case, as before
    n_sets = cases.timing_sets(3 if cuda else 1, memory_fraction=0.125)
    timed = _timer(device, timers, l2_bytes)

    ours, time_ours = _ours_side(ctx, cases, shape, cand_cls, cand_label, flops, timers, l2_bytes, n_sets)
    log(f"  ours: {ours.check}")
    sides = _library_sides(ctx, shape, check_inputs, _References(ctx, shape, check_inputs, exact), timed, log)

    # Timing: the same case inputs for every side (library layouts prepared untimed), interleaved rounds.
    sets = [cases.case(i).inputs for i in range(n_sets)]
    runs: list[tuple[SideResult, Callable[[], Any]]] = []
    if ours.ok:
        runs.append((ours, time_ours))
    for side, plan in sides:
        if plan is not None:
            try:
                prepared = [plan.prepare(s) for s in sets]
                runs.append((side, lambda fn=plan.call, p=prepared: timed(fn, p)))  # type: ignore[misc]  # mypy cannot infer a lambda with default arguments
            except Exception as exc:
                side.check, side.verdict = f"error preparing the timing inputs: {short_error(exc)}", "runtime_error"
    _time_interleaved(runs, rounds)
    del runs, sets, cases
    return ShapeComparison(problem.name, shape.shape_id, shape.weight, selected_as, TARGETS.get(problem.name),
                           "float64" if exact else "native", ours, [s for s, _ in sides])
