"""Link GPU kernels in a Kineto trace to the CPU ops and `aka:` annotations that launched them.

Kineto (torch.profiler) writes complete events (`ph: "X"`) with a `cat`:
- `cpu_op` (aten ops; `args["Input Dims"]` with record_shapes) and `user_annotation` (record_function
  ranges) on CPU threads, each with an `External id`;
- `cuda_runtime` / `cuda_driver` launch calls on CPU threads with `args.correlation` (and the External id of
  the innermost enclosing CPU op);
- `kernel` / `gpu_memcpy` / `gpu_memset` on (device, stream) with the same `correlation` and `External id`;
- `gpu_user_annotation`: the GPU-side span of a record_function range on a stream;
- flow events `ph: "s"`/`"f"`, `cat: "ac2g"`, `id` = correlation, from the launch to the kernel.
A kernel is linked to its launch by correlation (runtime event, else the flow start), else by External id
to a CPU op, else by time containment in a `gpu_user_annotation` on its device; the enclosing CPU ranges at
the launch give the `aka:` annotation and the innermost CPU op (name, input dims).
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

ANNOTATION_PREFIX = "aka:"
GPU_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
CPU_RANGE_CATS = frozenset({"cpu_op", "user_annotation"})
LAUNCH_CATS = frozenset({"cuda_runtime", "cuda_driver", "runtime", "hip_runtime", "xpu_runtime"})


def parse_annotation(name: str) -> tuple[str, str] | None:
    """`aka:<op>:<shape-or-tag>` → (op, shape); `aka:<op>` → (op, "-"); anything else → None."""
    if not name.startswith(ANNOTATION_PREFIX):
        return None
    parts = name[len(ANNOTATION_PREFIX):].split(":", 1)
    op = parts[0].strip()
    if not op:
        return None
    shape = parts[1].strip() if len(parts) > 1 and parts[1].strip() else "-"
    return op, shape


def dims_signature(op_name: str, args: dict[str, Any]) -> str:
    """`aten::mm[64x128,128x256]` from a CPU op's recorded input dims (`-` for non-tensor arguments)."""
    dims = args.get("Input Dims", args.get("Input dims"))
    if not isinstance(dims, list):
        return f"{op_name}[?]"
    parts = []
    for d in dims:
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
            parts.append("x".join(str(x) for x in d))
        elif isinstance(d, list) and not d:
            parts.append("-")
        else:
            parts.append("?")
    return f"{op_name}[{','.join(parts)}]"


@dataclass(frozen=True)
class CpuRange:
    """A CPU-side range (cpu_op or user_annotation) on one thread."""

    name: str
    cat: str
    start: float
    end: float
    args: dict[str, Any]
    index: int  # position in traceEvents (identity)

    @property
    def annotation(self) -> tuple[str, str] | None:
        return parse_annotation(self.name) if self.cat == "user_annotation" else None


@dataclass
class KernelLink:
    """One GPU activity and what it was linked to."""

    name: str
    cat: str
    dur_us: float
    link: str  # "correlation", "flow", "external_id", "gpu_annotation", "none"
    annotation: tuple[str, str] | None = None
    annotation_index: int | None = None  # the annotation range's identity (counts calls)
    cpu_op: str | None = None
    cpu_signature: str | None = None


@dataclass
class TraceIndex:
    """Per-thread CPU ranges, launch points by correlation, GPU activities and counts."""

    threads: dict[tuple[Any, Any], list[CpuRange]] = field(default_factory=dict)
    launches: dict[Any, tuple[tuple[Any, Any], float]] = field(default_factory=dict)
    flows: dict[Any, tuple[tuple[Any, Any], float]] = field(default_factory=dict)
    by_external_id: dict[Any, tuple[tuple[Any, Any], CpuRange]] = field(default_factory=dict)
    gpu_annotations: dict[Any, list[tuple[float, float, str]]] = field(default_factory=dict)
    kernels: list[dict[str, Any]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    # How many times each (op, shape) was called: CPU-side `aka:` ranges, else GPU-side ones.
    cpu_calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    gpu_calls: Counter[tuple[str, str]] = field(default_factory=Counter)

    def annotated_calls(self) -> Counter[tuple[str, str]]:
        return self.cpu_calls if self.cpu_calls else self.gpu_calls


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def build_index(events: Iterable[Any]) -> TraceIndex:
    """One pass over traceEvents; malformed individual events are counted and skipped."""
    index = TraceIndex()
    threads: dict[tuple[Any, Any], list[CpuRange]] = defaultdict(list)
    gpu_ann: dict[Any, list[tuple[float, float, str]]] = defaultdict(list)
    for i, e in enumerate(events):
        index.counts["events"] += 1
        if not isinstance(e, dict):
            index.counts["malformed"] += 1
            continue
        ph = e.get("ph")
        if ph in ("s", "f") and str(e.get("cat", "")).lower() == "ac2g":
            if ph == "s" and _num(e.get("ts")) is not None:
                index.flows[e.get("id")] = ((e.get("pid"), e.get("tid")), float(e["ts"]))
                index.counts["flows"] += 1
            continue
        if ph != "X":
            continue
        cat = str(e.get("cat", "")).lower()
        ts, dur = _num(e.get("ts")), _num(e.get("dur"))
        if ts is None or dur is None:
            index.counts["malformed"] += 1
            continue
        raw_args = e.get("args")
        args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        name = str(e.get("name", ""))
        thread = (e.get("pid"), e.get("tid"))
        if cat in GPU_CATS:
            index.kernels.append({"name": name, "cat": cat, "ts": ts, "dur": dur, "pid": e.get("pid"),
                                  "correlation": args.get("correlation"), "external_id": args.get("External id")})
            index.counts[cat] += 1
        elif cat in CPU_RANGE_CATS:
            rng = CpuRange(name, cat, ts, ts + dur, args, i)
            threads[thread].append(rng)
            if "External id" in args:
                index.by_external_id.setdefault(args["External id"], (thread, rng))
            index.counts[cat] += 1
            if rng.annotation:
                index.counts["aka_annotations"] += 1
                index.cpu_calls[rng.annotation] += 1
        elif cat == "gpu_user_annotation":
            parsed = parse_annotation(name)
            if parsed:  # only `aka:` spans can attribute a kernel
                gpu_ann[e.get("pid")].append((ts, ts + dur, name))
                index.gpu_calls[parsed] += 1
            index.counts[cat] += 1
        elif cat in LAUNCH_CATS or "correlation" in args:
            if "correlation" in args:
                index.launches[args["correlation"]] = (thread, ts)
            index.counts["launches"] += 1
    for ranges in threads.values():
        ranges.sort(key=lambda r: (r.start, -(r.end - r.start)))
    index.threads = dict(threads)
    index.gpu_annotations = {k: sorted(v) for k, v in gpu_ann.items()}
    return index


def enclosing(ranges: list[CpuRange], queries: list[tuple[float, int]]) -> dict[int, list[CpuRange]]:
    """For each (time, key) query, the ranges of one thread that contain that time, outermost first.

    Profiler ranges on a thread nest, so a sweep with a stack answers every query in one pass.
    """
    result: dict[int, list[CpuRange]] = {}
    stack: list[CpuRange] = []
    i = 0
    for t, key in sorted(queries):
        while i < len(ranges) and ranges[i].start <= t:
            while stack and stack[-1].end < ranges[i].start:
                stack.pop()
            stack.append(ranges[i])
            i += 1
        while stack and stack[-1].end < t:
            stack.pop()
        result[key] = [r for r in stack if r.start <= t <= r.end]
    return result


def _gpu_annotation_at(spans: list[tuple[float, float, str]], longest: float, t: float) -> str | None:
    """The innermost (latest-starting) `aka:` GPU-side span containing t; spans sorted by start."""
    i = bisect.bisect_right(spans, (t, float("inf"), "\uffff")) - 1
    while i >= 0 and spans[i][0] >= t - longest:  # no span starting earlier can reach t
        if spans[i][1] >= t:
            return spans[i][2]
        i -= 1
    return None


def link_kernels(index: TraceIndex) -> list[KernelLink]:
    """Attribute every GPU activity of the trace to its launching annotation and CPU op (where found)."""
    links: list[KernelLink] = []
    queries: dict[tuple[Any, Any], list[tuple[float, int]]] = defaultdict(list)
    for k_idx, k in enumerate(index.kernels):
        corr = k["correlation"]
        how = "none"
        where: tuple[tuple[Any, Any], float] | None = None
        if corr is not None and corr in index.launches:
            where, how = index.launches[corr], "correlation"
        elif corr is not None and corr in index.flows:
            where, how = index.flows[corr], "flow"
        elif k["external_id"] is not None and k["external_id"] in index.by_external_id:
            thread, rng = index.by_external_id[k["external_id"]]
            where, how = (thread, rng.start), "external_id"
        links.append(KernelLink(k["name"], k["cat"], k["dur"], how))
        if where is not None:
            queries[where[0]].append((where[1], k_idx))
    for thread, qs in queries.items():
        found = enclosing(index.threads.get(thread, []), qs)
        for k_idx, stack in found.items():
            link = links[k_idx]
            for rng in reversed(stack):
                if link.annotation is None and rng.annotation:
                    link.annotation, link.annotation_index = rng.annotation, rng.index
                if link.cpu_op is None and rng.cat == "cpu_op":
                    link.cpu_op, link.cpu_signature = rng.name, dims_signature(rng.name, rng.args)
    longest = {pid: max(end - start for start, end, _ in spans) for pid, spans in index.gpu_annotations.items()}
    for k_idx, link in enumerate(links):
        if link.annotation is None and index.gpu_annotations:
            k = index.kernels[k_idx]
            spans = index.gpu_annotations.get(k["pid"], [])
            name = _gpu_annotation_at(spans, longest.get(k["pid"], 0.0), k["ts"]) if spans else None
            if name:
                link.annotation = parse_annotation(name)
                if link.link == "none":
                    link.link = "gpu_annotation"
    return links


@dataclass
class CpuSpan:
    """CPU-time fallback unit: an outermost `aka:` range, or an unannotated top-level CPU op."""

    name: str
    dur_us: float
    annotation: tuple[str, str] | None
    signature: str | None


def cpu_spans(index: TraceIndex) -> list[CpuSpan]:
    """Outermost `aka:` annotation ranges and top-level CPU ops outside any of them (CPU-time fallback)."""
    spans: list[CpuSpan] = []
    for ranges in index.threads.values():
        stack: list[CpuRange] = []
        for rng in ranges:
            while stack and stack[-1].end <= rng.start:
                stack.pop()
            inside_aka = any(r.annotation for r in stack)
            inside_op = any(r.cat == "cpu_op" for r in stack)
            if rng.annotation and not inside_aka:
                spans.append(CpuSpan(rng.name, rng.end - rng.start, rng.annotation, None))
            elif rng.cat == "cpu_op" and not inside_aka and not inside_op:
                spans.append(CpuSpan(rng.name, rng.end - rng.start, None, dims_signature(rng.name, rng.args)))
            stack.append(rng)
    return spans
