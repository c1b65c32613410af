"""Pure parts of the integrity work: attribution arithmetic, fuzzing, static scan, tamper and poison checks."""

from __future__ import annotations

import _thread
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from aka_tui.bench.measure.attribution import DeviceKernel, attribute
from aka_tui.bench.measure.dispatch_table import DispatcherSnapshot
from aka_tui.bench.measure.integrity import IntegritySnapshot, ThreadStartCounter
from aka_tui.bench.measure.poison import poisoned_allocations
from aka_tui.bench.measure.results import TimingStats
from aka_tui.bench.measure.static_scan import scan_source
from aka_tui.bench.measure.timing import escaped_work
from aka_tui.bench.problem.fuzz import fuzz_shapes, is_fuzz_id, resolve_shape
from aka_tui.bench.problem.lookup import load_problem
from tests.conftest import PROBLEMS


def test_own_share_and_foreign_kernels_by_name() -> None:
    kernels = [DeviceKernel("_rms_norm_kernel", 90.0, 7), DeviceKernel("ampere_bf16_gemm_128x64", 8.0, 7),
               DeviceKernel("Memcpy DtoD (Device -> Device)", 2.0, 7)]
    result = attribute(kernels, {"_rms_norm_kernel"}, marker_stream=7)
    assert result.own_share == 0.9 and not result.escaped_streams
    assert result.verdict(0.9) == (True, "")
    real, why = result.verdict(0.95)
    assert not real and "ampere_bf16_gemm" in why


def test_no_own_kernel_is_a_fallback_and_side_streams_are_seen() -> None:
    assert attribute([DeviceKernel("void at::native::vectorized_elementwise_kernel", 5.0, 7)], {"_k"}, 7).verdict(0.9)[0] is False
    escaped = attribute([DeviceKernel("_k", 5.0, 13)], {"_k"}, marker_stream=7)
    assert escaped.escaped_streams


def test_only_the_scalar_reads_copies_to_the_host_are_set_aside() -> None:
    """An output sized by the data needs one `item()`: its short copy to the host (measured 1.8 us on an H100
    beside 9.8 us of own kernels, own_share 0.85) is on neither side. Copies beyond the reads counted, long
    copies (a tensor moved to the host) and copies the other way stay foreign."""
    scalar = DeviceKernel("Memcpy DtoH (Device -> Pinned)", 1.8, 7)
    kernels = [DeviceKernel("_count_kernel", 3.3, 7), DeviceKernel("_sort_kernel", 6.5, 7), scalar]
    assert attribute(kernels, {"_count_kernel", "_sort_kernel"}, 7).verdict(0.9)[0] is False
    kept = attribute(kernels, {"_count_kernel", "_sort_kernel"}, 7, readback_copies=1)
    assert kept.own_share == 1.0 and kept.readback_us == 1.8 and kept.verdict(0.9) == (True, "")
    twice = attribute(kernels + [scalar], {"_count_kernel", "_sort_kernel"}, 7, readback_copies=1)
    assert twice.foreign_us == {scalar.name: 1.8} and twice.readback_us == 1.8
    bulk = attribute(kernels[:2] + [DeviceKernel("Memcpy DtoH (Device -> Pageable)", 40.0, 7)],
                     {"_count_kernel", "_sort_kernel"}, 7, readback_copies=5)
    assert bulk.readback_us == 0.0 and bulk.verdict(0.9)[0] is False
    upload = attribute(kernels[:2] + [DeviceKernel("Memcpy HtoD (Pinned -> Device)", 1.8, 7)],
                       {"_count_kernel", "_sort_kernel"}, 7, readback_copies=1)
    assert upload.readback_us == 0.0 and upload.own_share < 0.9


def test_escaped_work_from_wall_vs_event_time() -> None:
    honest = TimingStats(0.010, 0.01, 0.01, 0.01, 100, 3, "cuda_events", 1 << 27, wall_ms_per_call=0.045, flush_ms=0.025)
    side_stream = TimingStats(0.004, 0.004, 0.004, 0.004, 100, 3, "cuda_events", 1 << 27, wall_ms_per_call=1.2, flush_ms=0.025)
    assert not escaped_work(honest) and escaped_work(side_stream)


def test_fuzz_shapes_are_deterministic_in_domain_and_replayable() -> None:
    problem = load_problem(PROBLEMS / "rms_norm")
    bases = problem.shapes_for("smoke")
    first = fuzz_shapes(problem, bases, 4, cpu=True)
    assert [s.shape_id for s in first] == [s.shape_id for s in fuzz_shapes(problem, bases, 4, cpu=True)]
    assert len(first) == 4 and all(is_fuzz_id(s.shape_id) and s.weight == 0 for s in first)
    for shape in first:
        rebuilt = resolve_shape(problem, shape.shape_id)
        assert rebuilt is not None and rebuilt.init_kwargs == shape.init_kwargs
        assert rebuilt.input_kwargs == shape.input_kwargs
        hidden = shape.input_kwargs["hidden_size"]
        assert 64 <= hidden <= 16384 and 1 <= shape.input_kwargs["num_tokens"] <= 16384
        assert shape.init_kwargs["hidden_size"] == hidden  # keys present in both dicts move together
    gpu = fuzz_shapes(problem, problem.shapes_for("full"), 6, cpu=False)
    assert any(s.input_kwargs["num_tokens"] == 16384 or s.input_kwargs["hidden_size"] == 16384 for s in gpu)
    assert resolve_shape(problem, "fuzz.nope=3@smoke_t7_h1000_fp16") is None


def test_static_scan_finds_compute_patches_threads_and_reference_imports() -> None:
    source = '''
import threading, time, torch, triton
import triton.language as tl
from reference import Model as Ref

@triton.jit
def _k(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, tl.exp(x))

time.perf_counter = lambda: 0.0

class Model(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        threading.Thread(target=lambda: None).start()
        return torch.softmax(x, -1) + x.sum()
'''
    kinds = {(f.kind, f.text.split("(")[0]) for f in scan_source(source)}
    assert ("torch-compute", "torch.softmax") in kinds
    assert ("torch-compute", "x.sum") in kinds
    assert ("monkeypatch", "time.perf_counter = ...") in kinds
    assert ("thread", "threading.Thread") in kinds
    assert ("reference-import", "reference") in kinds
    assert not any("empty_like" in text or "tl." in text for _, text in kinds)


def test_static_scan_reads_gluon_kernels_as_device_code() -> None:
    """Gluon's reductions inside a `@gluon.jit` kernel are device code, not torch compute; suspicious code in one
    is still found."""
    source = '''
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
import sys

@gluon.jit
def _k(x_ptr, layout: gl.constexpr):
    x = gl.load(x_ptr + gl.arange(0, 32, layout=layout))
    gl.store(x_ptr, gl.sum(x, axis=0) + x.sum(axis=0))
    sys.modules

def host(x):
    return x.sum()
'''
    findings = scan_source(source)
    assert [f.line for f in findings if f.kind == "torch-compute"] == [13]  # the host function's x.sum()
    assert any(f.kind == "introspection" and f.suspicious for f in findings)


def test_integrity_snapshot_sees_replaced_timers() -> None:
    snapshot = IntegritySnapshot()
    original = time.perf_counter
    try:
        time.perf_counter = lambda: 0.0  # type: ignore[assignment]
        assert "time.perf_counter" in snapshot.changed()
    finally:
        time.perf_counter = original
    assert snapshot.changed() == []


def test_integrity_snapshot_sees_replaced_builtins() -> None:
    """The timing statistics sort with `sorted`, the comparison asks `type`/`isinstance`; a module's import, a class
    statement and every `import` call through `__import__`/`__build_class__`."""
    import builtins

    snapshot = IntegritySnapshot()
    for name in ("sorted", "isinstance", "__import__", "__build_class__"):
        original = getattr(builtins, name)
        try:
            setattr(builtins, name, lambda *args, **kwargs: original(*args, **kwargs))
            assert f"builtins.{name}" in snapshot.changed(), name
        finally:
            setattr(builtins, name, original)
    assert snapshot.changed() == []


def test_integrity_snapshot_sees_methods_the_harness_classes_inherit() -> None:
    """The aten audit enters through TorchDispatchMode's `__enter__`, which it inherits from torch."""
    from torch.utils._python_dispatch import TorchDispatchMode

    import aka_tui.bench.measure.audit  # noqa: F401  (the audit mode is one of the harness classes)

    snapshot = IntegritySnapshot()
    original = TorchDispatchMode.__enter__
    try:
        TorchDispatchMode.__enter__ = lambda self: self  # type: ignore[method-assign]
        assert "torch.utils._python_dispatch.TorchDispatchMode.__enter__" in snapshot.changed()
    finally:
        TorchDispatchMode.__enter__ = original  # type: ignore[method-assign]
    assert snapshot.changed() == []


def test_integrity_snapshot_sees_the_globals_inherited_methods_call() -> None:
    """TorchDispatchMode.__enter__ pushes the mode through its module's `_push_mode`."""
    import torch.utils._python_dispatch as modes

    import aka_tui.bench.measure.audit  # noqa: F401  (the audit mode is one of the harness classes)

    snapshot = IntegritySnapshot()
    original = modes._push_mode
    try:
        modes.__dict__["_push_mode"] = lambda mode: None
        assert "torch.utils._python_dispatch._push_mode" in snapshot.changed()
    finally:
        modes.__dict__["_push_mode"] = original
    assert snapshot.changed() == []


@contextmanager
def _thread_start_counter() -> Iterator[ThreadStartCounter]:
    """A counter whose patches are undone afterwards (its fork hook stays: it only appends to its own list)."""
    saved = threading.Thread.start, _thread.start_new_thread, _thread.start_new, threading._start_new_thread  # type: ignore[attr-defined]
    try:
        yield ThreadStartCounter()
    finally:
        threading.Thread.start, _thread.start_new_thread, _thread.start_new, threading._start_new_thread = saved  # type: ignore[attr-defined,method-assign]


def test_thread_start_counter_sees_short_lived_threads() -> None:
    with _thread_start_counter() as counter:
        mark = counter.mark()
        t = threading.Thread(target=lambda: None, name="sneaky")
        t.start()
        t.join()
        assert set(counter.since(mark)) == {"sneaky"}


def test_thread_start_counter_sees_raw_threads_and_forks() -> None:
    """Threads below `threading` and forked processes do work no dispatch mode of the worker's thread sees."""
    with _thread_start_counter() as counter:
        mark = counter.mark()
        done = _thread.allocate_lock()
        done.acquire()
        _thread.start_new_thread(done.release, ())
        done.acquire()
        assert counter.since(mark) == ["raw thread 'lock.release'"]
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        later = counter.mark()
        assert counter.since(later) == [f"forked process (pid {os.getpid()} forked)"]  # a fork before the mark too


def test_integrity_snapshot_sees_the_raw_thread_start_restored() -> None:
    original = _thread.start_new_thread
    with _thread_start_counter():
        snapshot = IntegritySnapshot()
        _thread.start_new_thread = original  # what a candidate that found the uncounted start would do
        assert "_thread.start_new_thread" in snapshot.changed()


def test_poisoned_allocations_fill_uninitialised_memory() -> None:
    with poisoned_allocations("cpu"):
        floats = torch.empty(64)
        ints = torch.empty(8, dtype=torch.int32)
    assert torch.isnan(floats).all() and (ints == torch.iinfo(torch.int32).max).all()
    assert not torch.are_deterministic_algorithms_enabled()


def test_dispatcher_snapshot_sees_aten_kernels_overloads_and_fallbacks() -> None:
    """A kernel registered below Python replaces no callable: the dispatcher itself is compared."""
    snapshot = DispatcherSnapshot()
    lib = torch.library.Library("aten", "FRAGMENT")  # what a hostile candidate does
    global_lib = torch.library.Library("_", "IMPL")
    try:
        lib.impl("abs", lambda x: x, "CPU")
        lib.define("alias.cand(Tensor self) -> Tensor")
        global_lib.fallback(lambda op, keys, *args, **kwargs: None, dispatch_key="PrivateUse3", with_keyset=True)
        assert sorted(snapshot.changed()) == ["dispatcher aten::abs", "dispatcher aten::alias.cand",
                                      "dispatcher fallback PrivateUse3"]
        assert torch.abs(torch.tensor([-1.0])).item() == -1.0  # the override is live
    finally:
        lib._destroy()
        global_lib._destroy()
    assert snapshot.changed() == []
    assert torch.abs(torch.tensor([-1.0])).item() == 1.0


def test_static_scan_holds_dispatcher_registrations_but_not_custom_ops() -> None:
    """Replacing an aten kernel needs a `Library` (or a loaded extension); declaring an operator of one's own does
    not, and the aten audit charges such an operator as computing."""
    for line in ('lib = torch.library.Library("aten", "IMPL")', "from torch.library import Library",
                 'torch._C._dispatch_library("IMPL", "aten", "")', 'torch.ops.load_library("k.so")'):
        found = [f for f in scan_source(f"import torch\n{line}\n") if f.suspicious]
        assert [f.kind for f in found] == ["monkeypatch"], line
    own_op = 'import torch\n@torch.library.custom_op("cand::rms", mutates_args=())\ndef rms(x: torch.Tensor) -> ' \
             'torch.Tensor:\n    return x\n'
    assert not [f for f in scan_source(own_op) if f.suspicious]


def test_integrity_snapshot_sees_resident_modes_and_trace_hooks() -> None:
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    snapshot = IntegritySnapshot()
    with TorchDispatchMode(), TorchFunctionMode():
        assert {"torch dispatch modes", "torch function modes"} <= set(snapshot.changed())
    original = sys.getprofile()
    sys.setprofile(lambda frame, event, arg: None)
    try:
        assert "sys.setprofile" in snapshot.changed()
    finally:
        sys.setprofile(original)
    assert snapshot.changed() == []


def test_the_aten_audit_charges_a_dispatch_mode_below_it() -> None:
    """A mode under the audit's answers an op the audit allows, and the ops it runs meanwhile reach no mode."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from aka_tui.bench.measure.audit import audit_mode

    class Resident(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    x = torch.ones(4)
    with audit_mode() as alone:
        x.view(2, 2)
    assert alone.allowed["view"] == 1 and not alone.compute
    with Resident(), audit_mode() as above:
        x.view(2, 2)
    assert above.compute == {"dispatch mode below the audit::Resident": 1}


def test_static_scan_holds_raw_threads_and_processes() -> None:
    """Work in a raw thread or another process is seen by no audit; `posix` is `os` under another name."""
    routes = ["import _thread", "from os import fork", "import os\nos.fork()", "import os as o\no.posix_spawn('x', [], {})",
              "import os\nos.system('python -c 1')", "import torch.multiprocessing as mp",
              "from torch import multiprocessing", "import torch\ntorch.multiprocessing.Process()",
              "from concurrent.futures import ProcessPoolExecutor\nProcessPoolExecutor()", "import pty",
              "from posix import write", "import os\nos.register_at_fork(before=print)"]
    for source in routes:
        assert [f for f in scan_source(source) if f.suspicious], source
    honest = "import threading\nfrom concurrent.futures import ThreadPoolExecutor\nimport os\nos.environ.get('X')\n"
    assert not [f for f in scan_source(honest) if f.suspicious]


def test_the_audit_charges_memory_handed_to_numpy() -> None:
    """NumPy working on a tensor's memory reaches no aten op: handing the memory out inside the audit computes."""
    import numpy as np

    from aka_tui.bench.measure.audit import TritonLaunchRecorder, audit_mode

    x = torch.ones(4)
    with TritonLaunchRecorder().installed() as recorder:
        audit = audit_mode()
        with recorder.recording(audit), audit:
            x.numpy(), np.asarray(x), np.from_dlpack(x), torch.utils.dlpack.to_dlpack(x)
            audit.paused += 1  # inside the candidate's kernel launch: the interpreter's own
            x.numpy()
            audit.paused -= 1
        x.numpy()  # the harness's own, outside the audit
    charged = {k.split("::")[1]: v for k, v in audit.compute.items()}
    assert set(charged) == {"numpy", "__array__", "__dlpack__", "to_dlpack"}
    assert charged["numpy"] == 2  # x.numpy(), and np.asarray's __array__ calls it too: never the harness's own
    assert "numpy" not in vars(torch.Tensor)  # uninstalled: the inherited method again


def test_static_scan_holds_the_way_around_the_tensor_wraps() -> None:
    for source in ("import torch\ntorch._C.TensorBase.numpy(x)", "from torch._C import _TensorBase",
                   "import torch\nsuper(torch.Tensor, x).numpy()"):
        assert [f for f in scan_source(source) if f.suspicious], source
    assert not [f for f in scan_source("class M:\n    def __init__(self):\n        super(M, self).__init__()\n")
                if f.suspicious]


def test_static_scan_holds_builtins_reached_without_their_name() -> None:
    assert [f for f in scan_source("len.__self__.sorted = sorted") if f.suspicious]
    assert [f for f in scan_source("import builtins\nbuiltins.sorted = sorted") if f.suspicious]


def test_static_scan_holds_patches_through_setattr() -> None:
    for source in ("from torch.utils._python_dispatch import TorchDispatchMode as M\nsetattr(M, '__enter__', id)",
                   "import torch\nobject.__setattr__(torch.Tensor, 'numpy', id)", "import time\ndelattr(time, 'x')",
                   "import triton\ntype.__setattr__(triton.runtime.jit.JITFunction, 'run', id)",
                   "import torch.utils._python_dispatch as m\nm.__dict__['_push_mode'] = id",
                   "import torch\ntorch.__dict__['empty'] = id"):
        assert [f for f in scan_source(source) if f.suspicious], source
    for honest in ("class M:\n    def __init__(self):\n        setattr(self, 'eps', 1e-6)\n",
                   "class M:\n    def __init__(self):\n        self.__dict__['eps'] = 1e-6\n"):
        assert not [f for f in scan_source(honest) if f.suspicious], honest


def test_integrity_snapshot_sees_signal_handlers_and_interval_timers() -> None:
    """A handler runs the candidate's code inside the harness's frames between any two bytecodes (after the audited
    call returned, it could finish the outputs the comparison reads): one installed, or a timer started, after
    the snapshot is tampering; both put back, nothing is."""
    import signal

    snapshot = IntegritySnapshot()
    previous = signal.signal(signal.SIGUSR1, lambda number, frame: None)
    try:
        assert "signal handler SIGUSR1" in snapshot.changed()
    finally:
        signal.signal(signal.SIGUSR1, previous)
    signal.setitimer(signal.ITIMER_VIRTUAL, 60.0)  # CPU time of this process: never fires within the test
    try:
        assert "interval timer ITIMER_VIRTUAL" in snapshot.changed()
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0.0)
    assert snapshot.changed() == []


def test_static_scan_holds_signals_and_audit_hooks() -> None:
    for source in ("import signal\nsignal.setitimer(signal.ITIMER_REAL, 1e-6)", "from signal import signal",
                   "import _signal", "import sys\nsys.addaudithook(print)"):
        assert [f for f in scan_source(source) if f.suspicious], source


def test_static_scan_holds_reading_whether_a_dispatch_mode_is_active() -> None:
    for source in ("from torch.utils._python_dispatch import is_in_torch_dispatch_mode\nis_in_torch_dispatch_mode()",
                   "import torch\ntorch._C._len_torch_dispatch_stack()", "import torch\ntorch._C._get_dispatch_stack_at(0)"):
        assert [f for f in scan_source(source) if f.suspicious], source


def test_no_honest_kernel_has_a_suspicious_finding() -> None:
    """The static scan holds no KB kernel, honest red-team kernel or correct problem solution: each rule added
    against a cheat must leave honest code alone."""
    from tests.conftest import REPO

    honest = [*sorted((REPO / "kb" / "family").rglob("*.py")), *sorted((REPO / "tests" / "redteam" / "honest").glob("*.py")),
              *sorted(REPO.glob("problems/*/solutions/correct/*.py"))]
    assert len(honest) >= 30
    held = {str(path.relative_to(REPO)): [str(f) for f in scan_source(path.read_text()) if f.suspicious]
            for path in honest}
    assert {path: found for path, found in held.items() if found} == {}


def test_the_profiled_verdict_sets_aside_one_copy_per_scalar_read_per_call() -> None:
    from types import SimpleNamespace

    from aka_tui.bench.measure.profiled import _attribute
    from aka_tui.bench.measure.results import AuditReport

    plan: Any = SimpleNamespace(opts=SimpleNamespace(own_share_threshold=0.9))
    report = AuditReport(real=True, method="dispatch+triton-launch", own_kernels={"_sort_kernel": 1},
                         allowed_ops={"_local_scalar_dense": 1, "empty": 2})
    call = [DeviceKernel("_sort_kernel", 6.5, 7), DeviceKernel("Memcpy DtoH (Device -> Pinned)", 1.8, 7)]
    two_calls = _attribute(plan, report, call + call, 7, calls=2)
    assert two_calls.real and two_calls.own_share == 1.0 and "set aside: 3.6us" in two_calls.reason
    one_call = _attribute(plan, report, call + call, 7, calls=1)  # the second call's copy is beyond the reads counted
    assert not one_call.real and "Memcpy DtoH" in one_call.reason
    no_reads = _attribute(plan, AuditReport(real=True, method="dispatch+triton-launch",
                                            own_kernels={"_sort_kernel": 1}), call, 7)
    assert not no_reads.real
