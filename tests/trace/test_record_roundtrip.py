"""A trace recorded on the CPU in the test round-trips through import: weights reproduce annotated shares."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from aka_tui.trace.record import RecordOptions, record, step_phases
from aka_tui.trace.rules import load_rules
from aka_tui.trace.weights import ImportOptions, import_trace


@pytest.fixture(scope="module")
def cpu_trace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("rec") / "cpu.json.gz"
    meta = record(RecordOptions(out=out, device="cpu", steps=4, warmup_steps=1))
    return out, meta


def _annotated_times(path: Path) -> dict[str, dict[str, float]]:
    """Independent of the importer: CPU duration of every `aka:` user_annotation, per op and shape."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    times: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "user_annotation" and e["name"].startswith("aka:"):
            _, op, shape = e["name"].split(":", 2)
            times[op][shape] += e["dur"]
    return times


def test_record_writes_a_gzipped_trace_with_the_workload_mix(cpu_trace: tuple[Path, dict]) -> None:
    path, meta = cpu_trace
    data = json.loads(gzip.decompress(path.read_bytes()))
    workload = data["aka_workload"]
    assert workload == meta
    assert workload["tier"] == "smoke" and workload["time_source"] == "cpu" and workload["failures"] == {}
    assert (workload["steps"], workload["prefill_steps"], workload["decode_steps"]) == (4, 1, 3)
    assert workload["step_phases"] == step_phases(4, workload["decode_per_prefill"])
    assert any(c.startswith("dense/rms_norm:smoke_") for c in workload["calls"]["decode"])
    assert data["record_shapes"] == 1


def test_import_reproduces_the_annotated_time_shares(cpu_trace: tuple[Path, dict]) -> None:
    path, meta = cpu_trace
    doc = import_trace(path, load_rules(), ImportOptions(coverage=1.0))
    expected = _annotated_times(path)
    total = sum(t for shapes in expected.values() for t in shapes.values())
    prov = doc["provenance"]
    assert prov["time_source"] == "cpu" and prov["workload"]["name"] == meta["name"]
    assert len(prov["trace_sha256"]) == 64
    assert prov["total_time_us"] == pytest.approx(total, rel=1e-6)
    assert set(doc["ops"]) == set(expected) and len(expected) == 22  # every suite op ran
    for op, shapes in expected.items():
        op_time = sum(shapes.values())
        assert doc["ops"][op]["importance"] == pytest.approx(100 * op_time / total, abs=1e-4), op
        for shape, t in shapes.items():
            assert doc["ops"][op]["shapes"][shape]["weight"] == pytest.approx(t / op_time, abs=1e-5), (op, shape)
    assert doc["unknown_share"] == 0.0


def test_decode_and_prefill_steps_use_different_smoke_shapes(cpu_trace: tuple[Path, dict]) -> None:
    path, _ = cpu_trace
    expected = _annotated_times(path)
    assert len(expected["rms_norm"]) == 2  # decode: first smoke shape, prefill: last
    assert len(expected["attention_prefill_varlen"]) == 1  # prefill-only op
