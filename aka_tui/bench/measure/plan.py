"""The measurement plan of one shape: checked cases → audit → profiled calls → timing (with interleaved checks)
→ recheck, as one generator driven by `calls.run_calls`, so every call of the shape comes from the same place.

What ties the timed calls to the checked ones:
- every call's output is sampled (secret positions per case) and compared with the reference for its inputs;
- the post-warm-up check on each input set fixes the launches (kernels, grids, arguments) every later call on
  that set must repeat: the audited call, the profiled calls, every timed call and the recheck;
- on CUDA, one profiled call per input set gives the device time of the same kernels: a timed median far below
  it means the timed calls did less work (`tampered`);
- the interleaved checks run on the very tensors the timed calls use, unpoisoned, through the same loop.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Generator

import torch

from aka_tui.bench.measure import poison
from aka_tui.bench.measure.audit import AtenAuditMode, TritonLaunchRecorder, build_report, launch_difference
from aka_tui.bench.measure.calls import Call, MeasureFailure
from aka_tui.bench.measure.cases import Case, ShapeCases
from aka_tui.bench.measure.integrity import ThreadStartCounter, new_threads, thread_census
from aka_tui.bench.measure.results import AuditReport, TimingStats
from aka_tui.bench.measure.samples import SampleMismatch, encode, failing_calls
from aka_tui.bench.measure.timing import (
    TimedCall,
    Timers,
    TimingHooks,
    TimingRun,
    cpu_protocol,
    cuda_protocol,
    escaped_work,
)
from aka_tui.bench.problem.inputs import clone_inputs
from aka_tui.bench.problem.model import Problem
from aka_tui.bench.problem.tolerance import compare_outputs, naive_allclose

TIMED_PHASES = ("host-bound", "saturated", "cpu")
DEVICE_TIME_RATIO = 0.5  # a timed median below this fraction of the profiled device time is less work
DEVICE_TIME_SLACK_MS = 0.005


@dataclass(frozen=True)
class PlanOptions:
    """Which parts of the plan run (set from the job and the candidate's kind)."""

    device: str
    hardened: bool = True  # poisoned allocations, full comparison, read-only inputs (False: naive allclose)
    verify_timed: bool = True  # sampled outputs and launches of every timed call, interleaved checks, device time
    timing: bool = True
    audit: bool = True  # dispatch audit and, on CUDA, profiled calls (candidate files)
    watch_threads: bool = True
    recheck: bool = True
    evidence: bool = True  # sample the checked cases' outputs for the parent
    n_sets: int = 3
    cpu_reps: int = 3
    l2_bytes: int = 0
    own_share_threshold: float = 0.9
    fuzz: bool = False  # correctness only

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")


@dataclass
class Measurement:
    """What a plan measured (the worker turns it into a ShapeResult, plus the evidence it sends the parent)."""

    max_abs: float = 0.0
    max_rel: float = 0.0
    audit: AuditReport | None = None
    timing: TimingStats | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    verification: dict[str, Any] = field(default_factory=dict)
    launches: list[tuple[Any, ...]] = field(default_factory=list)  # the post-warm-up launches on set 0


@dataclass
class _Observed:
    phase: str
    set_index: int
    samples: list[torch.Tensor]
    launches: list[tuple[Any, ...]] | None


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


class ShapePlan:
    """One shape's measurement of one candidate; `run()` is the plan generator."""

    def __init__(self, problem: Problem, cases: ShapeCases, options: PlanOptions, timers: Timers,
                 recorder: TritonLaunchRecorder, thread_starts: ThreadStartCounter | None = None,
                 module_name: str = "", integrity: Callable[[str], None] | None = None,
                 replay_hint: Callable[[int], str] = lambda seed: "") -> None:
        self.problem, self.cases, self.opts, self.timers = problem, cases, options, timers
        self.recorder, self.thread_starts, self.module_name = recorder, thread_starts, module_name
        self.integrity = integrity or (lambda stage: None)
        self.replay_hint = replay_hint
        self.result = Measurement()
        self.seeds_run: list[int] = []  # the correctness seeds started, in order (a failure's is the last)
        self.reference_launches: dict[int, list[tuple[Any, ...]]] = {}
        self.later_launches: list[tuple[int, list[tuple[Any, ...]], str]] = []
        self.device_ms: dict[int, float] = {}

    # -- the plan -----------------------------------------------------------------------------------------

    def run(self) -> Generator[Call, Any, Measurement]:
        seconds: dict[str, float] = {}  # wall seconds per stage, calls included: where an evaluation's time goes
        began = time.perf_counter()

        def lap(stage: str) -> None:
            nonlocal began
            now = time.perf_counter()
            seconds[stage] = round(seconds.get(stage, 0.0) + now - began, 4)
            began = now

        for index in range(len(self.cases)):
            yield from self.check_case(index, "correctness")
        self.integrity("correctness")
        lap("correctness")
        if self.opts.fuzz:
            return self.result
        if self.opts.audit:
            self.result.audit = yield from self.audit_call()
            lap("audit")
            if self.opts.cuda:
                self.result.audit = yield from self.profiled_calls(self.result.audit)
                lap("profiled")
        if self.opts.timing:
            self.result.timing = yield from self.timed_calls()
            self.integrity("timing")
            lap("timing")
            if self.opts.recheck and self.opts.hardened:
                # A candidate must stay correct after warm-up, caching and autotuning.
                yield from self.check_case(0, "recheck after timing", compare_launches=True)
                lap("recheck")
        self.compare_launches()
        lap("launches")
        self.result.verification["seconds"] = seconds
        return self.result

    # -- single calls -------------------------------------------------------------------------------------

    def _call(self, inputs: dict[str, Any], stage: str) -> Generator[Call, Any, Any]:
        """One synchronised call; threads it starts or leaves running are tampering."""
        watch = self.opts.watch_threads and self.thread_starts is not None
        before = thread_census() if watch else set()
        mark = self.thread_starts.mark() if watch and self.thread_starts else 0
        out = yield Call(inputs, stage)
        _sync(self.opts.device)
        if watch and self.thread_starts is not None:
            names = sorted(set(new_threads(before) + self.thread_starts.since(mark)))
            if names:
                raise MeasureFailure("tampered", stage, "forward ran work in other thread(s): " + ", ".join(names))
        return out

    def check_only(self, index: int = 0) -> Generator[Call, Any, list[tuple[Any, ...]]]:
        """One checked case alone (a tuning sweep's check before it decides whether to time): its launches."""
        return (yield from self.check_case(index, "correctness"))

    def timing_only(self) -> Generator[Call, Any, TimingStats]:
        """The timed calls with their verification, without the audit (a tuning sweep's timing)."""
        stats = yield from self.timed_calls()
        self.compare_launches()
        return stats

    def check_case(self, index: int, stage: str,
                   compare_launches: bool = False) -> Generator[Call, Any, list[tuple[Any, ...]]]:
        """A fresh copy of case `index`, poisoned allocations, the full comparison and read-only inputs."""
        case = self.cases.case(index)
        if stage == "correctness":
            self.seeds_run.append(case.seed)
        inputs = clone_inputs(case.inputs)
        self.recorder.begin_call()
        if self.opts.hardened:
            with poison.poisoned_allocations(self.opts.device):
                out = yield from self._call(inputs, stage)
        else:
            out = yield from self._call(inputs, stage)
        launches = self.recorder.end_call()
        self._compare(case, out, stage)
        if self.opts.hardened:
            for name, value in case.inputs.items():
                if name in self.problem.mutates_inputs or not isinstance(value, torch.Tensor):
                    continue
                if not torch.equal(inputs[name], value):
                    raise MeasureFailure("wrong_output", stage, f"seed {case.seed}: input `{name}` was modified, "
                                         "but the reference treats it as read-only")
        if stage == "correctness" and self.opts.evidence and self.opts.hardened:
            self.result.evidence.append({"case": index, "seed": case.seed,
                                         "leaves": [encode(v) for v in case.parent.take(out)]})
        if compare_launches:
            self.later_launches.append((index, launches, stage))
        return launches

    def _compare(self, case: Case, out: Any, stage: str) -> None:
        if not self.opts.hardened:
            naive = naive_allclose(out, case.ref_native)
            if not naive.ok:
                raise MeasureFailure("wrong_output", stage, f"seed {case.seed} (naive allclose): {naive.reason}")
            self.result.max_abs = max(self.result.max_abs, naive.max_abs_error or 0.0)
            return
        comparison = compare_outputs(out, case.ref_native, case.ref_exact, self.problem.tolerance_for,
                                     self.problem.max_mismatch_fraction)
        if not comparison.ok:
            raise MeasureFailure("wrong_output", stage,
                                 f"seed {case.seed}: {comparison.reason}; {self.replay_hint(case.seed)}")
        self.result.max_abs = max(self.result.max_abs, comparison.max_abs_error or 0.0)
        self.result.max_rel = max(self.result.max_rel, comparison.max_rel_error or 0.0)

    def _sampled(self, case: Case, out: Any, stage: str) -> list[torch.Tensor]:
        try:
            return case.timed.take(out)
        except SampleMismatch as exc:
            raise MeasureFailure("wrong_output", stage, f"{exc} (seed {case.seed})") from None

    def audit_call(self) -> Generator[Call, Any, AuditReport]:
        """Case 0 again under the aten dispatch audit and the Triton launch record (design brief §5)."""
        case = self.cases.case(0)
        audit = AtenAuditMode()
        self.recorder.begin_call()
        with self.recorder.recording(audit):
            with audit:
                out = yield from self._call(clone_inputs(case.inputs), "audit")
        self.later_launches.append((0, self.recorder.end_call(), "the audited call"))
        self._compare(case, out, "audit")
        return build_report(audit, self.recorder.launches, self.module_name)

    def profiled_calls(self, report: AuditReport) -> Generator[Call, Any, AuditReport]:
        """One profiled call per input set: device-time attribution, and each set's device time."""
        from aka_tui.bench.measure.profiled import profiled_calls

        return (yield from profiled_calls(self, report))

    # -- timing -------------------------------------------------------------------------------------------

    def timed_calls(self) -> Generator[Call, Any, TimingStats]:
        n_sets = self.cases.timing_sets(self.opts.n_sets)
        sets = [self.cases.case(i).inputs for i in range(n_sets)]
        verify = self.opts.verify_timed and self.opts.hardened
        pristine = {i: {k: sets[i][k].clone() for k in self.problem.mutates_inputs if isinstance(sets[i].get(k),
                        torch.Tensor)} for i in range(n_sets)}
        read_only = [input_checksums(s, self.problem.mutates_inputs) for s in sets]
        observed: list[_Observed] = []
        hooks = self._hooks(sets, pristine, observed) if verify else \
            TimingHooks(prepare=lambda i: _restore(sets[i], pristine[i]))
        watch = self.opts.watch_threads and self.thread_starts is not None
        before, mark = (thread_census(), self.thread_starts.mark()) if watch and self.thread_starts else (set(), 0)
        if self.opts.cuda:
            protocol = cuda_protocol(n_sets, self.timers, self.opts.l2_bytes, hooks)
            with self.recorder.guarding_stream(torch.cuda.current_stream().cuda_stream):
                run = yield from drive_protocol(protocol, sets)
            off_stream = dict(self.recorder.off_stream)
        else:
            run = yield from drive_protocol(cpu_protocol(n_sets, self.timers, self.opts.cpu_reps, hooks), sets)
            off_stream = {}
        _sync(self.opts.device)
        if watch and self.thread_starts is not None:
            self._threads_after_timing(before, mark, off_stream, run.stats)
        for i, s in enumerate(sets):
            if input_checksums(s, self.problem.mutates_inputs) != read_only[i]:
                raise MeasureFailure("wrong_output", "timing", f"seed {self.cases.seeds[i]}: a read-only input "
                                     "was modified during timing")
        self.recorder.end_call()  # nothing is captured past the protocol
        for i, s in enumerate(sets):  # the cases stay pristine for what follows (the recheck copies case 0)
            _restore(s, pristine[i])
        if verify:
            began = time.perf_counter()
            self._verify_timed(observed, run)
            self.result.verification["verify_timed_s"] = round(time.perf_counter() - began, 4)
        return run.stats

    def _hooks(self, sets: list[dict[str, Any]], pristine: dict[int, dict[str, torch.Tensor]],
               observed: list[_Observed]) -> TimingHooks:
        def prepare(i: int) -> None:
            _restore(sets[i], pristine[i])
            self.recorder.begin_call()

        def observe(call: TimedCall, out: Any) -> None:
            launches = self.recorder.end_call()
            samples = self._sampled(self.cases.case(call.set_index), out, f"timing ({call.phase} call)")
            observed.append(_Observed(call.phase, call.set_index, samples,
                                      launches if call.phase in TIMED_PHASES else None))

        def checkpoint(name: str) -> Generator[Call, Any, None]:
            """After warm-up, a full check of every set on the timed tensors themselves, which fixes the launches
            every later call on that set must repeat (after timing, the recheck and the samples suffice)."""
            if name != "after warm-up":
                return
            for i in range(len(sets)):
                prepare(i)
                out = yield Call(sets[i], "timing")
                _sync(self.opts.device)
                self.reference_launches[i] = self.recorder.end_call()
                self._compare(self.cases.case(i), out, f"check {name} (on the timed inputs)")
            self.result.launches = self.reference_launches.get(0, [])

        return TimingHooks(prepare, observe, checkpoint)

    def _threads_after_timing(self, before: set[int], mark: int, off_stream: dict[str, int],
                              stats: TimingStats) -> None:
        if off_stream:
            raise MeasureFailure("tampered", "timing", "kernel launches on a stream other than the timed one during "
                                 "timing: " + ", ".join(f"{k}×{v}" for k, v in sorted(off_stream.items())))
        assert self.thread_starts is not None
        left = sorted(set(new_threads(before) + self.thread_starts.since(mark)))
        if left:
            raise MeasureFailure("tampered", "timing", "background thread(s) running after timing: " + ", ".join(left))
        if escaped_work(stats):
            event_ms = stats.host_bound_median_ms if stats.host_bound_median_ms is not None else stats.median_ms
            raise MeasureFailure("tampered", "timing",
                                 f"device work escaped the timed stream: {stats.wall_ms_per_call:.3f} ms synchronised "
                                 f"wall time per call vs {event_ms:.3f} ms by events (+{stats.flush_ms:.3f} ms flush "
                                 "and restores, host-bound pass)")

    def _verify_timed(self, observed: list[_Observed], run: TimingRun) -> None:
        """Outputs of every call of the protocol, launches of the timed ones, device time per set."""
        for i in sorted({o.set_index for o in observed}):
            mine = [o for o in observed if o.set_index == i]
            case = self.cases.case(i)
            bad = failing_calls([o.samples for o in mine], case.timed_expected, self.problem.tolerance_for,
                                self.problem.max_mismatch_fraction)
            if bad:
                k, why = bad[0]
                raise MeasureFailure("wrong_output", "timing",
                                     f"{len(bad)} of {len(mine)} calls on seed {case.seed} returned wrong outputs; "
                                     f"first: call {k} ({mine[k].phase} pass): {why}")
            for o in mine:
                if o.launches is not None:
                    self.later_launches.append((i, o.launches, f"a timed call ({o.phase} pass)"))
        self.result.verification.update(timed_calls=sum(o.launches is not None for o in observed),
                                        sampled_calls=len(observed))
        self._device_time(run)

    def _device_time(self, run: TimingRun) -> None:
        if not self.device_ms:
            return
        ratios = {}
        for i, profiled in self.device_ms.items():
            times = [ms for index, ms in run.per_call if index == i]
            if not times or profiled <= 0:
                continue
            median = statistics.median(times)
            ratios[i] = median / profiled
            if median < DEVICE_TIME_RATIO * profiled and profiled - median > DEVICE_TIME_SLACK_MS:
                raise MeasureFailure("tampered", "timing",
                                     f"timed calls on seed {self.cases.seeds[i]} took {median:.4f} ms (median), but "
                                     f"the same call's kernels ran {profiled:.4f} ms under the profiler: the timed "
                                     "calls did less work than the checked ones")
        if ratios:
            self.result.verification["timed_over_profiled"] = round(min(ratios.values()), 3)

    def compare_launches(self) -> None:
        """Every call after the checks must launch what the post-warm-up check on its inputs launched."""
        if not self.reference_launches:
            return
        for index, launches, what in self.later_launches:
            expected = self.reference_launches.get(index)
            if expected is not None and launches != expected:
                raise MeasureFailure("tampered", "timing",
                                     f"{what} on seed {self.cases.seeds[index]} launched other work than the checked "
                                     f"call on the same inputs: {launch_difference(expected, launches)}")
        self.result.verification["launches_compared"] = len(self.later_launches)


def drive_protocol(protocol: Generator[Any, Any, TimingRun], sets: list[dict[str, Any]]) -> Generator[Call, Any, TimingRun]:
    """Make the calls a timing protocol asks for (its interleaved checks pass through as they are)."""
    out: Any = None
    while True:
        try:
            request = protocol.send(out)
        except StopIteration as stop:
            return stop.value
        call = request if isinstance(request, Call) else Call(sets[request.set_index], "timing")
        out = None
        out = yield call


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
