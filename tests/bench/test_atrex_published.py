"""Published Atrex-Bench directories: the real subset loads as published, malformed ones give one line each,
W per dtype, counted gaps, weights, S_e2e, the shrunk smoke shapes and the paper table."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from aka_tui.bench.measure.results import TimingStats
from aka_tui.bench.measure.timing import Timers
from aka_tui.bench.problem.atrex import importance_listing
from aka_tui.bench.problem.lookup import load_problem, load_suite
from aka_tui.bench.problem.model import RooflineEntry
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.problem.shrink import CPU_INPUT_BUDGET_BYTES, input_bytes
from aka_tui.bench.roofline.bound import bound
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.bench.scoring.score import e2e_time_ms
from aka_tui.environment import environment_snapshot
from tests.conftest import DATA, REPO
from tests.prefetch import Prefetch, prefetch, selected

SUBSET = REPO.parent / "shared" / "atrex-bench-subset"
FIXTURE = DATA / "atrex_published"
needs_subset = pytest.mark.skipif(not SUBSET.is_dir(), reason=f"the published subset is not at {SUBSET}")


def aka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aka_tui", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=900, env=environment_snapshot())


def _bench_and_paper_table_on_the_fixture(out: Path):  # type: ignore[no-untyped-def]
    benched = aka("bench", "--suite", str(FIXTURE), "--baseline", "eager", "--tier", "full", "--cases", "1",
                  "--out", str(out), "--name", "eager")
    table = aka("report", str(out / "eager.json"), "--name", "paper") if benched.returncode == 0 else None
    return benched, table, out


def _eager_on_the_smoke_shapes_of_the_subset(out: Path):  # type: ignore[no-untyped-def]
    benched = aka("bench", "--suite", str(SUBSET), "--baseline", "eager", "--tier", "smoke", "--cases", "1",
                  "--cpu-workers", "2", "--out", str(out), "--name", "smoke")
    return benched, out


CACHED_CANDIDATE = (
    "import torch\nimport torch.nn as nn\n\n\n"
    "class Model(nn.Module):\n"
    "    def __init__(self, cap: float = 30.0) -> None:\n"
    "        super().__init__()\n        self.cap = float(cap)\n        self.seen = {}\n\n"
    "    def forward(self, x, gain):\n"
    "        key = tuple(x.shape)\n"
    "        if key not in self.seen:\n"
    "            y = self.cap * torch.tanh(x.float() * gain.float() / self.cap)\n"
    "            self.seen[key] = {'y': y.to(x.dtype), 'row_absmax': y.abs().amax(dim=-1)}\n"
    "        return {k: v.clone() for k, v in self.seen[key].items()}\n")


def _naive_and_hardened_on_a_cached_candidate(out: Path):  # type: ignore[no-untyped-def]
    # a candidate that remembers its first answer: one input (the naive check) cannot tell; three seeded
    # cases per shape can
    candidates = out / "candidates"
    candidates.mkdir()
    (candidates / "scaled_tanh_rows.py").write_text(CACHED_CANDIDATE)
    benched = aka("bench", "--suite", str(FIXTURE), "--candidates", str(candidates), "--tier", "full", "--naive",
                  "--sandbox", "none", "--out", str(out), "--name", "cached")
    table = aka("report", str(out / "cached.json"), "--name", "paper") if benched.returncode == 0 else None
    return benched, table, out


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prefetch]:
    """The selected tests' `aka bench` runs, a few at a time (tests/prefetch.py): each is a process the test only
    waits on. The published subset's, longest, first."""
    jobs = {
        "test_eager_is_correct_on_a_smoke_sized_shape_of_every_published_operator": (
            "subset", lambda: _eager_on_the_smoke_shapes_of_the_subset(tmp_path_factory.mktemp("subset"))),
        "test_bench_report_and_paper_table_on_the_fixture": (
            "fixture", lambda: _bench_and_paper_table_on_the_fixture(tmp_path_factory.mktemp("fixture"))),
        "test_the_naive_pass_rate_column_shows_what_the_hardened_check_catches": (
            "cached", lambda: _naive_and_hardened_on_a_cached_candidate(tmp_path_factory.mktemp("cached"))),
    }
    wanted = [jobs[test] for test, _ in selected(request) if test in jobs]
    if not SUBSET.is_dir():
        wanted = [job for job in wanted if job[0] != "subset"]
    wanted.sort(key=lambda job: job[0] != "subset")
    with prefetch(wanted) as ahead:
        yield ahead


@needs_subset
def test_every_published_directory_of_the_subset_loads() -> None:
    suite = load_suite(SUBSET)
    directories = sorted(p.name for p in SUBSET.iterdir() if p.is_dir())
    assert not suite.errors, suite.errors
    assert sorted(suite.problems) == directories and len(directories) >= 20
    listed = importance_listing(SUBSET)
    for problem in suite.problems.values():
        assert problem.source_format == "atrex"
        assert problem.importance == pytest.approx(listed[problem.name])
        assert problem.shapes and all(isinstance(s.init_kwargs, dict) for s in problem.shapes.values())
        assert set(problem.roofline) == set(problem.shapes), problem.name  # every published W/Q was read
        assert problem.tier_size("smoke") == 1
    # The importance file lists operators whose directories are not here.
    assert set(listed) - set(suite.problems)


@needs_subset
def test_published_work_is_charged_to_the_path_of_its_dtype_key() -> None:
    suite = load_suite(SUBSET)
    paths = {p.name: {e.path for e in p.roofline.values()} for p in suite.problems.values()}
    for problem in suite.problems.values():
        raw = json.loads((problem.directory / "roofline.json").read_text())["shapes"]
        keys = {k for spec in raw.values() for k in (spec.get("semantic_W_flops") or {})}
        if not keys:  # integer-only work: bandwidth-bound, no compute path
            assert all(e.flops == 0 for e in problem.roofline.values())
        elif keys == {"fp8_e4m3"}:
            assert paths[problem.name] == {"fp8_tc"}
        elif keys == {"fp32"}:
            assert paths[problem.name] == {"fp32"}
    h200 = get_profile("h200")
    for problem in suite.problems.values():
        for shape_id, entry in problem.roofline.items():
            published = problem.published_sol_ms.get(shape_id, {})
            assert bound(entry, h200).t_sol_s > 0 and published


def test_the_fixture_reads_nulls_dicts_and_dtype_keys() -> None:
    problem = load_problem(FIXTURE / "scaled_tanh_rows")
    assert problem.shapes["0"].init_kwargs == {} and problem.shapes["1"].init_kwargs == {"cap": 10.0}
    assert problem.importance == pytest.approx(0.2)
    assert problem.output_dtypes["y"] == (torch.bfloat16, torch.float16)
    assert problem.production["0"][0].time_us == 4.0 and problem.published_sol_ms["0"]["H20"] == 0.003
    assert "2" not in problem.roofline and problem.roofline_partial["2"]["bytes_read"] is None
    two_paths = problem.roofline["1"]
    assert two_paths.work_by_path() == {"fp16_tc": 2500.0, "fp32": 500.0}
    h200 = get_profile("h200")
    expected = 2500 / h200.peak_flops_per_s("fp16_tc") + 500 / h200.peak_flops_per_s("fp32")
    assert bound(two_paths, h200).t_compute_s == pytest.approx(expected)
    assert RooflineEntry.from_json(two_paths.to_json()) == two_paths


def test_a_float32_output_of_fp8_inputs_is_held_to_the_fp8_tensor_core_precision() -> None:
    problem = load_problem(FIXTURE / "scaled_tanh_rows")
    problem.input_dtypes = {"a": (torch.float8_e4m3fn,), "a_scale": (torch.float32,)}
    loose = problem.tolerance_for(torch.float32)
    assert (loose.atol, loose.rtol) == (5e-3, 5e-3)  # float16's: fp8 products summed with ~14 mantissa bits
    problem.input_dtypes = {"a": (torch.float32,)}
    tight = problem.tolerance_for(torch.float32)
    assert (tight.atol, tight.rtol) == (1e-4, 1e-4)


MALFORMED = {
    "w_is_text": ("roofline.json", lambda d: d["shapes"]["0"].update(semantic_W_flops={"bf16": "many"}),
                  "W and Q must be non-negative numbers or null"),
    "w_unknown_dtype": ("roofline.json", lambda d: d["shapes"]["0"].update(semantic_W_flops={"fp3": 9}),
                        "unknown dtype key 'fp3'"),
    "init_is_a_list": ("shapes.json", lambda d: d["0"].update(init_kwargs=[1, 2]),
                       "init_kwargs and input_kwargs must be objects"),
    "no_dtype": ("metadata.json", lambda d: d.pop("dtype"), "missing field `dtype`"),
    "bad_tensor_dtype": ("metadata.json", lambda d: d["input_dtypes"].update(x="bf17"), "unknown dtype 'bf17'"),
}


def test_malformed_directories_give_one_line_each_and_the_rest_loads(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(FIXTURE, suite)
    for name, (file_name, corrupt, _) in MALFORMED.items():
        shutil.copytree(FIXTURE / "scaled_tanh_rows", suite / name)
        data = json.loads((suite / name / file_name).read_text())
        corrupt(data)
        (suite / name / file_name).write_text(json.dumps(data))
    (suite / "not_json").mkdir()
    shutil.copy(FIXTURE / "scaled_tanh_rows" / "reference.py", suite / "not_json")
    (suite / "not_json" / "metadata.json").write_text("{ nope")
    loaded = load_suite(suite)
    assert list(loaded.problems) == ["scaled_tanh_rows"]
    for name, (_, _, message) in MALFORMED.items():
        assert message in str(loaded.errors[name]), (name, loaded.errors[name])
    assert "invalid JSON at line 1" in str(loaded.errors["not_json"])
    listed = aka("problems", "--suite", str(suite))
    warnings = [line for line in listed.stderr.splitlines() if line.strip()]
    assert listed.returncode == 1 and len(warnings) == len(MALFORMED) + 1, listed.stderr
    assert all(line.startswith("warning: skipping problem ") for line in warnings)
    assert "Traceback" not in listed.stderr and "scaled_tanh_rows" in listed.stdout


def test_a_directory_without_rooflines_still_has_a_smoke_shape(tmp_path: Path) -> None:
    """No roofline.json (or null values): the smoke tier takes the shape whose integer arguments multiply to
    the least, and an evaluation there counts its roofline."""
    directory = tmp_path / "scaled_tanh_rows"
    shutil.copytree(FIXTURE / "scaled_tanh_rows", directory)
    (directory / "roofline.json").unlink()
    assert [s.shape_id for s in load_problem(directory).shapes_for("smoke")] == ["0"]  # 3 x 64 rows x cols
    shapes = json.loads((directory / "shapes.json").read_text())
    shapes["0"]["input_kwargs"]["rows"] = 40
    (directory / "shapes.json").write_text(json.dumps(shapes))
    assert [s.shape_id for s in load_problem(directory).shapes_for("smoke")] == ["1"]  # 5 x 100 now the least
    run = aka("eval", "eager", "--problem", str(directory), "--device", "cpu", "--fuzz", "0")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "correct=True" in run.stdout and "Traceback" not in run.stderr


def test_a_shape_too_large_for_the_interpreter_is_shrunk_and_replays() -> None:
    problem = load_problem(FIXTURE / "scaled_tanh_rows")
    module = import_file(problem.input_path, "inp_shrink")

    from aka_tui.bench.problem.fuzz import resolve_shape
    from aka_tui.bench.problem.shrink import shrink_shape

    big = replace(problem.shapes["2"], input_kwargs={"rows": 4096, "cols": 4096})
    problem.shapes["big"] = replace(big, shape_id="big")
    shrunk = shrink_shape(problem, module, problem.shapes["big"])
    assert shrunk.shape_id.startswith("smoke.") and shrunk.shape_id.endswith("@big")
    assert input_bytes(problem, module, shrunk) <= CPU_INPUT_BUDGET_BYTES
    assert resolve_shape(problem, shrunk.shape_id) == shrunk  # the id alone rebuilds it


def test_end_to_end_time_is_the_slower_of_host_issue_and_device() -> None:
    device_bound = TimingStats(0.5, 0.4, 0.45, 0.55, 60, 3, "cuda_events", 0, host_enqueue_ms=0.03)
    host_bound = TimingStats(0.004, 0.004, 0.004, 0.004, 60, 3, "cuda_events", 0, host_enqueue_ms=0.021)
    cpu = TimingStats(2.0, 1.9, 1.9, 2.1, 3, 3, "perf_counter", 0)
    assert e2e_time_ms(device_bound) == 0.5
    assert e2e_time_ms(host_bound) == 0.021
    assert e2e_time_ms(cpu) == 2.0 and e2e_time_ms(None) is None
    # The host time is the call's own (harness work around it excluded) where the result records it.
    checked = replace(host_bound, host_enqueue_ms=0.35, host_call_ms=0.012)
    assert e2e_time_ms(checked) == 0.012


def test_host_call_time_excludes_the_harness_hooks() -> None:
    """The host-bound pass times the call alone: slow restores and output checks around it do not count."""
    from aka_tui.bench.measure.timing import TimingHooks, _one

    clock = iter([1.0, 1.0 + 0.004])
    timers = replace(Timers.capture(), perf_counter=lambda: next(clock))
    recorded = iter([0.0, 0.001])  # the launch recorder's own seconds inside the call: 1 ms of the 4
    hooks = TimingHooks(prepare=lambda i: time.sleep(0.02), observe=lambda call, out: time.sleep(0.02),
                        harness_seconds=lambda: next(recorded))
    steps = _one(hooks, 0, "host-bound", timers)
    next(steps)
    with pytest.raises(StopIteration) as stop:
        steps.send("out")
    assert stop.value.value == pytest.approx(3.0)



@pytest.mark.slow
def test_bench_report_and_paper_table_on_the_fixture(runs: Prefetch) -> None:
    benched, table, tmp_path = runs.result("fixture")
    assert benched.returncode == 0, benched.stderr[-2000:]
    report = json.loads((tmp_path / "eager.json").read_text())
    shapes = report["results"][0]["shapes"]
    assert [s["status"] for s in shapes] == ["passed"] * 3  # dict outputs, null init_kwargs, counted shape 2
    assert "atrex+counted" in shapes[2]["roofline"]["source"]
    weights = report["weights"]
    assert weights["ops"]["scaled_tanh_rows"]["normalised"] == pytest.approx(1.0)
    assert weights["ops"]["scaled_tanh_rows"]["shapes"] == "uniform"
    assert weights["listed_without_directory"] == ["listed_but_absent"]
    assert report["ops"][0]["s_e2e_raw_op"] > 0
    assert table.returncode == 0, table.stderr[-2000:]
    markdown = (tmp_path / "paper.md").read_text()
    assert "| scaled_tanh_rows | 1.0000 | 3 |" in markdown and "S_agg" in markdown
    assert "XPU-A" in markdown  # the production kernels' S from the data's own SOL times
    ElementTree.parse(tmp_path / "paper.svg")  # well-formed SVG
    assert "listed_but_absent" in (tmp_path / "eager.md").read_text()


@pytest.mark.slow
@needs_subset
def test_eager_is_correct_on_a_smoke_sized_shape_of_every_published_operator(runs: Prefetch) -> None:
    """The CPU smoke tier of a published suite: each operator's smallest shape, shrunk to fit the
    interpreter where it does not; the eager reference must pass the hardened check on every one."""
    benched, tmp_path = runs.result("subset")
    assert benched.returncode == 0, benched.stderr[-3000:]
    report = json.loads((tmp_path / "smoke.json").read_text())
    statuses = {r["problem"]: [(s["shape_id"], s["status"], (s.get("error") or {}).get("message", ""))
                               for s in r["shapes"]] for r in report["results"]}
    assert len(statuses) == len([p for p in SUBSET.iterdir() if p.is_dir()])
    failed = {op: shapes for op, shapes in statuses.items() if any(status != "passed" for _, status, _ in shapes)}
    assert not failed, failed


@pytest.mark.slow
def test_the_naive_pass_rate_column_shows_what_the_hardened_check_catches(runs: Prefetch) -> None:
    benched, table, tmp_path = runs.result("cached")
    assert benched.returncode == 0, benched.stderr[-2000:]
    shapes = json.loads((tmp_path / "cached.json").read_text())["results"][0]["shapes"]
    plain = [s for s in shapes if not s.get("fuzz")]
    assert [s["naive_passed"] for s in plain] == [True] * 3
    assert not any(s["status"] == "passed" for s in plain)
    assert table.returncode == 0, table.stderr[-2000:]
    assert "| scaled_tanh_rows | 1.0000 | 3 | 100% | 0% | 0% |" in (tmp_path / "paper.md").read_text()
