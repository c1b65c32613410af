"""Gluon kernels are the candidate's own kernels to the audit: they launch through `JITFunction.run`, where the
launch recorder sits, so a candidate's Gluon path is counted (and named) like its Triton kernels. On this CPU
machine the launch itself fails after the recorder has seen it (no GPU to compile for)."""

from __future__ import annotations

import torch

from aka_tui.bench.measure.audit import TritonLaunchRecorder
from tests.bench.kernels.gluon_copy_kernel import gluon_copy_kernel


def test_the_launch_recorder_counts_gluon_launches() -> None:
    recorder = TritonLaunchRecorder()
    with recorder.installed(), recorder.recording(None):
        x = torch.arange(128, dtype=torch.float32)
        try:
            gluon_copy_kernel[(1,)](x, torch.empty_like(x), BLOCK=128)
        except Exception:  # no GPU here: Gluon has no interpreter form
            pass
        launches = dict(recorder.launches)
    assert launches == {("tests.bench.kernels.gluon_copy_kernel", "gluon_copy_kernel"): 1}
