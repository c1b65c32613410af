"""Build synthetic Kineto-shaped traces (the structure torch.profiler writes with CUDA activities)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CPU_PID, CPU_TID, GPU_PID, STREAM = 4242, 4242, 0, 7


@dataclass
class KinetoBuilder:
    """Appends CPU ranges, launches, kernels and flow events with consistent ids."""

    events: list[dict[str, Any]] = field(default_factory=list)
    next_external: int = 1
    next_correlation: int = 1000
    gpu_clock: float = 1_000_000.0

    def range(self, cat: str, name: str, ts: float, dur: float, dims: list[list[int]] | None = None) -> int:
        ext = self.next_external
        self.next_external += 1
        args: dict[str, Any] = {"External id": ext, "Record function id": 0}
        if dims is not None:
            args["Input Dims"] = dims
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": CPU_PID, "tid": CPU_TID, "ts": ts,
                            "dur": dur, "args": args})
        return ext

    def launch(self, ts: float, external: int, kernel: str, dur: float, *, runtime: bool = True, flow: bool = True,
               correlation: bool = True, cat: str = "kernel") -> None:
        corr = self.next_correlation
        self.next_correlation += 1
        if runtime:
            self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": CPU_PID,
                                "tid": CPU_TID, "ts": ts, "dur": 3.0,
                                "args": {"External id": external, "cbid": 211, "correlation": corr}})
        kts = self.gpu_clock
        self.gpu_clock += dur + 5.0
        kargs: dict[str, Any] = {"External id": external, "device": 0, "stream": STREAM, "queued": 0}
        if correlation:
            kargs["correlation"] = corr
        self.events.append({"ph": "X", "cat": cat, "name": kernel, "pid": GPU_PID, "tid": STREAM, "ts": kts,
                            "dur": dur, "args": kargs})
        if flow:
            self.events.append({"ph": "s", "id": corr, "pid": CPU_PID, "tid": CPU_TID, "ts": ts, "cat": "ac2g",
                                "name": "ac2g"})
            self.events.append({"ph": "f", "id": corr, "pid": GPU_PID, "tid": STREAM, "ts": kts, "cat": "ac2g",
                                "name": "ac2g", "bp": "e"})

    def orphan_kernel(self, kernel: str, dur: float, gpu_annotation: str | None = None) -> None:
        """A kernel with no CPU link at all, optionally inside a gpu_user_annotation span."""
        kts = self.gpu_clock
        self.gpu_clock += dur + 5.0
        if gpu_annotation:
            self.events.append({"ph": "X", "cat": "gpu_user_annotation", "name": gpu_annotation, "pid": GPU_PID,
                                "tid": STREAM, "ts": kts - 1.0, "dur": dur + 2.0, "args": {"External id": 0}})
        self.events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": GPU_PID, "tid": STREAM, "ts": kts,
                            "dur": dur, "args": {"device": 0, "stream": STREAM}})

    def annotated_call(self, annotation: str, ts: float, kernels: list[tuple[str, float]],
                       cpu_op: str = "aten::custom", dims: list[list[int]] | None = None) -> float:
        """An `aka:` range holding one CPU op that launches `kernels`; returns the end time."""
        self.range("user_annotation", annotation, ts, 100.0 * (len(kernels) + 1))
        op_ext = self.range("cpu_op", cpu_op, ts + 5.0, 100.0 * len(kernels) + 50.0, dims or [[8, 16]])
        for i, (name, dur) in enumerate(kernels):
            self.launch(ts + 10.0 + 100.0 * i, op_ext, name, dur)
        return ts + 100.0 * (len(kernels) + 1) + 10.0

    def trace(self, **extra: Any) -> dict[str, Any]:
        meta = [{"ph": "M", "name": "process_name", "pid": CPU_PID, "tid": 0, "args": {"name": "python"}},
                {"ph": "M", "name": "process_name", "pid": GPU_PID, "tid": 0, "args": {"name": "GPU 0"}}]
        return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Synthetic H200"}],
                "record_shapes": 1, "traceEvents": meta + self.events, **extra}
