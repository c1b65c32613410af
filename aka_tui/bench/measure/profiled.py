"""Profiled calls (CUDA): one per timing input set, in one profiler session, each opened by a marker kernel.

They give the device-time attribution (own kernels vs foreign ones, design brief §5) and each set's device time,
which the timed calls on that set are held to. Each runs on a fresh copy of its set, so a candidate that skips
work on inputs it has seen before shows it as timed calls far faster than the profiled ones.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generator

import torch

from aka_tui.bench.measure import attribution
from aka_tui.bench.measure.calls import Call, MeasureFailure
from aka_tui.bench.measure.results import AuditReport
from aka_tui.bench.problem.inputs import clone_inputs

if TYPE_CHECKING:
    from aka_tui.bench.measure.plan import ShapePlan


def profiled_calls(plan: ShapePlan, report: AuditReport) -> Generator[Call, Any, AuditReport]:
    from torch.profiler import ProfilerActivity, profile

    from aka_tui.bench.roofline.empty_kernel import CALL_MARKER, CLOCK_WARMUP, launch_call_marker

    # One call per timing set when the timed calls are verified (each set's device time); else one, for attribution.
    n_sets = plan.cases.timing_sets(plan.opts.n_sets) if plan.opts.timing and plan.opts.verify_timed else 1
    marker = torch.zeros(1, device="cuda")
    launch_call_marker(marker)  # compiled (and the clocks up) before the session
    torch.cuda.synchronize()
    # Every set's inputs are copied before the session and the outputs sampled after it: between two markers runs
    # only one call. (Measured on the H200: a copy made for the next set inside the session was counted as the
    # previous call's work, which halved its timed/profiled ratio and its own_share.)
    copies = [clone_inputs(plan.cases.case(i).inputs) for i in range(n_sets)]
    torch.cuda.synchronize()
    session = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    try:
        session.__enter__()
    except Exception as exc:  # the profiler is unavailable: keep the dispatch verdict, say so
        return _note(report, f"device-time attribution unavailable ({type(exc).__name__}: {exc})")
    outputs: list[Any] = []
    try:
        for i in range(n_sets):
            launch_call_marker(marker)
            plan.recorder.begin_call()
            outputs.append((yield from plan._call(copies[i], "audit")))
            plan.later_launches.append((i, plan.recorder.end_call(), "a profiled call"))
        torch.cuda.synchronize()
    finally:
        session.__exit__(None, None, None)
    for i, out in enumerate(outputs):
        case = plan.cases.case(i)
        bad = plan.failing_samples(i, [plan._sampled(case, out, "audit (profiled call)")])
        if bad:
            raise MeasureFailure("wrong_output", "audit", f"seed {case.seed} (profiled call): {bad[0][1]}")
    del outputs, copies
    try:
        calls, stream, seen = attribution.split_calls(attribution.device_events(session), CALL_MARKER,
                                                      (CLOCK_WARMUP,))
    except Exception as exc:
        return _note(report, f"device-time attribution unavailable ({type(exc).__name__}: {exc})")
    if seen > 2 * n_sets:
        raise MeasureFailure("tampered", "audit", f"{seen - 2 * n_sets} kernel(s) named like the evaluator's own "
                             f"ran in {n_sets} profiled calls")
    if len(calls) < n_sets:
        return _note(report, f"device-time attribution unavailable (the profiler recorded {len(calls)} of {n_sets} "
                             "call markers)")
    plan.device_ms = {i: sum(k.duration_us for k in kernels) / 1e3 for i, kernels in enumerate(calls)}
    return _attribute(plan, report, [k for kernels in calls for k in kernels], stream, n_sets)


def _attribute(plan: ShapePlan, report: AuditReport, kernels: list[attribution.DeviceKernel],
               stream: int | None, calls: int = 1) -> AuditReport:
    """On CUDA the verdict is device time: own kernels ran and own_share ≥ threshold (design brief §5). The
    audited forward's scalar reads (`item()`) are read in each of the `calls` profiled calls: their copies to the
    host are set aside (attribution.py)."""
    reads = report.allowed_ops.get("_local_scalar_dense", 0) * calls
    result = attribution.attribute(kernels, set(report.own_kernels), stream, readback_copies=reads)
    if result.escaped_streams:
        raise MeasureFailure("tampered", "audit", "the candidate's kernels ran on a stream other than the timed one")
    real, reason = result.verdict(plan.opts.own_share_threshold)
    if real and report.foreign_kernels:
        real, reason = False, "foreign Triton kernels: " + ", ".join(sorted(report.foreign_kernels))
    notes = [reason] if reason else []
    if result.readback_us:
        notes.append(f"scalar reads' copies to the host set aside: {result.readback_us:.1f}us")
    if report.compute_ops:
        notes.append("aten compute ops seen: " + ", ".join(f"{k}×{v}" for k, v in sorted(report.compute_ops.items())))
    return replace(report, real=real, method="profiler+dispatch", own_share=result.own_share,
                   own_device_us=result.own_kernels, foreign_device_us=result.foreign_us, reason="; ".join(notes))


def _note(report: AuditReport, text: str) -> AuditReport:
    return replace(report, reason=(report.reason + "; " if report.reason else "") + text)
