"""Aggregate linked trace time per (operator, shape), apply the coverage rule, write trace_weights.json/.md."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from aka_tui import __version__
from aka_tui.errors import TraceError
from aka_tui.trace.link import TraceIndex, build_index, cpu_spans, link_kernels
from aka_tui.trace.load import file_sha256, read_trace
from aka_tui.trace.rules import RuleSet

WEIGHTS_FORMAT = "aka-trace-weights/1"


@dataclass(frozen=True)
class ImportOptions:
    """How to turn a trace into weights."""

    coverage: float = 0.9  # keep the largest shapes of an op until they cover this share of its time
    max_shapes: int | None = None  # ...but never more than this many
    time_source: str = "auto"  # "gpu" (kernel time), "cpu" (annotated CPU ranges), "auto" (gpu if kernels)
    basis: str = "observed"  # "observed": measured time; "roofline": annotated calls × T_SOL of their shape
    suite_dir: Path | None = None  # roofline basis: where the problems' roofline caches are
    hardware: str | None = None  # roofline basis: profile name (default: matched from the trace's GPU name)
    launch_floor_us: float | None = None  # roofline basis: no call takes less than one launch (None: profile's)


@dataclass
class _Acc:
    time_us: float = 0.0
    kernels: int = 0
    calls: set[Any] = field(default_factory=set)
    names: dict[str, float] = field(default_factory=lambda: defaultdict(float))


def select_shapes(times: dict[str, float], coverage: float, max_shapes: int | None) -> list[str]:
    """The largest shapes (by time, ties by id) until their sum reaches `coverage` of the total, capped."""
    order = sorted(times, key=lambda s: (-times[s], s))
    total = sum(times.values())
    kept: list[str] = []
    acc = 0.0
    for shape in order:
        if (max_shapes is not None and len(kept) >= max_shapes) or (kept and acc >= coverage * total * (1 - 1e-12)):
            break
        kept.append(shape)
        acc += times[shape]
    return kept


@dataclass
class _Tally:
    """Linked time per (op, shape), how each op was mapped, the time no rule matched and the kernels' link kinds."""

    per_op: dict[str, dict[str, _Acc]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(_Acc)))
    via: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    unknown: dict[str, _Acc] = field(default_factory=lambda: defaultdict(_Acc))
    links: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def total_us(self) -> float:
        return sum(a.time_us for shapes in self.per_op.values() for a in shapes.values())

    def unknown_us(self) -> float:
        return sum(a.time_us for a in self.unknown.values())


def import_trace(path: str | Path, rules: RuleSet, options: ImportOptions) -> dict[str, Any]:
    """Read, link and aggregate a trace; returns the weights document (see docs/trace.md)."""
    _check_options(options)
    path = Path(path)
    data = read_trace(path)
    index = build_index(data["traceEvents"])
    source = _time_source(index, options.time_source, path)
    tally = _tally_kernels(index, rules) if source == "gpu" else _tally_cpu_spans(index)
    observed_total = tally.total_us() + tally.unknown_us()
    if observed_total <= 0:
        raise TraceError(f"trace {path} has no timed activity to attribute")
    unknown_share = tally.unknown_us() / observed_total
    basis_note: dict[str, Any] = {"basis": options.basis}
    if options.basis == "roofline":
        basis_note.update(_retime_by_roofline(tally.per_op, index.annotated_calls(), data, options))
        total = tally.total_us()
        if total <= 0:
            raise TraceError(f"trace {path}: no annotated call has a cached roofline to time it by")
    elif options.basis == "observed":
        total = observed_total
    else:
        raise TraceError(f"unknown basis {options.basis!r}: use observed or roofline")
    ops = {op: _op_entry(shapes, tally.via[op], total, options)
           for op, shapes in sorted(tally.per_op.items(), key=lambda kv: -sum(a.time_us for a in kv[1].values()))}
    unknown_rows = [{"name": n, "time_us": round(a.time_us, 3), "count": a.kernels,
                     "share": round(a.time_us / observed_total, 6)}
                    for n, a in sorted(tally.unknown.items(), key=lambda kv: -kv[1].time_us)]
    meta = {k: data[k] for k in ("deviceProperties", "record_shapes", "trace_id") if k in data}
    provenance = {
        "trace": str(path), "trace_sha256": file_sha256(path), "time_source": source,
        **basis_note, "total_time_us": round(total, 3), "events": dict(sorted(index.counts.items())),
        "kernel_links": dict(sorted(tally.links.items())), "rules": list(rules.sources),
        "rules_sha256": rules.sha256, "coverage": options.coverage, "max_shapes": options.max_shapes,
        "imported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "aka_version": __version__,
        "trace_metadata": meta,
    }
    if isinstance(data.get("aka_workload"), dict):
        provenance["workload"] = data["aka_workload"]
    return {"format": WEIGHTS_FORMAT, "provenance": provenance, "ops": ops,
            "unknown_share": round(unknown_share, 6), "unknown": unknown_rows}


def _check_options(options: ImportOptions) -> None:
    if not 0 < options.coverage <= 1:
        raise TraceError(f"--coverage must be in (0, 1], not {options.coverage}")
    if options.max_shapes is not None and options.max_shapes < 1:
        raise TraceError(f"--max-shapes must be at least 1, not {options.max_shapes}")


def _time_source(index: TraceIndex, wanted: str, path: Path) -> str:
    """`gpu` or `cpu`: the one asked for (`auto`: gpu when the trace has kernels), if the trace can give it."""
    source = wanted
    if source == "auto":
        source = "gpu" if index.kernels else "cpu"
    if source == "gpu" and not index.kernels:
        raise TraceError(f"trace {path} has no GPU kernel events (a CPU-only trace?); use --time-source cpu")
    if source == "cpu" and not index.counts["aka_annotations"]:
        raise TraceError(f"trace {path} has no GPU kernels and no `aka:<op>:<shape>` annotations to time on the "
                         "CPU; record on a GPU, or wrap op calls in record_function (see docs/trace.md)")
    return source


def _tally_kernels(index: TraceIndex, rules: RuleSet) -> _Tally:
    """GPU time: each kernel to its `aka:<op>:<shape>` annotation, else to the op of the first rule it matches."""
    tally = _Tally()
    matched: dict[tuple[str, str | None], Any] = {}  # kernel names repeat: match each (name, cpu op) once
    for k in link_kernels(index):
        tally.links[k.link] += 1
        if k.annotation:
            op, shape = k.annotation
            acc, how = tally.per_op[op][shape], "annotation"
            acc.calls.add(k.annotation_index if k.annotation_index is not None else id(k))
        else:
            key = (k.name, k.cpu_op)
            rule = matched[key] if key in matched else matched.setdefault(key, rules.match(k.name, k.cpu_op))
            if rule is None:
                acc = tally.unknown[k.name]
                acc.time_us += k.dur_us
                acc.kernels += 1
                continue
            op, shape, how = rule.op, k.cpu_signature or "unknown-shape", "rule"
            acc = tally.per_op[op][shape]
            acc.calls.add(id(k))
        tally.via[op].add(how)
        acc.time_us += k.dur_us
        acc.kernels += 1
        acc.names[k.name] += k.dur_us
    return tally


def _tally_cpu_spans(index: TraceIndex) -> _Tally:
    """CPU time: each annotated range to its (op, shape); every other CPU op range is unknown."""
    tally = _Tally()
    for span in cpu_spans(index):
        if span.annotation:
            op, shape = span.annotation
            acc = tally.per_op[op][shape]
            acc.time_us += span.dur_us
            acc.calls.add(id(span))
            acc.names[span.name] += span.dur_us
            tally.via[op].add("annotation")
        else:
            acc = tally.unknown[f"cpu_op {span.name}"]
            acc.time_us += span.dur_us
            acc.kernels += 1
    return tally


def _op_entry(shapes: dict[str, _Acc], via: set[str], total: float, options: ImportOptions) -> dict[str, Any]:
    """One op's entry: its importance in the total, the shapes the coverage rule keeps and their weights."""
    op_time = sum(a.time_us for a in shapes.values())
    times = {s: a.time_us for s, a in shapes.items()}
    kept = select_shapes(times, options.coverage, options.max_shapes)
    kept_time = sum(times[s] for s in kept)
    names: dict[str, float] = defaultdict(float)
    for a in shapes.values():
        for n, t in a.names.items():
            names[n] += t
    return {
        "importance": round(100.0 * op_time / total, 6),
        "time_us": round(op_time, 3),
        "calls": sum(len(a.calls) for a in shapes.values()),
        "kernels": sum(a.kernels for a in shapes.values()),
        "mapped_by": sorted(via),
        "covered_share": round(kept_time / op_time, 6) if op_time > 0 else 1.0,
        "shapes": {s: {"weight": round(times[s] / op_time, 6) if op_time > 0 else 0.0,
                       "time_us": round(times[s], 3), "calls": len(shapes[s].calls),
                       "kernels": shapes[s].kernels} for s in kept},
        "dropped_shapes": {s: round(times[s] / op_time, 6) if op_time > 0 else 0.0
                           for s in sorted(times, key=lambda s: -times[s]) if s not in kept},
        "top_kernels": [{"name": n, "time_us": round(t, 3)}
                        for n, t in sorted(names.items(), key=lambda kv: -kv[1])[:5]],
    }


def _retime_by_roofline(per_op: dict[str, dict[str, _Acc]], calls: dict[tuple[str, str], int],
                        data: dict[str, Any], options: ImportOptions) -> dict[str, Any]:
    """Replace each annotated (op, shape)'s measured time by calls × T_SOL of that shape, in place.

    `calls` counts the `aka:<op>:<shape>` ranges themselves (not kernels), so a call is counted once however
    its kernels were linked. Each call takes at least `launch_floor_us` (one kernel launch): tiny ops are
    launch-bound in practice, and T_SOL alone would make them vanish from the suite.

    A workload recorded with the suite's own eager references over-weights the ops whose references are
    far from their roofline (naive attention, a per-expert MoE loop); timing each recorded call at its
    speed of light keeps the trace's op mix and shapes while removing that bias. Rule-mapped kernels have
    no suite shape, so they cannot be re-timed: they are dropped and listed.
    """
    from aka_tui.bench.problem.lookup import default_suite_dir, load_suite
    from aka_tui.bench.roofline.bound import bound
    from aka_tui.bench.roofline.hardware import get_profile, match_device_name

    suite = load_suite(options.suite_dir or default_suite_dir())
    profile = get_profile(options.hardware) if options.hardware else None
    if profile is None:
        names = [d.get("name", "") for d in data.get("deviceProperties") or [] if isinstance(d, dict)]
        matched = [m for m in (match_device_name(n) for n in names if n) if m is not None]
        if not matched:
            raise TraceError("roofline basis: the trace names no known GPU; pass --hardware PROFILE")
        profile = matched[0]
    floor_us = options.launch_floor_us if options.launch_floor_us is not None else (profile.empty_launch_us or 0.0)
    dropped: dict[str, float] = {}
    for op in list(per_op):
        problem = suite.problems.get(op)
        for shape_id in list(per_op[op]):
            acc = per_op[op][shape_id]
            entry = problem.roofline.get(shape_id) if problem else None
            count = calls.get((op, shape_id), 0)
            if entry is None or not count:
                dropped[f"{op}:{shape_id}"] = round(acc.time_us, 3)
                del per_op[op][shape_id]
                continue
            acc.time_us = count * max(bound(entry, profile).t_sol_s * 1e6, floor_us)
            acc.calls = set(range(count))
        if not per_op[op]:
            del per_op[op]
    return {"roofline_profile": profile.name, "launch_floor_us": floor_us, "not_retimed_us": dropped}


def render_markdown(doc: dict[str, Any], max_unknown: int = 20) -> str:
    """A human summary of a weights document."""
    prov = doc["provenance"]
    lines = [f"# Trace weights: {Path(prov['trace']).name}", "",
             f"- sha256 `{prov['trace_sha256']}`; time source **{prov['time_source']}**"
             + (" (CPU time of annotated ranges: not GPU-time shares)" if prov["time_source"] == "cpu" else ""),
             f"- total attributed time {prov['total_time_us'] / 1e3:.3f} ms; events "
             + ", ".join(f"{k} {v}" for k, v in prov["events"].items()),
             "- kernel links: " + (", ".join(f"{k} {v}" for k, v in prov["kernel_links"].items()) or "n/a"),
             f"- coverage {prov['coverage']:.0%}, max shapes {prov['max_shapes'] or 'unlimited'}; rules "
             + ", ".join(prov["rules"]), ""]
    if "workload" in prov:
        w = prov["workload"]
        lines += [f"- workload: {w.get('name', '?')} on {w.get('device', '?')}, tier {w.get('tier', '?')}, "
                  f"steps {w.get('steps', '?')} ({w.get('prefill_steps', '?')} prefill, "
                  f"{w.get('decode_steps', '?')} decode)", ""]
    lines += ["| op | importance % | time ms | calls | mapped by | shapes kept | covered |", "|---|---|---|---|---|---|---|"]
    for op, o in doc["ops"].items():
        lines.append(f"| {op} | {o['importance']:.3f} | {o['time_us'] / 1e3:.3f} | {o['calls']} | "
                     f"{'/'.join(o['mapped_by'])} | {len(o['shapes'])} (+{len(o['dropped_shapes'])} dropped) | "
                     f"{o['covered_share']:.1%} |")
    lines += ["", "## Shapes", ""]
    for op, o in doc["ops"].items():
        lines.append(f"- **{op}**: " + ", ".join(f"`{s}` {v['weight']:.3f}" for s, v in o["shapes"].items()))
    lines += ["", f"## Unknown (no rule matched): {doc['unknown_share']:.2%} of the time", ""]
    if doc["unknown"]:
        lines += ["| kernel | share | time ms | count |", "|---|---|---|---|"]
        for u in doc["unknown"][:max_unknown]:
            lines.append(f"| `{u['name'][:100]}` | {u['share']:.2%} | {u['time_us'] / 1e3:.3f} | {u['count']} |")
        if len(doc["unknown"]) > max_unknown:
            rest = sum(u["share"] for u in doc["unknown"][max_unknown:])
            lines.append(f"| … {len(doc['unknown']) - max_unknown} more | {rest:.2%} | | |")
    else:
        lines.append("none")
    return "\n".join(lines) + "\n"


def write_weights(doc: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """Write trace_weights.json and trace_weights.md into `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "trace_weights.json", out_dir / "trace_weights.md"
    json_path.write_text(json.dumps(doc, indent=1) + "\n")
    md_path.write_text(render_markdown(doc))
    return json_path, md_path


def read_weights(path: Path) -> dict[str, Any]:
    """Load and check a weights document written by `aka trace import`."""
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise TraceError(f"weights file {path} does not exist (write one with `aka trace import`)") from None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(f"weights file {path} is unreadable: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != WEIGHTS_FORMAT or not isinstance(doc.get("ops"), dict):
        raise TraceError(f"{path} is not an `aka trace import` weights file (format {WEIGHTS_FORMAT})")
    return doc
