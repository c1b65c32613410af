"""The measurement engine's parts on the CPU: the call loop, timing hooks, samples, launch records, the worker's
authenticated channel, the typed job, the integrity snapshot of harness classes and the static scan's holds."""

from __future__ import annotations

import json
import os
from typing import Any, Iterator

import pytest
import torch

from aka_tui.bench.measure.audit import TritonLaunchRecorder, describe_launch, launch_difference
from aka_tui.bench.measure.calls import Call, MeasureFailure, called, run_calls
from aka_tui.bench.measure.channel import ChannelTampered, Reader, new_key, sender
from aka_tui.bench.measure.integrity import IntegritySnapshot
from aka_tui.bench.measure.job import CandidateRef, MeasureJob
from aka_tui.bench.measure.samples import SampleMismatch, Sampler, decode, encode, failing_calls, positions
from aka_tui.bench.measure.static_scan import scan_source
from aka_tui.bench.measure.timing import Timers, TimingHooks, cpu_protocol, drive
from aka_tui.bench.problem import tolerance
from aka_tui.bench.problem.tolerance import Tolerance
from tests.bench.kernels.copy_kernel import copy_kernel


def test_every_call_comes_from_one_place_and_errors_reach_the_plan_cleanup() -> None:
    callers: list[str] = []
    cleaned: list[str] = []

    def model(x: int) -> int:
        import sys

        callers.append(sys._getframe(1).f_code.co_name + "/" + sys._getframe(2).f_code.co_name)
        if x < 0:
            raise ValueError("negative")
        return x * 2

    def plan(values: list[int]) -> Any:
        try:
            outs = []
            for v in values:
                outs.append((yield from called(Call({"x": v}, f"stage {v}"))))
            return outs
        finally:
            cleaned.append("done")

    assert run_calls(model, plan([1, 2])) == [2, 4]
    assert len(set(callers)) == 1  # the same frames above forward for every call
    with pytest.raises(MeasureFailure) as failure:
        run_calls(model, plan([1, -1, 3]))
    assert failure.value.error.kind == "runtime_error" and failure.value.error.stage == "stage -1"
    assert "ValueError: negative" in failure.value.error.message and cleaned == ["done", "done"]


def test_timing_protocol_calls_the_hooks_around_every_call_and_passes_checkpoints_through() -> None:
    events: list[str] = []

    def checkpoint(name: str) -> Iterator[Any]:
        events.append(f"checkpoint {name}")
        yield {"i": -1}  # a foreign request: the driver gets it as it is

    hooks = TimingHooks(prepare=lambda i: events.append(f"prepare {i}"),
                        observe=lambda call, out: events.append(f"observe {call.set_index} {call.phase} {out}"),
                        checkpoint=checkpoint)
    protocol = cpu_protocol(2, Timers.capture(), reps=3, hooks=hooks)
    seen: list[Any] = []
    request = protocol.send(None)
    with pytest.raises(StopIteration) as stop:
        while True:
            seen.append(request)
            out = request["i"] if isinstance(request, dict) else request.set_index * 10
            request = protocol.send(out)
    run = stop.value.value
    assert [getattr(r, "phase", "checkpoint") for r in seen] == ["first", "checkpoint", "cpu", "cpu", "cpu",
                                                                 "checkpoint"]
    assert events[:3] == ["prepare 0", "observe 0 first 0", "checkpoint after warm-up"]
    assert "observe 1 cpu 10" in events and run.stats.reps == 3 and [i for i, _ in run.per_call] == [0, 1, 0]
    plain = drive(lambda inputs: inputs["v"], [{"v": 1}], cpu_protocol(1, Timers.capture(), reps=2))
    assert plain.stats.reps == 2


def test_sampled_outputs_follow_the_overflow_rule_of_the_full_comparison() -> None:
    """The timed and parent checks judge sampled elements as the full comparison does: the format's largest
    code matches a reference that overflowed it; any other value there is a wrong element."""
    from aka_tui.bench.measure.samples import bad_elements

    expected = torch.tensor([1.0, 300.0, -3.0]).to(torch.float8_e4m3fnuz).double()  # NaN at 1
    tol = Tolerance(0.125, 0.125)
    at_edge = torch.tensor([1.0, 240.0, -3.0]).to(torch.float8_e4m3fnuz)
    inside = torch.tensor([1.0, 224.0, -3.0]).to(torch.float8_e4m3fnuz)
    assert bad_elements(at_edge, expected, tol).tolist() == [False, False, False]
    assert bad_elements(inside, expected, tol).tolist() == [False, True, False]


def test_sampled_outputs_take_an_overflow_code_for_the_largest_code_as_the_full_comparison_does() -> None:
    """The mirror case in the timed and parent checks: the candidate's NaN where the reference rounded to 240 (a
    sum just past e4m3fnuz's threshold of 248); a NaN where the reference is any other value stays wrong."""
    from aka_tui.bench.measure.samples import bad_elements

    expected = torch.tensor([1.0, 247.0, -3.0]).to(torch.float8_e4m3fnuz).double()  # 240 at 1
    tol = Tolerance(0.125, 0.125)
    past = torch.tensor([1.0, float("nan"), -3.0]).to(torch.float8_e4m3fnuz)
    elsewhere = torch.tensor([float("nan"), float("nan"), -3.0]).to(torch.float8_e4m3fnuz)
    assert bad_elements(past, expected, tol).tolist() == [False, False, False]
    assert bad_elements(elsewhere, expected, tol).tolist() == [True, False, False]


def test_sample_positions_cover_the_ends_and_wrong_calls_are_found() -> None:
    pos = positions(10_000, 64, seed=3)
    assert pos[0] == 0 and pos[-1] == 9_999 and bool((pos[1:] > pos[:-1]).all())
    assert torch.equal(positions(5, 64, seed=3), torch.arange(5))
    reference = torch.linspace(-1, 1, 1000).reshape(10, 100)
    sampler = Sampler(reference, 128, lambda leaf: 7)
    good = sampler.take(reference + 1e-6)
    stale = sampler.take(reference.flip(0))
    expected = [t.double() for t in sampler.take(reference)]
    bad = failing_calls([good, stale, good], expected, lambda dtype: Tolerance(1e-4, 1e-4), 0.0)
    assert [i for i, _ in bad] == [1] and "outside tolerance" in bad[0][1]
    zeros = failing_calls([sampler.take(torch.zeros_like(reference))], expected, lambda d: Tolerance(10, 10), 0.0)
    assert zeros and "all zero" in zeros[0][1]
    with pytest.raises(SampleMismatch, match="structure"):
        sampler.take((reference, reference))
    with pytest.raises(SampleMismatch, match="float16"):
        sampler.take(reference.half())
    assert torch.equal(decode(encode(good[0])), good[0].double())
    ints = torch.tensor([3, -2, 7])
    assert torch.equal(decode(encode(ints)), ints)


def test_launch_records_name_the_grid_and_arguments() -> None:
    recorder = TritonLaunchRecorder()
    x = torch.arange(64, dtype=torch.float32)
    y = torch.empty_like(x)
    with recorder.installed():
        recorder.begin_call()
        copy_kernel[(1,)](x, y, 64, BLOCK=64)
        full = recorder.end_call()
        recorder.begin_call()
        copy_kernel[lambda meta: (triton_cdiv(meta["n"], meta["BLOCK"]),)](x, y, 32, BLOCK=32)
        half = recorder.end_call()
    assert len(full) == 1 and full[0][1] == "copy_kernel" and full[0][2] == (1,)
    assert half[0][2] == (1,)  # a callable grid is evaluated as Triton would
    assert "other arguments" in launch_difference(full, half)
    assert "no kernel" in launch_difference(full, [])
    assert describe_launch(copy_kernel, (x, y, 64), {"grid": (2,), "BLOCK": 64})[3][0] == ("tensor", (64,),
                                                                                              "torch.float32", (1,))


def test_launch_descriptions_never_read_tensor_contents() -> None:
    """Objects such as Triton's tensor descriptors are described by their fields: the output buffer inside one
    holds other values on every call (poisoned, stale), which must not make two equal launches differ."""
    import types

    first = types.SimpleNamespace(base=torch.full((4, 8), float("nan")), block_shape=[4, 8])
    second = types.SimpleNamespace(base=torch.zeros(4, 8), block_shape=[4, 8])
    wider = types.SimpleNamespace(base=torch.zeros(4, 16), block_shape=[4, 8])
    describe = lambda desc: describe_launch(copy_kernel, (desc,), {"grid": (1,)})  # noqa: E731
    assert describe(first) == describe(second) != describe(wider)


def test_profiled_calls_split_at_the_markers_and_harness_kernels_belong_to_none() -> None:
    from aka_tui.bench.measure.attribution import DeviceKernel, split_calls

    timeline = [DeviceKernel("_aka_clock_warmup", 900.0, 7), DeviceKernel("_aka_call_marker", 1.0, 7),
                DeviceKernel("_rms_norm_kernel", 50.0, 7), DeviceKernel("_aka_clock_warmup", 900.0, 7),
                DeviceKernel("_aka_call_marker_0d1d", 1.0, 7), DeviceKernel("_rms_norm_kernel", 48.0, 7),
                DeviceKernel("void at::native::vectorized_elementwise_kernel", 2.0, 7)]
    calls, stream, seen = split_calls(timeline, "_aka_call_marker", ("_aka_clock_warmup",))
    assert stream == 7 and seen == 4
    assert [[k.name for k in call] for call in calls] == [["_rms_norm_kernel"],
                                                          ["_rms_norm_kernel", "void at::native::vectorized_elementwise_kernel"]]


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def test_channel_accepts_only_its_own_numbered_messages() -> None:
    read_fd, write_fd = os.pipe()
    key = new_key()
    send = sender(write_fd, key)
    reader = Reader(read_fd, key)
    try:
        send({"event": "compiled", "ok": True})
        send({"event": "done"})
        assert reader.next_message(1.0) == {"event": "compiled", "ok": True}
        assert reader.next_message(1.0) == {"event": "done"}
        assert reader.next_message(0.05) is None and not reader.eof
        os.write(write_fd, (json.dumps({"event": "shape_result", "result": {}}) + "\n").encode())
        with pytest.raises(ChannelTampered, match="not one of its messages"):
            reader.next_message(1.0)
        other = sender(write_fd, new_key())  # a key of its own: wrong MAC
        other({"event": "done"})
        with pytest.raises(ChannelTampered, match="failed authentication"):
            reader.next_message(1.0)
        replay = sender(write_fd, key)  # the right key, but numbering from 0 again
        replay({"event": "done"})
        with pytest.raises(ChannelTampered, match="where 2 was due"):
            reader.next_message(1.0)
        os.write(write_fd, b'{"n": 2')
        os.close(write_fd)
        with pytest.raises(ChannelTampered, match="ended inside a message"):
            reader.next_message(1.0)
    finally:
        reader.close()


def test_measure_job_round_trips_as_json() -> None:
    job = MeasureJob("p", CandidateRef("file", "/c.py"), ["a", "fuzz.x=1@a"], "cpu", 3, 3, True, True, True, 0.9,
                     0, 5e11, 3, 42, fuzz_shape_ids=["fuzz.x=1@a"], seeds=[7])
    assert MeasureJob.from_json(json.loads(json.dumps(job.to_json()))) == job
    assert MeasureJob.from_json(job.to_json() | {"a_newer_field": 1}) == job


def test_integrity_snapshot_sees_class_attributes_and_replaced_code() -> None:
    snapshot = IntegritySnapshot()
    original = tolerance.compare_outputs.__code__
    try:
        tolerance.Comparison.ok = property(lambda self: True, lambda self, value: None)  # type: ignore[assignment]
        assert "aka_tui.bench.problem.tolerance.Comparison.ok" in snapshot.changed()
    finally:
        del tolerance.Comparison.ok
    try:
        tolerance.compare_outputs.__code__ = (lambda *args: None).__code__
        assert "aka_tui.bench.problem.tolerance.compare_outputs" in snapshot.changed()
    finally:
        tolerance.compare_outputs.__code__ = original
    assert snapshot.changed() == []


def test_static_scan_holds_code_that_reads_the_harness_even_behind_aliases() -> None:
    source = '''
import gc, sys, os as o
from time import perf_counter as clock
import triton, triton.language as tl
from aka_tui.bench.problem import tolerance

@triton.jit
def _k(x_ptr):
    f = sys._getframe(1)

def forward(x):
    clock(); o.write(3, b"x"); open("/proc/self/fd")
    getattr(o, "wr" + "ite"); eval("1"); x.__globals__
    return torch._C._autograd._profiler_enabled()
'''
    found = {(f.kind, f.suspicious) for f in scan_source(source)}
    for kind in ("memory-access", "harness-import", "frame-inspection", "clock-read", "fd-access", "dynamic-code",
                 "introspection", "harness-state"):
        assert (kind, True) in found, kind
    honest = "import torch, triton, math\nfrom torch import nn\nclass Model(nn.Module):\n    def forward(self, x):\n" \
             "        return getattr(torch, 'bfloat16')\n"
    assert not [f for f in scan_source(honest) if f.suspicious]


def test_a_case_that_runs_out_of_memory_is_built_again_without_the_kept_cases(monkeypatch: Any) -> None:
    from aka_tui.bench.measure.cases import ShapeCases

    cases = ShapeCases.__new__(ShapeCases)  # only the keeping of cases is under test
    cases.device, cases._cases = "cpu", {}
    built: list[tuple[int, list[int]]] = []

    def build(index: int) -> Any:
        built.append((index, sorted(cases._cases)))
        if len(cases._cases) > 1:  # room for one kept case besides the first
            raise MeasureFailure("problem_error", "reference", "OutOfMemoryError in the problem's reference: ...")
        return f"case {index}"

    monkeypatch.setattr(cases, "_build", build)
    assert [cases.case(i) for i in (0, 1, 2)] == ["case 0", "case 1", "case 2"]
    assert sorted(cases._cases) == [0, 2] and built[-2:] == [(2, [0, 1]), (2, [0])]
    assert cases.case(1) == "case 1" and sorted(cases._cases) == [0, 1]  # rebuilt when needed again

    def other_failure(index: int) -> Any:
        raise MeasureFailure("problem_error", "reference", "ValueError in the problem's reference: bad shape")

    monkeypatch.setattr(cases, "_build", other_failure)
    with pytest.raises(MeasureFailure):
        cases.case(3)
    assert sorted(cases._cases) == [0, 1]  # nothing dropped for a failure that is not memory


def test_a_reference_out_of_memory_on_a_gpu_is_tried_once_more_after_the_cache_is_emptied(monkeypatch: Any) -> None:
    from aka_tui.bench.measure import cases as cases_module

    cases = cases_module.ShapeCases.__new__(cases_module.ShapeCases)
    cases.device, cases._cases = "cuda", {}
    emptied: list[bool] = []
    monkeypatch.setattr(cases_module.torch.cuda, "empty_cache", lambda: emptied.append(True))
    attempts: list[int] = []

    def build(index: int) -> Any:  # the first try runs out of memory (fragments of an earlier shape), the next fits
        attempts.append(index)
        if len(attempts) == 1:
            raise MeasureFailure("problem_error", "reference", "OutOfMemoryError in the problem's reference: ...")
        return f"case {index}"

    monkeypatch.setattr(cases, "_build", build)
    assert cases.case(0) == "case 0" and attempts == [0, 0] and emptied == [True]

    def always(index: int) -> Any:
        attempts.append(index)
        raise MeasureFailure("problem_error", "reference", "OutOfMemoryError in the problem's reference: ...")

    monkeypatch.setattr(cases, "_build", always)
    attempts.clear()
    with pytest.raises(MeasureFailure):
        cases.case(1)
    assert attempts == [1, 1]  # once more, not forever
    cases.device, attempts[:] = "cpu", []
    with pytest.raises(MeasureFailure, match="OutOfMemoryError"):
        cases.case(2)
    assert attempts == [2]  # on the CPU with nothing kept there is no room to make
