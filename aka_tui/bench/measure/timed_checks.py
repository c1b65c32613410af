"""The timed calls of a shape's plan and what holds them to the checked ones.

`timed_calls` runs the timing protocol (CUDA or CPU) on the shape's input sets, restoring the inputs the
problem mutates before each call. With verification on, every call's output is sampled and compared with the
reference for its inputs, the post-warm-up check on each set fixes the launches every later call on that set
must repeat (`compare_launches`), and on CUDA each set's timed median is held to the device time its profiled
call measured (`profiled.py`): far below it, the timed calls did less work. Threads started or left running,
launches on another stream, device work escaping the timed stream and read-only inputs modified during timing
are tampering or wrong output. The functions take the `ShapePlan` whose state they read and extend.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generator

import torch

from aka_tui.bench.measure.audit import launch_difference
from aka_tui.bench.measure.calls import Call, MeasureFailure, called
from aka_tui.bench.measure.integrity import new_threads, thread_census
from aka_tui.bench.measure.results import TimingStats
from aka_tui.bench.measure.timing import TimedCall, TimingHooks, TimingRun, cpu_protocol, cuda_protocol, escaped_work

if TYPE_CHECKING:
    from aka_tui.bench.measure.plan import ShapePlan

TIMED_PHASES = ("host-bound", "saturated", "cpu")
DEVICE_TIME_RATIO = 0.5  # a timed median below this fraction of the profiled device time is less work
DEVICE_TIME_SLACK_MS = 0.005


@dataclass
class _Observed:
    phase: str
    set_index: int
    samples: list[torch.Tensor]
    launches: list[tuple[Any, ...]] | None


def timed_calls(plan: ShapePlan) -> Generator[Call, Any, TimingStats]:
    """The timing protocol on the shape's input sets, then the checks of what the timed calls did."""
    n_sets = plan.cases.timing_sets(plan.opts.n_sets)
    mutated = tuple(sorted(frozenset().union(*(plan.cases.may_write(i) for i in range(n_sets)))))
    sets = [plan.cases.case(i).inputs for i in range(n_sets)]
    verify = plan.opts.verify_timed and plan.opts.hardened
    pristine = {i: {k: sets[i][k].clone() for k in mutated if isinstance(sets[i].get(k), torch.Tensor)}
                for i in range(n_sets)}
    read_only = [input_checksums(s, mutated) for s in sets]
    observed: list[_Observed] = []
    hooks = _hooks(plan, sets, pristine, observed) if verify else \
        TimingHooks(prepare=lambda i: _restore(sets[i], pristine[i]), harness_seconds=lambda: plan.recorder.own_seconds)
    watch = plan.opts.watch_threads and plan.thread_starts is not None
    before, mark = (thread_census(), plan.thread_starts.mark()) if watch and plan.thread_starts else (set(), 0)
    if plan.opts.cuda:
        protocol = cuda_protocol(n_sets, plan.timers, plan.opts.l2_bytes, hooks)
        with plan.recorder.guarding_stream(torch.cuda.current_stream().cuda_stream):
            run = yield from drive_protocol(protocol, sets)
        off_stream = dict(plan.recorder.off_stream)
    else:
        run = yield from drive_protocol(cpu_protocol(n_sets, plan.timers, plan.opts.cpu_reps, hooks), sets)
        off_stream = {}
    plan.sync()
    if watch and plan.thread_starts is not None:
        _threads_after_timing(plan, before, mark, off_stream, run.stats)
    for i, s in enumerate(sets):
        if input_checksums(s, mutated) != read_only[i]:
            raise MeasureFailure("wrong_output", "timing", f"seed {plan.cases.seeds[i]}: a read-only input "
                                 "was modified during timing")
    plan.recorder.end_call()  # nothing is captured past the protocol
    for i, s in enumerate(sets):  # the cases stay pristine for what follows (the recheck copies case 0)
        _restore(s, pristine[i])
    if verify:
        began = time.perf_counter()
        _verify_timed(plan, observed, run)
        plan.result.verification["verify_timed_s"] = round(time.perf_counter() - began, 4)
        plan.result.verification["hooks_s"] = round(plan.result.verification["hooks_s"], 4)
    return run.stats


def _hooks(plan: ShapePlan, sets: list[dict[str, Any]], pristine: dict[int, dict[str, torch.Tensor]],
           observed: list[_Observed]) -> TimingHooks:
    """The protocol's hooks: restore and record around every call, sample its output, check after warm-up.
    Their own host time is added up in the result's verification (`hooks_s`, `checkpoint_s`)."""
    clock, verification = plan.timers.perf_counter, plan.result.verification
    verification.setdefault("hooks_s", 0.0)

    def prepare(i: int) -> None:
        began = clock()
        _restore(sets[i], pristine[i])
        plan.recorder.begin_call()
        verification["hooks_s"] += clock() - began

    def observe(call: TimedCall, out: Any) -> None:
        began = clock()
        launches = plan.recorder.end_call()
        samples = plan._sampled(plan.cases.case(call.set_index), out, f"timing ({call.phase} call)")
        observed.append(_Observed(call.phase, call.set_index, samples,
                                  launches if call.phase in TIMED_PHASES else None))
        verification["hooks_s"] += clock() - began

    def checkpoint(name: str) -> Generator[Call, Any, None]:
        """After warm-up, a full check of every set on the timed tensors themselves, which fixes the launches
        every later call on that set must repeat (after timing, the recheck and the samples suffice)."""
        if name != "after warm-up":
            return
        began = clock()
        for i in range(len(sets)):
            prepare(i)
            out = yield from called(Call(sets[i], "timing"))
            plan.sync()
            plan.reference_launches[i] = plan.recorder.end_call()
            plan._compare(plan.cases.case(i), out, f"check {name} (on the timed inputs)")
        plan.result.launches = plan.reference_launches.get(0, [])
        verification["checkpoint_s"] = round(clock() - began, 4)

    return TimingHooks(prepare, observe, checkpoint, lambda: plan.recorder.own_seconds)


def _threads_after_timing(plan: ShapePlan, before: set[int], mark: int, off_stream: dict[str, int],
                          stats: TimingStats) -> None:
    """Launches on another stream, threads left running, device work that escaped the timed stream."""
    if off_stream:
        raise MeasureFailure("tampered", "timing", "kernel launches on a stream other than the timed one during "
                             "timing: " + ", ".join(f"{k}×{v}" for k, v in sorted(off_stream.items())))
    assert plan.thread_starts is not None
    left = sorted(set(new_threads(before) + plan.thread_starts.since(mark)))
    if left:
        raise MeasureFailure("tampered", "timing", "background thread(s) running after timing: " + ", ".join(left))
    if escaped_work(stats):
        event_ms = stats.host_bound_median_ms if stats.host_bound_median_ms is not None else stats.median_ms
        raise MeasureFailure("tampered", "timing",
                             f"device work escaped the timed stream: {stats.wall_ms_per_call:.3f} ms synchronised "
                             f"wall time per call vs {event_ms:.3f} ms by events (+{stats.flush_ms:.3f} ms flush "
                             "and restores, host-bound pass)")


def _verify_timed(plan: ShapePlan, observed: list[_Observed], run: TimingRun) -> None:
    """Outputs of every call of the protocol, launches of the timed ones, device time per set."""
    for i in sorted({o.set_index for o in observed}):
        mine = [o for o in observed if o.set_index == i]
        case = plan.cases.case(i)
        bad = plan.failing_samples(i, [o.samples for o in mine])
        if bad:
            k, why = bad[0]
            raise MeasureFailure("wrong_output", "timing",
                                 f"{len(bad)} of {len(mine)} calls on seed {case.seed} returned wrong outputs; "
                                 f"first: call {k} ({mine[k].phase} pass): {why}")
        for o in mine:
            if o.launches is not None:
                plan.later_launches.append((i, o.launches, f"a timed call ({o.phase} pass)"))
    plan.result.verification.update(timed_calls=sum(o.launches is not None for o in observed),
                                    sampled_calls=len(observed))
    _device_time(plan, run)


def _device_time(plan: ShapePlan, run: TimingRun) -> None:
    """Each set's timed median against its profiled call's device time (CUDA, when the profiler ran)."""
    if not plan.device_ms:
        return
    ratios = {}
    for i, profiled in plan.device_ms.items():
        times = [ms for index, ms in run.per_call if index == i]
        if not times or profiled <= 0:
            continue
        median = statistics.median(times)
        ratios[i] = median / profiled
        if median < DEVICE_TIME_RATIO * profiled and profiled - median > DEVICE_TIME_SLACK_MS:
            raise MeasureFailure("tampered", "timing",
                                 f"timed calls on seed {plan.cases.seeds[i]} took {median:.4f} ms (median), but "
                                 f"the same call's kernels ran {profiled:.4f} ms under the profiler: the timed "
                                 "calls did less work than the checked ones")
    if ratios:
        plan.result.verification["timed_over_profiled"] = round(min(ratios.values()), 3)


def compare_launches(plan: ShapePlan) -> None:
    """Every call after the checks must launch what the post-warm-up check on its inputs launched."""
    if not plan.reference_launches:
        return
    for index, launches, what in plan.later_launches:
        expected = plan.reference_launches.get(index)
        if expected is not None and launches != expected:
            raise MeasureFailure("tampered", "timing",
                                 f"{what} on seed {plan.cases.seeds[index]} launched other work than the checked "
                                 f"call on the same inputs: {launch_difference(expected, launches)}")
    plan.result.verification["launches_compared"] = len(plan.later_launches)


def drive_protocol(protocol: Generator[Any, Any, TimingRun], sets: list[dict[str, Any]]) -> Generator[Call, Any, TimingRun]:
    """Make the calls a timing protocol asks for (its interleaved checks pass through as they are)."""
    out: Any = None
    while True:
        try:
            request = protocol.send(out)
        except StopIteration as stop:
            return stop.value
        out = None
        if isinstance(request, Call):  # an interleaved check's call: its output is the check's to take
            yield request
        else:
            out = yield from called(Call(sets[request.set_index], "timing"))


def _restore(inputs: dict[str, Any], pristine: dict[str, torch.Tensor]) -> None:
    """Inputs the problem declares mutated go back to their pristine values before each call."""
    for name, value in pristine.items():
        inputs[name].copy_(value)


def input_checksums(inputs: dict[str, Any], mutated: Sequence[str], chunk: int = 1 << 24) -> list[int]:
    """Bit-level checksums of the read-only tensor inputs (sum and sum of squares of their bits, chunked)."""
    sums: list[int] = []
    for name, value in inputs.items():
        if name in mutated or not isinstance(value, torch.Tensor) or value.numel() == 0:
            continue
        flat = value.detach().reshape(-1)
        if flat.is_complex():
            flat = torch.view_as_real(flat).reshape(-1)
        as_int = {2: torch.int16, 4: torch.int32, 8: torch.int64}.get(flat.element_size(), torch.uint8)
        total = torch.zeros(2, dtype=torch.int64, device=flat.device)
        for part in flat.split(chunk):
            bits = (part.view(as_int) if flat.dtype != torch.bool else part).to(torch.int64)
            total += torch.stack([bits.sum(), (bits * bits).sum()])
        sums.extend(int(v) for v in total.tolist())
    return sums
