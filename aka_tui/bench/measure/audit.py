"""Fallback attribution, first version: which aten ops and which Triton kernels a forward ran.

A dispatch mode records every aten op the candidate's forward calls (inside its kernel launches too);
a hook on Triton's launch path records each kernel launched and whether the candidate file defines it, and,
per call, every launch in full (grid, argument shapes and values), which the engine compares between the
checked and the timed calls.
Allocation, views, metadata and layout copies are allowed; any other aten op computes, so it is a
fallback. The device-time attribution on CUDA comes with the profiler (integrity work).
"""

from __future__ import annotations

import functools
import hashlib
import sys
import time
from collections import Counter
from contextlib import contextmanager
from typing import Any, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from aka_tui.bench.measure.kernel_resources import compiled_resources
from aka_tui.bench.measure.memory_exports import unwrap, wrap_exports
from aka_tui.bench.measure.results import AuditReport

ALLOWED_OPS = frozenset({
    # allocation and initialisation of buffers
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "fill", "zero",
    "scalar_tensor", "arange", "resize", "lift_fresh", "lift_fresh_copy", "lift",
    # views and metadata
    "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "t", "transpose", "permute",
    "expand", "expand_as", "squeeze", "unsqueeze", "select", "slice", "split", "split_with_sizes",
    "chunk", "unbind", "narrow", "detach", "alias", "view_as", "flatten", "unflatten", "movedim",
    "diagonal", "view_as_real", "view_as_complex", "unfold", "_local_scalar_dense", "set",
    "is_same_size", "record_stream", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
    # copies made for layout
    "clone", "contiguous", "copy",
})


def _op_name(func: Any) -> str:
    """The op's name without aten's namespace and in-place suffix (`aten.copy_` -> `copy`); an op of any other
    namespace keeps its namespace (`cand::alias` -> `cand::alias`), so no operator of a candidate's own library
    passes for the aten view or copy it is named after."""
    name = func._overloadpacket.__name__.rstrip("_") or func._overloadpacket.__name__
    namespace = getattr(func, "namespace", "aten")
    return name if namespace == "aten" else f"{namespace}::{name}"


class AtenAuditMode(TorchDispatchMode):
    """Counts aten ops by name, split into allowed and computing ones (dtype-changing copies compute)."""

    def __init__(self) -> None:
        super().__init__()
        self.allowed: Counter[str] = Counter()
        self.compute: Counter[str] = Counter()
        self.readback = 0  # values read to the host (`item()`, `tolist()`): see `build_report`
        self.paused = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if not self.paused:
            name = _op_name(func)
            if name == "_to_copy":
                source = args[0] if args else None
                changes_dtype = "dtype" in kwargs and getattr(source, "dtype", None) != kwargs["dtype"]
                (self.compute if changes_dtype else self.allowed)[name] += 1
            elif name in ALLOWED_OPS:
                self.allowed[name] += 1
                if name == "_local_scalar_dense":
                    self.readback += 1
            else:
                self.compute[name] += 1
            if torch._C._len_torch_dispatch_stack():
                # A mode below this one answers the op, and the ops it runs meanwhile reach no mode: whatever
                # the op's name, it may compute.
                below = type(torch._C._get_dispatch_stack_at(0)).__name__
                self.compute[f"dispatch mode below the audit::{below}"] += 1
        return func(*args, **kwargs)

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """No dynamo-disable wrap here: TorchDispatchMode's wrap imports dynamo on its first call (1.5-2 s of a
        worker's start), and only matters while dynamo runs; `audit_mode()` picks the wrapped class then."""
        return False


class _DynamoSafeAuditMode(AtenAuditMode):
    """The same mode with TorchDispatchMode's dynamo-disable wrap (made here by `__init_subclass__`), so a
    candidate running torch.compile is never traced into the audit's own dispatch."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return True

    __torch_dispatch__ = AtenAuditMode.__torch_dispatch__


def audit_mode() -> AtenAuditMode:
    """A fresh audit mode; the dynamo-safe one once torch._dynamo is loaded (by the candidate or for it)."""
    return _DynamoSafeAuditMode() if "torch._dynamo" in sys.modules else AtenAuditMode()


class LaunchCounts(Counter[tuple[str, str]]):
    """Launches per (module, name), with the compiled resources of each kernel (GPU launches only)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.resources: dict[tuple[str, str], dict[str, Any]] = {}

    def clear(self) -> None:
        super().clear()
        self.resources.clear()


def _launch_value(value: Any, depth: int = 0) -> Any:
    """A hashable description of one launch argument: tensors by shape, dtype and strides (never address or
    contents), objects such as Triton's tensor descriptors by their public fields (never their repr, which would
    print a tensor's values)."""
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype), value.stride())
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return tuple(_launch_value(v, depth) for v in value)
    if isinstance(value, (torch.dtype, torch.device)):
        return str(value)
    inner = getattr(value, "value", None)  # tl.constexpr
    if isinstance(inner, (bool, int, float, str)):
        return ("constexpr", inner)
    if callable(value):
        return "callable"
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict) and depth < 3:
        return (type(value).__name__, tuple(sorted((k, _launch_value(v, depth + 1)) for k, v in fields.items()
                                                   if not k.startswith("_"))))
    return type(value).__name__


def describe_launch(kernel: Any, args: tuple, kwargs: dict) -> tuple[Any, ...]:
    """(module, name, grid, arguments, keyword arguments) of one Triton launch; a callable grid is evaluated
    the way Triton evaluates it (with the bound arguments), so a smaller grid shows."""
    fn = getattr(kernel, "fn", None)
    grid = kwargs.get("grid")
    if callable(grid):
        try:
            meta = dict(zip(getattr(kernel, "arg_names", ()), args))
            meta.update((k, v) for k, v in kwargs.items() if k not in ("grid", "warmup"))
            grid = grid(meta)
        except Exception:  # a grid that needs Triton's own binding: its code is the same every call
            grid = "callable"
    rest = tuple(sorted((k, _launch_value(v)) for k, v in kwargs.items() if k not in ("grid", "warmup")))
    return (getattr(fn, "__module__", "?"), getattr(fn, "__name__", "?"), _launch_value(grid),
            tuple(_launch_value(a) for a in args), rest)


def signature_hash(launches: list[tuple[Any, ...]]) -> str:
    """A short hash of a call's launches (equal launches, equal hash)."""
    return hashlib.sha1(repr(launches).encode()).hexdigest()[:16]


def launch_difference(expected: list[tuple[Any, ...]], got: list[tuple[Any, ...]]) -> str:
    """One line naming how two calls' launches differ (kernel counts first, then grids and arguments)."""
    want = Counter(f"{d[0]}.{d[1]}" for d in expected)
    have = Counter(f"{d[0]}.{d[1]}" for d in got)
    if want != have:
        def show(c: Counter[str]) -> str:
            return ", ".join(f"{k.rsplit('.', 1)[-1]}×{v}" for k, v in sorted(c.items())) or "no kernel"
        return f"kernels {show(have)} instead of {show(want)}"
    for a, b in zip(expected, got):
        if a != b:
            what = "grid" if a[2] != b[2] else "arguments"
            return f"{b[1]} launched with other {what}: {str(b[2] if what == 'grid' else b[3])[:120]} " \
                   f"instead of {str(a[2] if what == 'grid' else a[3])[:120]}"
    return ""


class TritonLaunchRecorder:
    """Records Triton kernel launches (compiled and interpreted): by defining module and name for the audit,
    in full (grid, argument shapes and values) per call for the engine's launch comparison."""

    def __init__(self) -> None:
        self.launches = LaunchCounts()
        self.active = False
        self.audit: AtenAuditMode | None = None
        self._originals: list[tuple[Any, Any]] = []
        self._builder_originals: list[tuple[str, Any]] = []  # the interpreter builder's methods wrapped
        self._exports: list[tuple[Any, str, Any]] = []
        # While timing on CUDA: the timed stream's handle, and launches that went to any other stream
        self.timed_stream: int | None = None
        self.off_stream: Counter[str] = Counter()
        self.call: list[tuple[Any, ...]] | None = None  # the launches of the call being captured
        # The recorder's own host time inside launches (a clock taken before any candidate loads): the timing
        # subtracts it from a call's host time, which is the candidate's cost to a caller, not the harness's.
        self._clock = time.perf_counter
        self.own_seconds = 0.0

    def install(self) -> None:
        """Wrap the `run` of Triton's launch classes (once); the worker does it before any candidate loads."""
        if self._originals:
            return
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        recorder = self
        for cls in (JITFunction, InterpretedFunction):
            original = cls.run

            def run(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                began = recorder._clock()
                key = None
                if not kwargs.get("warmup", False):
                    key = recorder._seen(self, args, kwargs)
                recorder.own_seconds += recorder._clock() - began
                # Audited throughout (but for `_pause_in_interpreter_corrections`): a launch runs the candidate's
                # Python too — its pre-run hooks, a callable grid, the kernel body under the interpreter — where
                # PyTorch or NumPy work went unseen while the whole launch was exempt (`pre_run_hook_fallback`,
                # `pre_run_hook_numpy_fallback`); the interpreter's argument handling only allocates and copies.
                compiled = _original(self, *args, **kwargs)
                if key is not None and key not in recorder.launches.resources:
                    began = recorder._clock()
                    recorder.note_resources(key, compiled)
                    recorder.own_seconds += recorder._clock() - began
                return compiled

            self._originals.append((cls, original))
            cls.run = run  # type: ignore[method-assign]
        self._pause_in_interpreter_corrections()
        self._exports = wrap_exports(lambda: recorder.audit)

    def _pause_in_interpreter_corrections(self) -> None:
        """The audit records nothing inside our corrections to the interpreter's builder (`interpreter_bf16`: fp8
        casts redone with torch), the interpreter's arithmetic for a `tl` operation: its builder methods that are
        not Triton's own are wrapped here, after the corrections are installed (they replace those methods)."""
        from triton.runtime.interpreter import InterpreterBuilder

        from aka_tui.bench.problem.interpreter_bf16 import install_if_interpreting

        install_if_interpreting()
        recorder = self
        for name, method in list(vars(InterpreterBuilder).items()):
            if not callable(method) or str(getattr(method, "__module__", "")).startswith("triton"):
                continue

            @functools.wraps(method)  # keeps the corrections' own marker (installed once)
            def paused(*args: Any, _method: Any = method, **kwargs: Any) -> Any:
                audit = recorder.audit
                if audit is None:
                    return _method(*args, **kwargs)
                audit.paused += 1
                try:
                    return _method(*args, **kwargs)
                finally:
                    audit.paused -= 1

            self._builder_originals.append((name, method))
            setattr(InterpreterBuilder, name, paused)

    def note_resources(self, key: tuple[str, str], compiled: Any) -> None:
        """Keep the registers, spills and occupancy of a compiled kernel (never fails a launch)."""
        try:
            resources = compiled_resources(compiled)
        except Exception:  # metadata is informative only: a Triton version without it records nothing
            return
        if resources is not None:
            self.launches.resources[key] = resources

    def uninstall(self) -> None:
        for cls, original in self._originals:
            cls.run = original  # type: ignore[method-assign]
        self._originals.clear()
        if self._builder_originals:
            from triton.runtime.interpreter import InterpreterBuilder

            for name, method in self._builder_originals:
                setattr(InterpreterBuilder, name, method)
            self._builder_originals.clear()
        unwrap(self._exports)
        self._exports = []

    @contextmanager
    def installed(self) -> Iterator[TritonLaunchRecorder]:
        """Installed for the block (and removed after, unless it was installed already)."""
        owner = not self._originals
        self.install()
        try:
            yield self
        finally:
            if owner:
                self.uninstall()

    def _seen(self, kernel: Any, args: tuple, kwargs: dict) -> tuple[str, str] | None:
        """Count and describe one launch; returns its (module, name) key while the audit records."""
        fn = getattr(kernel, "fn", None)
        key = None
        if self.active:
            key = (getattr(fn, "__module__", "?"), getattr(fn, "__name__", "?"))
            self.launches[key] += 1
        if self.call is not None:
            self.call.append(describe_launch(kernel, args, kwargs))
        if self.timed_stream is not None:
            import torch

            if torch.cuda.current_stream().cuda_stream != self.timed_stream:
                self.off_stream[f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__name__', '?')}"] += 1
        return key

    def begin_call(self) -> None:
        """Start capturing the launches of one call (`end_call` returns them)."""
        self.call = []

    def end_call(self) -> list[tuple[Any, ...]]:
        launches, self.call = self.call or [], None
        return launches

    @contextmanager
    def guarding_stream(self, stream_handle: int) -> Iterator[None]:
        """Count Triton launches on any stream but `stream_handle` (the timed one) while timing.

        The saturated timing pass cannot see work that escapes to a side stream (the GPU sleep hides it), so
        a candidate that moved its kernels off the timed stream only there would go unnoticed by the
        wall-time check of the host-bound pass; this check holds in both passes."""
        self.off_stream.clear()
        self.timed_stream = stream_handle
        try:
            yield
        finally:
            self.timed_stream = None

    @contextmanager
    def recording(self, audit: AtenAuditMode | None) -> Iterator[None]:
        self.launches.clear()
        self.active, self.audit = True, audit
        try:
            yield
        finally:
            self.active, self.audit = False, None


def _kernel_label(module: str, name: str, candidate_module: str) -> str:
    """An own kernel by its name, a foreign one by module and name (the keys of the audit report)."""
    return name if module == candidate_module else f"{module}.{name}"


READBACK_FLOOR = 64  # values a forward may read to the host whatever its output's size (a few lengths, counts)


def build_report(audit: AtenAuditMode, launches: Counter[tuple[str, str]], candidate_module: str,
                 output_size: int = 0) -> AuditReport:
    """Verdict: real ⇔ at least one own Triton kernel ran, no aten compute, no foreign Triton kernel, and fewer
    values read to the host than a quarter of the output's (at least READBACK_FLOOR): Python arithmetic on values
    read back reaches no aten op, so reading back about as much as the output holds is counted as computing
    (`python_loop_fallback`, `scalar_loop_fallback`), while the lengths and counts an honest kernel reads stay
    far below it."""
    if audit.readback >= max(READBACK_FLOOR, output_size / 4):
        audit.compute["values read to the host::item/tolist"] += audit.readback
    own = {name: n for (module, name), n in launches.items() if module == candidate_module}
    foreign = {f"{module}.{name}": n for (module, name), n in launches.items() if module != candidate_module}
    resources = {_kernel_label(module, name, candidate_module): record
                 for (module, name), record in getattr(launches, "resources", {}).items()}
    reasons = []
    if not own:
        reasons.append("no Triton kernel of the candidate ran")
    if audit.compute:
        reasons.append("PyTorch computed: " + ", ".join(
            f"{k if '::' in k else 'aten.' + k}×{v}" for k, v in sorted(audit.compute.items())))
    if foreign:
        reasons.append("foreign Triton kernels: " + ", ".join(sorted(foreign)))
    return AuditReport(real=not reasons, method="dispatch+triton-launch", own_kernels=own,
                       foreign_kernels=foreign, compute_ops=dict(audit.compute), allowed_ops=dict(audit.allowed),
                       reason="; ".join(reasons), kernel_resources=resources)
