"""Timing: CUDA events around each call with an L2 flush before it, rotating input sets, median.

Two passes per timed callable on CUDA. The first (host-bound) pass enqueues flush, start event, call and end
event per repetition with no sync in between: when the host's enqueue cost per call exceeds the GPU's work
per call, the GPU idles inside the event interval and the interval holds host launch latency. Its wall time
and medians feed the escaped-work check. The second (GPU-saturated) pass is the reported one: a
`torch.cuda._sleep` on the timed stream keeps the GPU busy while the host enqueues every repetition, so the
GPU then runs them back to back and each event interval is device time only.

The passes are written once, as generators (`cuda_protocol`, `cpu_protocol`) that yield the call they want
made next (`TimedCall`: which input set, which phase) and receive its output: `time_cuda` / `time_cpu` drive
them with plain calls, the evaluator's engine drives them from the same loop that makes its checked calls
(`aka_tui.bench.measure`), so a timed call and a checked call go through the same frames.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Generator

import torch

from aka_tui.bench.measure.job import DEFAULT_CPU_REPS
from aka_tui.bench.measure.results import TimingStats

SLOW_CALL_MS = 20.0  # a call at least this long is timed with SLOW_CALL_REPS repetitions at minimum
SLOW_CALL_REPS = 3
SATURATED_MAX_REPS = 60  # × (flush + 2 events + the call's launches): well inside the ~1000-entry launch queue
SATURATED_MIN_REPS = 5
SATURATED_MAX_SLEEP_MS = 100.0
SATURATED_ATTEMPTS = 3
SLEEP_MARGIN = 1.5  # sleep ≥ margin × reps × host enqueue cost per call (+ a fixed pad)
SLEEP_PAD_MS = 0.2
_CALIBRATION_CYCLES = 4_000_000  # ~2 ms at 2 GHz
_SLEEP_MS_PER_CYCLE: dict[int, float] = {}  # per device, calibrated once per process


@dataclass(frozen=True)
class Timers:
    """Timer entry points captured before any candidate is imported (integrity.py checks them unchanged)."""

    perf_counter: Callable[[], float]
    event_cls: Any
    elapsed_time: Any
    record: Any
    synchronize: Any
    query: Any = None  # torch.cuda.Event.query
    sleep: Any = None  # torch.cuda._sleep (None where this torch build lacks it)

    @staticmethod
    def capture() -> Timers:
        return Timers(time.perf_counter, torch.cuda.Event, torch.cuda.Event.elapsed_time,
                      torch.cuda.Event.record, torch.cuda.synchronize, torch.cuda.Event.query,
                      getattr(torch.cuda, "_sleep", None))


@dataclass(frozen=True)
class SaturatedPlan:
    """Repetitions and GPU sleep of the saturated pass; reps == 0: no such pass (`note` says why)."""

    reps: int
    sleep_ms: float
    note: str = ""


def plan_saturated_pass(host_ms_per_call: float, first_pass_reps: int, attempt: int = 0,
                        max_reps: int = SATURATED_MAX_REPS, min_reps: int = SATURATED_MIN_REPS,
                        max_sleep_ms: float = SATURATED_MAX_SLEEP_MS, margin: float = SLEEP_MARGIN,
                        pad_ms: float = SLEEP_PAD_MS) -> SaturatedPlan:
    """Size the saturated pass from the host's enqueue cost per call measured in the first pass.

    The sleep must outlast the host enqueueing all repetitions: sleep = margin × reps × host cost + pad, at
    most `max_sleep_ms`; reps are capped by `max_reps` (the launch queue), by the first pass's reps (its
    ~200 ms target) and by what fits under the sleep cap. Each retry (`attempt` ≥ 1: the GPU woke up before
    the host had finished) doubles the margin and halves the reps (a full launch queue blocks the host too).
    """
    host = max(float(host_ms_per_call), 1e-4)
    scale = 2 ** attempt
    per_call = margin * scale * host
    fit = int((max_sleep_ms - pad_ms) / per_call) if max_sleep_ms > pad_ms else 0
    reps = min(max(1, max_reps // scale), max(1, first_pass_reps), fit)
    if reps < min_reps:
        # A slow enqueue is usually a host blocked on a full launch queue, i.e. an already device-bound pass.
        return SaturatedPlan(0, 0.0, f"host enqueue {host:.3f} ms per call: {min_reps} calls do not fit under a "
                                     f"{max_sleep_ms:.0f} ms GPU sleep")
    return SaturatedPlan(reps, min(max_sleep_ms, per_call * reps + pad_ms))


def _quantile(sorted_values: list[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


def _stats(times_ms: list[float], sets: int, timer: str, flush_bytes: int, wall: float | None,
           flush_ms: float | None = None) -> TimingStats:
    ordered = sorted(times_ms)
    return TimingStats(statistics.median(ordered), ordered[0], _quantile(ordered, 0.2), _quantile(ordered, 0.8),
                       len(ordered), sets, timer, flush_bytes, wall, flush_ms)


def escaped_work(stats: TimingStats, slack_ms: float = 0.05) -> bool:
    """Synchronised wall time far above event time + flush: work ran outside the timed stream.

    Compares the first (host-bound) pass only: its median (`host_bound_median_ms`; `median_ms` in results
    written before the saturated pass existed) + flush against its wall time per iteration. Host launch
    overhead is hidden behind the flush or shows up inside the events, so an honest call's wall time per
    iteration stays near event time + flush time; work on a side stream or a thread shows up only in the wall
    time. The saturated pass cannot be checked this way: its wall time is dominated by the GPU sleep.

    A host-bound call (the host needs longer to issue a call than the GPU to run it, and the harness's own
    per-call work adds to that) has a wall time near the host's enqueue time, not the event time: the final
    synchronise waited for almost nothing. Escaped work that the wall time can show is work still pending
    once the host is done, so where the enqueue time is known, that tail must exceed one call's timed work
    too. (Escaped work short enough to hide in the host's time shows on the profiled calls' streams.)
    """
    if stats.wall_ms_per_call is None or stats.flush_ms is None:
        return False
    median = stats.host_bound_median_ms if stats.host_bound_median_ms is not None else stats.median_ms
    over_events = stats.wall_ms_per_call > 2.0 * (median + stats.flush_ms) + slack_ms
    if stats.host_enqueue_ms is None:
        return over_events
    return over_events and stats.wall_ms_per_call - stats.host_enqueue_ms > median + stats.flush_ms + slack_ms


def sleep_ms_per_cycle(timers: Timers) -> float | None:
    """Duration of one `torch.cuda._sleep` cycle on the current device, measured once per process with events.

    The fastest of three runs is kept (the highest clock seen): the conservative side, since a faster clock
    during the saturated pass would shorten the sleep. None where `_sleep` is unavailable.
    """
    if timers.sleep is None or timers.query is None:
        return None
    device = torch.cuda.current_device()
    if device in _SLEEP_MS_PER_CYCLE:
        return _SLEEP_MS_PER_CYCLE[device]
    start, end = timers.event_cls(enable_timing=True), timers.event_cls(enable_timing=True)
    timers.sleep(1000)  # loads the kernel
    timers.synchronize()
    runs = []
    for _ in range(3):
        timers.record(start)
        timers.sleep(_CALIBRATION_CYCLES)
        timers.record(end)
        timers.synchronize()
        runs.append(timers.elapsed_time(start, end))
    per_cycle = min(runs) / _CALIBRATION_CYCLES
    if not per_cycle > 0:
        return None
    _SLEEP_MS_PER_CYCLE[device] = per_cycle
    return per_cycle


@dataclass(frozen=True)
class TimedCall:
    """The call the timing protocol wants made next: on which input set, in which phase."""

    set_index: int
    phase: str  # "first" | "estimate" | "warm-up" | "host-bound" | "saturated" | "cpu"


@dataclass
class TimingHooks:
    """What the caller does around every call of the protocol (all optional).

    `prepare(set_index)` runs before the L2 flush (restore inputs the call mutates), `observe(call, out)` after
    the end event (sample the output, close the launch record): both outside the timed interval.
    `checkpoint(name)` returns a generator of extra calls made between passes (the engine's interleaved checks);
    the protocol passes whatever it yields through to its driver. `harness_seconds()` is a running total of the
    harness's work done inside calls (the launch recorder's): a call's host time is measured without it.
    """

    prepare: Callable[[int], None] | None = None
    observe: Callable[[TimedCall, Any], None] | None = None
    checkpoint: Callable[[str], Generator[Any, Any, None]] | None = None
    harness_seconds: Callable[[], float] | None = None  # the harness's own time inside calls so far (launch records)


@dataclass(frozen=True)
class TimingRun:
    """A protocol's result: the stats, and (set index, ms) of every call of the reported pass."""

    stats: TimingStats
    per_call: list[tuple[int, float]]


Protocol = Generator[Any, Any, TimingRun]


def drive(fn: Callable[[dict], Any], input_sets: list[dict], protocol: Generator[Any, Any, Any]) -> Any:
    """Run a protocol by calling `fn(input_sets[i])` for each call it asks for; returns its result."""
    out = None
    while True:
        try:
            request = protocol.send(out)
        except StopIteration as stop:
            return stop.value
        out = fn(input_sets[request.set_index])


def _one(hooks: TimingHooks, index: int, phase: str, timers: Timers | None = None, flush: torch.Tensor | None = None,
         start: Any = None, end: Any = None) -> Generator[Any, Any, float]:
    """One call of the protocol: prepare, flush, start event, the call, end event, observe. Returns the host's
    milliseconds inside the call alone (what issuing it costs a caller, none of the harness's work around it)."""
    if hooks.prepare is not None:
        hooks.prepare(index)
    if flush is not None:
        flush.zero_()
    if start is not None and timers is not None:
        timers.record(start)
    request = TimedCall(index, phase)
    harness = hooks.harness_seconds or (lambda: 0.0)
    began, harness_began = (timers.perf_counter(), harness()) if timers is not None else (0.0, 0.0)
    out = yield request
    host_ms = 0.0
    if timers is not None:
        host_ms = max(0.0, (timers.perf_counter() - began) - (harness() - harness_began)) * 1e3
    if end is not None and timers is not None:
        timers.record(end)
    if hooks.observe is not None:
        hooks.observe(request, out)
    return host_ms


def _checkpoint(hooks: TimingHooks, name: str) -> Generator[Any, Any, None]:
    if hooks.checkpoint is not None:
        yield from hooks.checkpoint(name)


def saturated_pass(n_sets: int, timers: Timers, flush: torch.Tensor, host_ms_per_call: float, first_pass_reps: int,
                   hooks: TimingHooks | None = None,
                   ) -> Generator[Any, Any, tuple[list[float] | None, float | None, str, list[int]]]:
    """(event times, measured sleep ms, note, set index per call): None times when no attempt kept the GPU saturated."""
    hooks = hooks or TimingHooks()
    per_cycle = sleep_ms_per_cycle(timers)
    if per_cycle is None:
        return None, None, "torch.cuda._sleep unavailable: reported times are the host-bound pass", []
    note = ""
    for attempt in range(SATURATED_ATTEMPTS):
        plan = plan_saturated_pass(host_ms_per_call, first_pass_reps, attempt)
        if plan.reps == 0:
            return None, None, plan.note + ": reported times are the host-bound pass", []
        starts = [timers.event_cls(enable_timing=True) for _ in range(plan.reps)]
        ends = [timers.event_cls(enable_timing=True) for _ in range(plan.reps)]
        sleep_start, sleep_end = timers.event_cls(enable_timing=True), timers.event_cls(enable_timing=True)
        timers.synchronize()
        timers.record(sleep_start)
        timers.sleep(max(1, math.ceil(plan.sleep_ms / per_cycle)))
        timers.record(sleep_end)
        for i in range(plan.reps):
            yield from _one(hooks, i % n_sets, "saturated", timers, flush, starts[i], ends[i])
        # Still asleep once everything is enqueued: the GPU ran the calls back to back, never idle.
        saturated = not timers.query(sleep_end)
        timers.synchronize()
        if saturated:
            times = [timers.elapsed_time(s, e) for s, e in zip(starts, ends)]
            return times, timers.elapsed_time(sleep_start, sleep_end), "", [i % n_sets for i in range(plan.reps)]
        note = (f"the GPU woke from its {plan.sleep_ms:.2f} ms sleep before the host had enqueued {plan.reps} calls "
                f"({attempt + 1} attempts): reported times are the host-bound pass")
    return None, None, note, []


def _saturated_pass(fn: Callable[[dict], Any], input_sets: list[dict], timers: Timers, flush: torch.Tensor,
                    host_ms_per_call: float, first_pass_reps: int) -> tuple[list[float] | None, float | None, str]:
    """The saturated pass driven by plain calls of `fn` (event times, measured sleep ms, note)."""
    times, sleep_ms, note, _ = drive(fn, input_sets, saturated_pass(len(input_sets), timers, flush, host_ms_per_call,
                                                                    first_pass_reps))
    return times, sleep_ms, note


def _harness_ms(hooks: TimingHooks, n_sets: int, timers: Timers, flush: torch.Tensor) -> float:
    """Device time of the harness work between two calls (restores and the L2 flush), median of 5."""
    start, end = timers.event_cls(enable_timing=True), timers.event_cls(enable_timing=True)
    times = []
    for i in range(5):
        timers.record(start)
        if hooks.prepare is not None:
            hooks.prepare(i % n_sets)
        flush.zero_()
        timers.record(end)
        timers.synchronize()
        times.append(timers.elapsed_time(start, end))
    return statistics.median(times)


def cuda_protocol(n_sets: int, timers: Timers, l2_bytes: int, hooks: TimingHooks | None = None,
                  target_ms: float = 200.0, min_reps: int = 10, max_reps: int = 200, saturate: bool = True) -> Protocol:
    """Median per-call time with events; L2 (≥ 2× its size) flushed before every call (see `time_cuda`)."""
    hooks = hooks or TimingHooks()
    flush_bytes = max(2 * l2_bytes, 64 << 20)
    flush = torch.empty(flush_bytes // 4, dtype=torch.int32, device="cuda")
    sync = timers.synchronize
    start, end = timers.event_cls(enable_timing=True), timers.event_cls(enable_timing=True)
    timers.record(start)
    yield from _one(hooks, 0, "first")
    timers.record(end)
    sync()
    first_ms = timers.elapsed_time(start, end)
    # Estimate the per-call time to size warm-up and repetitions (one call when a call is slow anyway).
    probes = 1 if first_ms > SLOW_CALL_MS else 3
    timers.record(start)
    for i in range(probes):
        yield from _one(hooks, i % n_sets, "estimate")
    timers.record(end)
    sync()
    estimate_ms = max(timers.elapsed_time(start, end) / probes, 1e-3)
    for i in range(min(50, max(1, int(25.0 / estimate_ms)))):
        yield from _one(hooks, i % n_sets, "warm-up")
    sync()
    yield from _checkpoint(hooks, "after warm-up")
    # A call of tens of ms varies by well under 1 % between calls: a few repetitions measure it, and the
    # ~10 a fast kernel needs would cost seconds per shape (slow eager references).
    floor = min_reps if estimate_ms <= SLOW_CALL_MS else min(min_reps, SLOW_CALL_REPS)
    reps = min(max_reps, max(floor, int(target_ms / estimate_ms)))
    starts = [timers.event_cls(enable_timing=True) for _ in range(reps)]
    ends = [timers.event_cls(enable_timing=True) for _ in range(reps)]
    sync()
    host_call_ms = []
    wall_start = timers.perf_counter()
    for i in range(reps):
        host_call_ms.append((yield from _one(hooks, i % n_sets, "host-bound", timers, flush, starts[i], ends[i])))
    enqueued = timers.perf_counter()
    sync()
    wall_ms = (timers.perf_counter() - wall_start) * 1e3 / reps
    enqueue_ms = (enqueued - wall_start) * 1e3 / reps
    times = [timers.elapsed_time(s, e) for s, e in zip(starts, ends)]
    first = _stats(times, n_sets, "cuda_events", flush_bytes, wall_ms, _harness_ms(hooks, n_sets, timers, flush))
    first = replace(first, host_bound_median_ms=first.median_ms, host_bound_min_ms=first.min_ms,
                    host_bound_p20_ms=first.p20_ms, host_bound_p80_ms=first.p80_ms, host_bound_reps=first.reps,
                    host_enqueue_ms=enqueue_ms, host_call_ms=statistics.median(host_call_ms))
    first_calls = [(i % n_sets, t) for i, t in enumerate(times)]
    if not saturate:
        del flush
        yield from _checkpoint(hooks, "after timing")
        return TimingRun(replace(first, saturation_note="not requested: the host-bound pass is reported"), first_calls)
    saturated_times, sleep_ms, note, sets = yield from saturated_pass(n_sets, timers, flush, enqueue_ms, reps, hooks)
    del flush
    yield from _checkpoint(hooks, "after timing")
    if saturated_times is None:
        return TimingRun(replace(first, saturation_note=note), first_calls)
    second = _stats(saturated_times, n_sets, "cuda_events", flush_bytes, wall_ms)
    stats = replace(first, median_ms=second.median_ms, min_ms=second.min_ms, p20_ms=second.p20_ms,
                    p80_ms=second.p80_ms, reps=second.reps, saturated=True, sleep_ms=sleep_ms)
    return TimingRun(stats, list(zip(sets, saturated_times)))


def time_cuda(fn: Callable[[dict], Any], input_sets: list[dict], timers: Timers, l2_bytes: int,
              target_ms: float = 200.0, min_reps: int = 10, max_reps: int = 200, saturate: bool = True) -> TimingStats:
    """Median per-call time with events; L2 (≥ 2× its size) flushed before every call.

    The host-bound pass is the escaped-work check's input (its wall time and median, kept as `host_bound_*`);
    with `saturate` the reported figures come from a following GPU-saturated pass (module docstring),
    `saturated` says whether they do. `saturate=False` reports the host-bound pass: an isolated launch as the
    host sees it (the empty-kernel launch floor). Calls `fn` directly; the evaluator drives `cuda_protocol`
    through its own call loop instead.
    """
    run = drive(fn, input_sets, cuda_protocol(len(input_sets), timers, l2_bytes, None, target_ms, min_reps,
                                              max_reps, saturate))
    return run.stats


def cpu_protocol(n_sets: int, timers: Timers, reps: int = DEFAULT_CPU_REPS, hooks: TimingHooks | None = None) -> Protocol:
    """Wall time per call with `perf_counter` (interpreter timings: correctness runs, not performance)."""
    hooks = hooks or TimingHooks()
    yield from _one(hooks, 0, "first")
    yield from _checkpoint(hooks, "after warm-up")
    times, calls = [], []
    for i in range(reps):
        index = i % n_sets
        if hooks.prepare is not None:
            hooks.prepare(index)
        harness = hooks.harness_seconds() if hooks.harness_seconds is not None else 0.0
        t0 = timers.perf_counter()
        request = TimedCall(index, "cpu")
        out = yield request
        elapsed = timers.perf_counter() - t0
        if hooks.harness_seconds is not None:
            elapsed = max(0.0, elapsed - (hooks.harness_seconds() - harness))
        times.append(elapsed * 1e3)
        calls.append((index, times[-1]))
        if hooks.observe is not None:
            hooks.observe(request, out)
        del out
    yield from _checkpoint(hooks, "after timing")
    return TimingRun(_stats(times, n_sets, "perf_counter", 0, None), calls)


def time_cpu(fn: Callable[[dict], Any], input_sets: list[dict], timers: Timers, reps: int = DEFAULT_CPU_REPS) -> TimingStats:
    """Median wall time per call on the CPU (interpreter timings: correctness runs, not performance)."""
    return drive(fn, input_sets, cpu_protocol(len(input_sets), timers, reps)).stats
