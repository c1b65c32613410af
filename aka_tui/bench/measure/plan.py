"""The measurement plan of one shape: checked cases → audit → profiled calls → timing (with interleaved checks)
→ recheck, as one generator driven by `calls.run_calls`, so every call of the shape comes from the same place.

What ties the timed calls to the checked ones:
- every call's output is sampled (secret positions per case) and compared with the reference for its inputs;
- the post-warm-up check on each input set fixes the launches (kernels, grids, arguments) every later call on
  that set must repeat: the audited call, the profiled calls, every timed call and the recheck;
- on CUDA, one profiled call per input set gives the device time of the same kernels: a timed median far below
  it means the timed calls did less work (`tampered`);
- the interleaved checks run on the very tensors the timed calls use, unpoisoned, through the same loop.

The timed calls and their checks are in `timed_checks.py`, the profiled calls in `profiled.py`; both work on the
plan's state (its cases, recorder, reference launches and result).
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Generator, Iterator

import torch

from aka_tui.bench.measure import poison, timed_checks
from aka_tui.bench.measure.attribution import DEFAULT_OWN_SHARE_THRESHOLD
from aka_tui.bench.measure.audit import TritonLaunchRecorder, audit_mode, build_report, launch_difference
from aka_tui.bench.measure.calls import Call, MeasureFailure, called
from aka_tui.bench.measure.cases import Case, ShapeCases
from aka_tui.bench.measure.integrity import ThreadStartCounter, new_threads, thread_census
from aka_tui.bench.measure.job import DEFAULT_CPU_REPS, DEFAULT_INPUT_SETS
from aka_tui.bench.measure.results import AuditReport, TimingStats
from aka_tui.bench.measure.samples import SampleMismatch, encode, failing_calls
from aka_tui.bench.measure.timed_checks import drive_protocol, input_checksums
from aka_tui.bench.measure.timing import Timers
from aka_tui.bench.problem.inputs import clone_inputs, same_bits
from aka_tui.bench.problem.model import Problem
from aka_tui.bench.problem.tolerance import compare_outputs, flatten_outputs, naive_allclose

__all__ = ["Measurement", "PlanOptions", "ShapePlan", "drive_protocol", "input_checksums"]


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
    n_sets: int = DEFAULT_INPUT_SETS
    cpu_reps: int = DEFAULT_CPU_REPS
    l2_bytes: int = 0
    own_share_threshold: float = DEFAULT_OWN_SHARE_THRESHOLD
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
        self.unaudited: Counter[str] = Counter()  # on the CPU: what the calls outside the audited one computed
        self._own_audit = False  # the audited call is under its own audit mode

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
            self.result.verification["seconds"] = seconds
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
        if self.result.audit is not None and self.unaudited:
            self.result.audit = self._charge_unaudited(self.result.audit)
        self.compare_launches()
        lap("launches")
        self.result.verification["seconds"] = seconds
        return self.result

    # -- single calls -------------------------------------------------------------------------------------

    def sync(self) -> None:
        """Wait for the work queued on the device (CUDA; on the CPU every call has finished when it returns)."""
        if self.opts.cuda:
            torch.cuda.synchronize()

    @contextmanager
    def watch_call(self, call: Call) -> Iterator[None]:
        """Around each call of the candidate (`run_calls`): on the CPU, where the audit is the only attribution,
        every call runs under an audit mode, not the audited call alone. A forward can tell a dispatch mode is
        active, and one that computed with its kernel only then, and with PyTorch otherwise while launching the
        same kernel with the same arguments (a flag in memory made it return at once), had every other call
        computed by PyTorch and scored real (`audit_aware_same_launches`). On CUDA the profiled calls and the
        timed calls' device time hold the calls the audit does not see."""
        if not self.opts.audit or self.opts.cuda or self.opts.fuzz or self._own_audit:
            yield
            return
        audit, previous = audit_mode(), self.recorder.audit
        self.recorder.audit = audit  # memory handed to NumPy is charged too (`memory_exports`)
        try:
            with audit:
                yield
        finally:
            self.recorder.audit = previous
            for name, n in audit.compute.items():
                self.unaudited[f"{call.stage}: {name if '::' in name else 'aten.' + name}"] += n

    def _charge_unaudited(self, report: AuditReport) -> AuditReport:
        ops = ", ".join(f"{k}×{v}" for k, v in sorted(self.unaudited.items()))
        reason = "; ".join(r for r in (report.reason, "PyTorch computed in calls other than the audited one: " + ops) if r)
        compute = dict(report.compute_ops) | {f"unaudited::{k}": v for k, v in self.unaudited.items()}
        return replace(report, real=False, compute_ops=compute, reason=reason)

    def _call(self, inputs: dict[str, Any], stage: str) -> Generator[Call, Any, Any]:
        """One synchronised call; threads it starts or leaves running are tampering."""
        watch = self.opts.watch_threads and self.thread_starts is not None
        before = thread_census() if watch else set()
        mark = self.thread_starts.mark() if watch and self.thread_starts else 0
        out = yield from called(Call(inputs, stage))
        self.sync()
        if watch and self.thread_starts is not None:
            names = sorted(set(new_threads(before) + self.thread_starts.since(mark)))
            if names:
                raise MeasureFailure("tampered", stage, "forward ran work in other thread(s) or process(es): " + ", ".join(names))
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
            self._check_inputs_after(case, inputs, stage)
        if stage == "correctness" and self.opts.evidence and self.opts.hardened:
            self.result.evidence.append({"case": index, "seed": case.seed,
                                         "leaves": [encode(v) for v in case.parent.take(out)]})
        if compare_launches:
            self.later_launches.append((index, launches, stage))
        return launches

    def _check_inputs_after(self, case: Case, inputs: dict[str, Any], stage: str) -> None:
        """Inputs the reference only reads are bit-identical after the call; those it writes into hold what it
        wrote (within the output tolerance)."""
        may_write = self.cases.may_write(case.index)
        for name, value in case.inputs.items():
            if not isinstance(value, torch.Tensor):
                continue
            if name in case.ref_written:
                written = case.ref_written[name]
                comparison = compare_outputs({name: inputs[name]}, {name: written}, {name: written},
                                             self.problem.tolerance_for, self.problem.max_mismatch_fraction)
                if not comparison.ok:
                    raise MeasureFailure("wrong_output", stage, f"seed {case.seed}: input `{name}` does not hold "
                                         f"what the reference writes into it: {comparison.reason}")
            elif name not in may_write and not same_bits(inputs[name], value):
                raise MeasureFailure("wrong_output", stage, f"seed {case.seed}: input `{name}` was modified, "
                                     "but the reference treats it as read-only")

    def _compare(self, case: Case, out: Any, stage: str) -> None:
        if not self.opts.hardened:
            naive = naive_allclose(out, case.ref_native)
            if not naive.ok:
                raise MeasureFailure("wrong_output", stage, f"seed {case.seed} (naive allclose): {naive.reason}")
            self.result.max_abs = max(self.result.max_abs, naive.max_abs_error or 0.0)
            return
        comparison = compare_outputs(out, case.ref_native, case.ref_exact, self.problem.tolerance_for,
                                     self.problem.max_mismatch_fraction,
                                     lambda name: self.cases.answers(case.index).get(name))
        if not comparison.ok:
            raise MeasureFailure("wrong_output", stage,
                                 f"seed {case.seed}: {comparison.reason}; {self.replay_hint(case.seed)}")
        self.result.max_abs = max(self.result.max_abs, comparison.max_abs_error or 0.0)
        self.result.max_rel = max(self.result.max_rel, comparison.max_rel_error or 0.0)
        if case.answers:  # the seeds whose integers passed on rows only the reference's noisy runs gave
            tie_breaks = self.result.verification.setdefault("integer_tie_breaks", [])
            if case.seed not in tie_breaks:
                tie_breaks.append(case.seed)

    def _sampled(self, case: Case, out: Any, stage: str) -> list[torch.Tensor]:
        try:
            return case.timed.take(out)
        except SampleMismatch as exc:
            raise MeasureFailure("wrong_output", stage, f"{exc} (seed {case.seed})") from None

    def failing_samples(self, index: int, calls: list[list[torch.Tensor]]) -> list[tuple[int, str]]:
        """The calls on case `index` whose sampled outputs are wrong (`samples.failing_calls`), the timed and the
        profiled calls alike: the same tolerances, per-row atol and integer tie-breaks as the full comparison."""
        case = self.cases.case(index)
        return failing_calls(calls, case.timed_expected, self.problem.tolerance_for,
                             self.problem.max_mismatch_fraction, case.timed.row_rms(),
                             lambda leaf: self._answers_at_samples(index, leaf))

    def _answers_at_samples(self, index: int, leaf: int) -> torch.Tensor | None:
        """The reference's integer answers under input noise on case `index` (`ShapeCases.answers`), at the timed
        sample positions of output leaf `leaf`: [draws, K], or None."""
        sampled = self.cases.case(index).timed.leaves[leaf]
        answers = self.cases.answers(index).get(sampled.name)
        return None if answers is None else answers.index_select(1, sampled.index.to(answers.device))

    def audit_call(self) -> Generator[Call, Any, AuditReport]:
        """A case of its own under the aten dispatch audit and the Triton launch record (design brief §5): inputs
        no checked call has seen, so what the forward computes on new inputs is what is audited (a forward that
        computed with PyTorch on the checked cases and answered repeats from memory through a copy kernel was
        "real" when the audit re-ran case 0); then the same inputs once more, unaudited and checked, which must
        launch what the audited call launched (a forward that launches its kernel only while watched)."""
        index = self.cases.audit_index
        case = self.cases.case(index)
        audit = audit_mode()
        self.recorder.begin_call()
        self._own_audit = True
        try:
            with self.recorder.recording(audit), audit:
                out = yield from self._call(clone_inputs(case.inputs), "audit")
        finally:
            self._own_audit = False
        launches = self.recorder.end_call()
        self._compare(case, out, "audit")
        if index == 0:
            self.later_launches.append((0, launches, "the audited call"))
        else:  # the same inputs again without the audit: what runs must not depend on being watched
            plain = yield from self.check_case(index, "the audited case, unaudited")
            if plain != launches:
                raise MeasureFailure("tampered", "audit", f"the audited call on seed {case.seed} launched other work "
                                     "than an unaudited call on the same inputs: "
                                     + launch_difference(launches, plain))
        output_size = sum(v.numel() for _, v in flatten_outputs(out) if isinstance(v, torch.Tensor))
        return build_report(audit, self.recorder.launches, self.module_name, output_size)

    def profiled_calls(self, report: AuditReport) -> Generator[Call, Any, AuditReport]:
        """One profiled call per input set: device-time attribution, and each set's device time."""
        from aka_tui.bench.measure.profiled import profiled_calls

        return (yield from profiled_calls(self, report))

    # -- timing -------------------------------------------------------------------------------------------

    def timed_calls(self) -> Generator[Call, Any, TimingStats]:
        """The timing protocol with its verification (`timed_checks.py`)."""
        return (yield from timed_checks.timed_calls(self))

    def compare_launches(self) -> None:
        """Every call after the checks must launch what the post-warm-up check on its inputs launched."""
        timed_checks.compare_launches(self)
