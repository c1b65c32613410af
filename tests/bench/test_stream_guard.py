"""The launch recorder's stream guard: during timing every Triton launch must go to the timed stream.

CPU test: the interpreter runs the kernel and `torch.cuda.current_stream` is replaced by a stand-in that
reports which stream is current, which is all the guard reads. The GPU path is covered by the red-team case
`saturation_aware_side_stream` (tests/redteam, `gpu` marker).
"""

from __future__ import annotations

import types
from typing import Iterator

import pytest
import torch

from aka_tui.bench.measure.audit import TritonLaunchRecorder
from tests.bench.kernels.copy_kernel import copy_kernel


@pytest.fixture()
def recorder() -> Iterator[TritonLaunchRecorder]:
    rec = TritonLaunchRecorder()
    rec.install()
    try:
        yield rec
    finally:
        rec.uninstall()  # the class patch and the wrapped read-backs, for the rest of the session


def _launch() -> None:
    x = torch.arange(64, dtype=torch.float32)
    y = torch.empty_like(x)
    copy_kernel[(1,)](x, y, 64, BLOCK=64)
    assert torch.equal(x, y)


def test_launches_off_the_timed_stream_are_counted(recorder: TritonLaunchRecorder,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    current = {"handle": 7}
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: types.SimpleNamespace(
        cuda_stream=current["handle"]))
    with recorder.guarding_stream(7):
        _launch()  # on the timed stream
        assert not recorder.off_stream
        current["handle"] = 9  # what `with torch.cuda.stream(side):` does
        _launch()
        _launch()
    assert dict(recorder.off_stream) == {"tests.bench.kernels.copy_kernel.copy_kernel": 2}
    assert recorder.timed_stream is None
    _launch()  # outside timing nothing is checked
    assert sum(recorder.off_stream.values()) == 2


def test_no_guard_no_stream_lookups(recorder: TritonLaunchRecorder, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_a: object, **_k: object) -> None:
        raise AssertionError("current_stream looked up outside timing")

    monkeypatch.setattr(torch.cuda, "current_stream", fail)
    _launch()


def test_recorder_counts_its_own_time_inside_launches(recorder: TritonLaunchRecorder) -> None:
    """What the recorder does inside a launch is added up apart, so the timing can leave it out of a call's
    host time (the candidate's cost to a caller)."""
    ticks = iter(float(t) for t in range(100))
    recorder._clock = lambda: next(ticks)  # every reading one second later than the last
    recorder.begin_call()
    _launch()
    assert recorder.own_seconds > 0 and recorder.own_seconds == int(recorder.own_seconds)
    assert len(recorder.end_call()) == 1
