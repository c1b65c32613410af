"""One shape's seeded cases: inputs, reference outputs (native and float64) and where outputs are sampled.

The correctness cases are also the timing input sets (the first `input_sets` of them), so every timed call has a
reference to be checked against without computing any more references than the checks need.
"""

from __future__ import annotations

import copy
import gc
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from aka_tui.bench.measure.calls import MeasureFailure, trace_of
from aka_tui.bench.measure.samples import Sampler, parent_sampler, timed_sampler
from aka_tui.bench.problem import unsettled
from aka_tui.bench.problem.inputs import (
    clone_inputs,
    make_inputs,
    modified_inputs,
    same_bits,
    seed_everything,
    upcast_inputs,
)
from aka_tui.bench.problem.model import Problem, Shape
from aka_tui.bench.problem.seeds import derive_seed
from aka_tui.errors import AkaError


def problem_call(fn: Callable[[], Any], stage: str) -> Any:
    """Run the problem's own code (inputs, reference); its failure is a `problem_error`, not the candidate's."""
    try:
        return fn()
    except AkaError as exc:
        raise MeasureFailure("problem_error", stage, str(exc)) from None
    except Exception as exc:
        raise MeasureFailure("problem_error", stage, f"{type(exc).__name__} in the problem's {stage}: {exc}",
                             trace_of(exc)) from None


def case_seeds(problem: Problem, shape: Shape, cases: int, replay: list[int] | None = None, salt: str = "") -> list[int]:
    """The correctness seeds of a shape: derived from (problem, shape, case, the evaluation's salt), or the replayed
    ones. The salt is drawn per evaluation (`evaluate.build_job`), so no evaluation's inputs can be known from an
    earlier one; the seeds are recorded in the result, so every failure still replays."""
    if replay:
        return [int(s) for s in replay]
    return [derive_seed(problem.name, shape.shape_id, case, salt) for case in range(cases)]


def audit_seed(problem: Problem, shape: Shape, salt: str = "") -> int:
    """The seed of the audited call's case, apart from every correctness seed (`ShapeCases.audit_index`)."""
    return derive_seed(problem.name, shape.shape_id, 0, f"audit{salt}")


def reference_model(problem: Problem, shape: Shape, ref_module: Any, device: str) -> torch.nn.Module:
    """The reference `Model`, initialised under a seed of its own so every process builds the same weights."""
    def build() -> torch.nn.Module:
        seed_everything(derive_seed(problem.name, shape.shape_id, 0, "init"))
        return ref_module.Model(**shape.init_kwargs).to(device).eval()
    return problem_call(build, "reference init")


@dataclass
class Case:
    """One seeded case: pristine inputs, the reference outputs, and the two samplers of its outputs."""

    index: int
    seed: int
    inputs: dict[str, Any]
    ref_native: Any
    ref_exact: Any
    timed: Sampler
    parent: Sampler
    timed_expected: list[torch.Tensor] = field(default_factory=list)  # ref_exact at the timed positions
    # inputs the reference wrote into, with what it left there: the candidate may (must) write them likewise
    ref_written: dict[str, torch.Tensor] = field(default_factory=dict)
    answers: dict[str, torch.Tensor] | None = None  # integer leaves under input noise (`ShapeCases.answers`)


FLOAT64_MEMORY_SHARE = 0.25  # of the device's free memory the float64 copies of the inputs may take
FLOAT64_CPU_LIMIT_BYTES = 4 << 30


class ShapeCases:
    """Builds and keeps the cases of one shape (lazily, in order)."""

    def __init__(self, problem: Problem, shape: Shape, device: str, ref_module: Any, input_module: Any,
                 seeds: list[int], use_fp64: bool, sample_seed: int, secret: int, naive: bool = False,
                 audit_seed: int | None = None) -> None:
        self.problem, self.shape, self.device = problem, shape, device
        self.input_module, self.seeds = input_module, seeds
        self.audit_seed = audit_seed
        self.sample_seed, self.secret, self.naive = sample_seed, secret, naive
        self.ref_model = reference_model(problem, shape, ref_module, device)
        self.exact_model = None
        if use_fp64:
            self.exact_model = problem_call(lambda: copy.deepcopy(self.ref_model).double().eval(), "reference init")
        self.precision = "float64" if use_fp64 else "native"
        self.in_place_outputs: tuple[str, ...] | None = None  # set when the reference returns None
        self._cases: dict[int, Case] = {}

    def __len__(self) -> int:
        return len(self.seeds)

    @property
    def audit_index(self) -> int:
        """The index of the audited call's case: inputs no other call of the shape has seen (`audit_seed`), so a
        forward that remembers results by input values cannot answer it from memory; case 0 without one."""
        return len(self.seeds) if self.audit_seed is not None else 0

    def may_write(self, index: int) -> frozenset[str]:
        """Inputs a candidate may write into in case `index`: declared (`mutates_inputs`), or written by the
        reference on that case's inputs."""
        return frozenset(self.problem.mutates_inputs) | frozenset(self.case(index).ref_written)

    def case(self, index: int) -> Case:
        if index not in self._cases:
            out_of_memory = None
            try:
                self._cases[index] = self._build(index)
            except MeasureFailure as failure:
                if "OutOfMemoryError" not in failure.error.message:
                    raise
                out_of_memory = failure.error
            # outside the handler: the failed run's frames, and the tensors they held, are released by now
            if out_of_memory is not None:
                if not self._make_room():
                    raise MeasureFailure(out_of_memory.kind, out_of_memory.stage, out_of_memory.message,
                                         out_of_memory.traceback_text)
                self._cases[index] = self._build(index)  # once more, with the room made
        return self._cases[index]

    def answers(self, index: int) -> dict[str, torch.Tensor]:
        """The reference's integer outputs on case `index` in up to `unsettled.DRAWS` runs on its inputs under
        rounding-level noise ([draws, numel] per leaf), computed the first time a candidate's integer output
        differs on that case; none for a reference that works in place, or one whose perturbed run fails."""
        case = self.case(index)
        if case.answers is None:
            model = self.exact_model or self.ref_model
            given = upcast_inputs(case.inputs) if self.exact_model is not None else case.inputs
            seed = derive_seed(self.problem.name, self.shape.shape_id, index, f"unsettled{case.seed}")
            try:
                with torch.no_grad():
                    case.answers = {} if self.in_place_outputs is not None else \
                        unsettled.alternatives(lambda inputs: model(**inputs), given, seed)
            except Exception:  # the reference's limitation: integer outputs stay exact
                case.answers = {}
        return case.answers

    def _make_room(self) -> bool:
        """Room for building a case on a device that is short of memory: the kept cases but the first are
        dropped (a shape whose every case takes gigabytes; a dropped case is rebuilt from its seed when a later
        stage needs it again — the same inputs, the same reference outputs), and on a GPU the allocator's cached
        blocks go back to the device (a reference that asked for 28 GiB with 12 GiB free had 49 GiB reserved but
        unallocated in fragments, H200, 2026-12-02). True when a second try can find more room."""
        dropped = [i for i in self._cases if i != 0]
        for i in dropped:
            del self._cases[i]
        on_gpu = self.device.startswith("cuda")
        gc.collect()  # tensors the failed run left in reference cycles
        if on_gpu:
            torch.cuda.empty_cache()
        return bool(dropped) or on_gpu

    def _build(self, index: int) -> Case:
        seed = self.seeds[index] if index < len(self.seeds) else self.audit_seed
        assert seed is not None, f"no seed for case {index}"
        inputs = problem_call(lambda: make_inputs(self.problem, self.input_module, self.shape, self.device, seed),
                              "inputs")
        parked = _parked(inputs, self.device)
        given = inputs if parked is not None else clone_inputs(inputs)
        with torch.no_grad():
            native = problem_call(lambda: self.ref_model(**given), "reference")
            written = modified_inputs(inputs, given) if parked is None else _written_since(parked, given)
            if parked is not None:  # the pristine inputs back on the device, where the reference wrote
                inputs = {k: parked[k].to(self.device) if k in written else v for k, v in given.items()}
            if native is None:
                native = self._written_as_outputs(written, inputs, given)
            exact = native
            if self.exact_model is not None and self.in_place_outputs is None:
                exact = self._float64_run(inputs, native)
        case = Case(index, seed, inputs, native, exact, timed_sampler(native, self.secret, index),
                    parent_sampler(native, self.sample_seed, self.shape.shape_id, index, with_rows=False),
                    ref_written={name: given[name] for name in written})
        if not self.naive:
            case.timed_expected = _take_exact(case.timed, exact)
        return case

    def _written_as_outputs(self, written: frozenset[str], inputs: dict[str, Any],
                            given: dict[str, Any]) -> dict[str, torch.Tensor]:
        """A reference that returns None works in place (a serving loop's cache write): what it wrote into its
        inputs is its output, compared as such (`in_place_outputs` names them; the candidate's forward is read
        the same way, `session.build_candidate`). Compared with the native run: its float64 twin would write
        into float64 copies nobody reads back."""
        if self.in_place_outputs is None:  # the first case names them (a later one may write less: all slots -1)
            if not written:
                raise MeasureFailure("problem_error", "reference", "the reference's forward returns None and writes "
                                     "into none of its inputs: it has no result to compare")
            self.in_place_outputs = tuple(name for name in inputs if name in written)
            self.exact_model, self.precision = None, "native (the reference works in place and returns None)"
        return {name: given[name] for name in self.in_place_outputs}

    def _float64_run(self, inputs: dict[str, Any], native: Any) -> Any:
        """The float64 reference's outputs; when it cannot run (a reference that allocates fp32 buffers and
        mixes them in) or would not fit (its float64 inputs over a share of free memory), the native run is the
        yardstick from here on, and `precision` says why."""
        needed = sum(t.numel() * 8 for t in inputs.values() if isinstance(t, torch.Tensor) and t.is_floating_point())
        limit = (torch.cuda.mem_get_info()[0] * FLOAT64_MEMORY_SHARE if self.device.startswith("cuda")
                 else FLOAT64_CPU_LIMIT_BYTES)
        why = ""
        if needed > limit:
            why = f"its float64 inputs would take {needed / 2**30:.1f} GiB, over {limit / 2**30:.1f} GiB"
        else:
            try:
                return self.exact_model(**upcast_inputs(clone_inputs(inputs)))  # type: ignore[misc]
            except Exception as exc:  # the problem's limitation, not a verdict: the native run is exact enough
                why = f"the float64 run failed: {type(exc).__name__}: {str(exc)[:160]}"
        self.exact_model, self.precision = None, f"native ({why})"
        return native

    def timing_sets(self, wanted: int, memory_fraction: float = 0.25) -> int:
        """How many cases to time on: `wanted`, fewer when their inputs would crowd the GPU's memory."""
        count = max(1, min(wanted, len(self.seeds)))
        if not self.device.startswith("cuda"):
            return count
        size = sum(t.numel() * t.element_size() for t in self.case(0).inputs.values() if isinstance(t, torch.Tensor))
        free, _ = torch.cuda.mem_get_info()
        while count > 1 and size * count > free * memory_fraction:
            count -= 1
        return count


PARK_SHARE = 0.05  # inputs over this share of the GPU's available memory wait on the host while the reference runs
PARK_CPU_BYTES = 1 << 62  # never on the CPU (a test lowers it)


def available_gpu_bytes() -> int:
    """The device's free memory plus what this process's allocator holds unused (it hands that out first): after
    a shape whose reference peaked high, `mem_get_info` alone reports the cache as taken."""
    free = torch.cuda.mem_get_info()[0]
    return free + torch.cuda.memory_reserved() - torch.cuda.memory_allocated()


def _parked(inputs: dict[str, Any], device: str) -> dict[str, Any] | None:
    """A host copy of inputs large for the device, so the reference runs on the only device copy (None: small
    enough for a device clone). The pristine inputs are kept apart from the ones the reference is given, to see
    what it writes; a published fp8 MoE's 10.5 GiB of weights beside a reference whose float32 copies of them
    peak at ~98 GiB (counted from its code; out of memory on an H200, session 47) need not be there twice."""
    size = sum(t.numel() * t.element_size() for t in inputs.values() if isinstance(t, torch.Tensor))
    limit = available_gpu_bytes() * PARK_SHARE if device.startswith("cuda") else PARK_CPU_BYTES
    if size <= limit:
        return None
    return {k: v.to("cpu", copy=True) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def _written_since(parked: dict[str, Any], given: dict[str, Any], chunk: int = 1 << 26) -> frozenset[str]:
    """`modified_inputs` against the host copy: each tensor compared bit for bit, a chunk at a time on the
    device."""
    names = []
    for name, host in parked.items():
        value = given.get(name)
        if not (isinstance(host, torch.Tensor) and isinstance(value, torch.Tensor)):
            continue
        if host.shape != value.shape or host.dtype != value.dtype:
            names.append(name)
            continue
        a, b = host.reshape(-1), value.detach().reshape(-1)
        if any(not same_bits(a[i:i + chunk].to(b.device), b[i:i + chunk]) for i in range(0, a.numel(), chunk)):
            names.append(name)
    return frozenset(names)


def _take_exact(sampler: Sampler, exact: Any) -> list[torch.Tensor]:
    """The float64 reference at the sampler's positions (its dtypes differ from the native leaves'). """
    from aka_tui.bench.problem.tolerance import flatten_outputs, in_output_format

    return [in_output_format(tensor.detach().reshape(-1).index_select(0, leaf.index.to(tensor.device)),
                             leaf.dtype)
            for leaf, (_, tensor) in zip(sampler.leaves, flatten_outputs(exact))]
