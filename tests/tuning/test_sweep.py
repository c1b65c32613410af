"""`aka kb sweep` on the CPU interpreter (smoke shapes, a handful of configurations): the search, failing
configurations, the JSON record, the CLI's errors and the per-op child process. No test compares timings:
interpreter times say nothing about a GPU."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.roofline.hardware import get_profile
from aka_tui.cli import main
from aka_tui.knowledge.reference_kernels import kernels_for_op, reference_kernels
from aka_tui.knowledge.store import default_kb_dir, load_kb
from aka_tui.tuning.report import build_report, render_markdown, render_text
from aka_tui.tuning.sweep import SweepOptions, binding_warnings, select_shapes, sweep_op
from tests.conftest import PROBLEMS, REPO

KB = load_kb(default_kb_dir())
CPU = get_profile("cpu")
RMS_SHAPE = "smoke_t7_h1000_fp16"


def _sweep(op: str, shape_spec: str, **options):  # type: ignore[no-untyped-def]
    problem = load_problem(PROBLEMS / op)
    kernel = kernels_for_op(KB, op)[0]
    shapes = select_shapes(problem, shape_spec, "smoke", CPU)
    return sweep_op(problem, kernel, shapes, "cpu", CPU, SweepOptions(cpu_reps=1, **options))


def test_coordinate_sweep_finds_a_config_and_reports_the_default() -> None:
    record = _sweep("rms_norm", RMS_SHAPE, max_configs=3)
    trials = {t["index"]: t for t in record["trials"]}
    shape = record["shapes"][0]
    default, best = trials[shape["default_index"]], trials[shape["best_index"]]
    assert default["changed"] == {} and default["config"] == kernels_for_op(KB, "rms_norm")[0].tunables
    assert default["status"] == "passed" and default["median_ms"] > 0 and default["sol_ratio"] is not None
    assert best["status"] in ("passed", "duplicate") and shape["speedup"] >= 1.0
    assert all(t["status"] in ("passed", "duplicate") for t in trials.values()), trials
    # at most 3 configurations run (duplicates of a timed launch are free), one tunable changed at a time: every
    # trial after the default differs in one tunable from a configuration tried before it (which one was the
    # incumbent depends on the timings, so a trial may differ from the default in two)
    assert sum(t["status"] == "passed" for t in trials.values()) <= 3
    configs = [t["config"] for t in trials.values()]
    assert all(any(sum(c[k] != before[k] for k in c) == 1 for before in configs[:i])
               for i, c in enumerate(configs) if i), configs
    # changing TUNABLES in place reaches the launch: ROWS_PER_PROGRAM changes it, an inert BLOCK_N does not
    launches = {json.dumps(t["changed"], sort_keys=True): t["launch"] for t in trials.values()}
    assert launches.get('{"BLOCK_N": 512}', default["launch"]) == default["launch"]
    assert record["binding_warnings"] == [] and record["error"] is None
    text = render_text(build_report([record], {"device": "cpu", "tier": "smoke", "strategy": "coordinate"}))
    assert RMS_SHAPE in text and "rms_norm" in text


def test_a_config_that_raises_is_recorded_and_skipped() -> None:
    # ROWS_PER_PROGRAM=3 is not a power of two: tl.arange raises; injected through a test-only search space
    # (AUTO 0: the explicit tiles reach the launch).
    space = {"AUTO": [0], "ROWS_PER_PROGRAM": [1, 3], "BLOCK_N": [1024], "EARLY_WEIGHTS": [1], "ONE_PASS": [True],
             "CONST_COLS": [0], "num_warps": [8, 4], "num_stages": [1]}
    record = _sweep("rms_norm", RMS_SHAPE, strategy="grid", max_configs=8, space=space)
    statuses = {json.dumps(t["changed"], sort_keys=True): t for t in record["trials"]}
    assert len(statuses) == 5  # the whole (small) grid and the default (AUTO 1, outside it): all in the record
    failed = [t for t in record["trials"] if t["config"]["ROWS_PER_PROGRAM"] == 3]
    assert len(failed) == 2 and all(t["status"] == "runtime_error" and "power of 2" in t["error"] for t in failed)
    assert record["shapes"][0]["counts"]["failed"] == 2 and record["error"] is None
    best = record["trials"][record["shapes"][0]["best_index"]]
    assert best["config"]["ROWS_PER_PROGRAM"] == 1 and best["status"] == "passed"
    markdown = render_markdown(build_report([record], {"device": "cpu"}))
    assert "power of 2" in markdown


def test_inert_rules_are_checked_against_the_recorded_launches() -> None:
    import dataclasses

    problem = load_problem(PROBLEMS / "rms_norm")
    kernel = kernels_for_op(KB, "rms_norm")[0]
    wrong = dataclasses.replace(kernel, inert={**kernel.inert, "ROWS_PER_PROGRAM": {"ONE_PASS": [True]}})
    space = {"AUTO": [0], "ROWS_PER_PROGRAM": [1, 2], "BLOCK_N": [1024, 2048], "ONE_PASS": [True],
             "num_warps": [8], "num_stages": [1]}
    shapes = select_shapes(problem, RMS_SHAPE, "smoke", CPU)
    record = sweep_op(problem, wrong, shapes, "cpu", CPU, SweepOptions(strategy="grid", cpu_reps=1, space=space))
    assert any("differ only in tunables INERT declares inert (ROWS_PER_PROGRAM=" in w
               for w in record["binding_warnings"]), record["binding_warnings"]
    assert not any("(BLOCK_N=2048)" in w for w in record["binding_warnings"])  # the kernel's own rule holds


def test_cli_writes_json_with_every_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["kb", "sweep", "silu_and_mul", "--device", "cpu", "--shapes", "smoke_t7_i300_fp16", "--max-configs", "2",
               "--cpu-reps", "1", "--in-process", "--out", str(tmp_path), "--name", "s"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    report = json.loads((tmp_path / "s.json").read_text())
    (record,) = report["ops"]
    progress = [line for line in out.err.splitlines() if line.startswith("  silu_and_mul ")]
    assert len(record["trials"]) == len(progress) >= 2  # every configuration tried is in the JSON
    assert {t["shape_id"] for t in record["trials"]} == {"smoke_t7_i300_fp16"}
    assert all({"config", "status", "error", "median_ms", "launch"} <= set(t) for t in record["trials"])
    assert report["hardware_profile"]["name"] == "cpu" and report["command"].startswith("aka kb sweep silu_and_mul")
    assert (tmp_path / "s.md").read_text().startswith("## aka kb sweep: silu_and_mul")
    assert "silu_and_mul" in out.out and "default us" in out.out


def test_sweep_imports_no_app_packages() -> None:
    """The device machine has torch + triton + numpy only: `aka kb sweep` must not need the app's packages."""
    code = (
        "import sys\n"
        "from aka_tui.cli import build_parser\n"
        "build_parser().parse_args(['kb', 'sweep', 'rms_norm'])\n"
        "import aka_tui.tuning.commands, aka_tui.tuning.sweep, aka_tui.tuning.runner, aka_tui.tuning.isolation\n"
        "import aka_tui.tuning.report\n"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'chromadb', 'anthropic', 'git', "
        "'sentence_transformers', 'rich'})\n"
        "print('BAD', ','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "BAD", out.stdout + out.stderr


@pytest.mark.parametrize("argv, message", [
    (["no_such_op"], "unknown problem: no problem named 'no_such_op'"),
    (["rms_norm", "--shapes", "nope"], "sweep error: rms_norm has no shape 'nope'"),
    (["rms_norm", "--max-configs", "0"], "sweep error: --max-configs must be a positive integer, not 0"),
    (["rms_norm", "--space", "BLOCK_N=3"], "sweep error: --space 'BLOCK_N=3': 3 is not in SEARCH_SPACE"),
    (["rms_norm", "--kernel", str(REPO / "tests" / "data" / "not_utf8.bin")],
     "sweep error: --kernel " + str(REPO / "tests" / "data" / "not_utf8.bin") + ": cannot be read as UTF-8 text"),
])
def test_cli_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kb", "sweep", *argv, "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err, err


def test_cli_errors_for_an_op_without_a_kb_kernel_and_a_bad_integer(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kb").mkdir()
    assert main(["kb", "--kb", str(tmp_path / "kb"), "sweep", "rms_norm", "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sweep error: rms_norm has no reference kernel in the knowledge base") and "\n" not in err
    with pytest.raises(SystemExit):
        main(["kb", "sweep", "rms_norm", "--max-configs", "many"])
    assert "argument --max-configs: invalid int value: 'many'" in capsys.readouterr().err


def test_binding_warnings_catch_copies_and_import_time_reads(tmp_path: Path) -> None:
    source = (
        "TUNABLES = {'BLOCK': 256}\n"
        "SEARCH_SPACE = {'BLOCK': [256, 512]}\n"
        "_COPY = dict(TUNABLES)\n"
        "def launch(x, cfg=dict(TUNABLES)):\n    return cfg['BLOCK']\n"
        "def fine(x, cfg=TUNABLES):\n    return cfg['BLOCK'] + TUNABLES['BLOCK']\n"
        "def held(x, cfg=_COPY):\n    return cfg['BLOCK']\n"
    )
    path = tmp_path / "k.py"
    path.write_text(source)
    warnings = binding_warnings(source, import_file(path, "test"))
    assert any("line 3: module-level code reads TUNABLES" in w for w in warnings)
    assert any("default argument of launch() is computed from TUNABLES" in w for w in warnings)
    assert any("held() holds a copy of TUNABLES" in w for w in warnings)
    assert not any("fine()" in w for w in warnings)


def test_every_shipped_reference_kernel_reads_tunables_at_call_time() -> None:
    for kernel in reference_kernels(KB):
        module = import_file(kernel.path, "binding_test")
        assert binding_warnings(kernel.path.read_text(), module) == [], kernel.path


@pytest.mark.slow
def test_a_crashing_config_costs_one_configuration_in_the_child_process(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A configuration that kills its process (os._exit, like a segfault) is recorded as crashed and the
    sweep goes on in a fresh child, which replays the trials so far instead of running them again."""
    folder = tmp_path / "kb" / "family" / "activation"
    folder.mkdir(parents=True)
    source = (default_kb_dir() / "family" / "activation" / "silu_and_mul.py").read_text()
    source = source.replace('"num_warps": 4}', '"num_warps": 4, "CRASH": 0}', 1)
    source = source.replace('"num_warps": [1, 2, 4, 8, 16],', '"num_warps": [1, 2, 4, 8, 16],\n    "CRASH": [0, 1],', 1)
    source = source.replace('    cfg = TUNABLES if cfg is None else cfg\n',
                            '    cfg = TUNABLES if cfg is None else cfg\n    if cfg["CRASH"]:\n'
                            '        import os\n        os._exit(9)\n', 1)
    assert source.count("CRASH") == 3
    (folder / "silu_and_mul.py").write_text(source)
    shutil.copy(default_kb_dir() / "family" / "activation" / "silu-and-mul-reference-kernel.md", folder)
    out = tmp_path / "out"
    rc = main(["kb", "--kb", str(tmp_path / "kb"), "sweep", "silu_and_mul", "--device", "cpu", "--shapes",
               "smoke_t7_i300_fp16", "--strategy", "grid", "--space", "BLOCK_N=1024", "--space", "ROWS_PER_PROGRAM=1",
               "--space", "COL_LOOP=False", "--space", "num_warps=4", "--cpu-reps", "1", "--out", str(out),
               "--name", "s"])
    assert rc == 0
    (record,) = json.loads((out / "s.json").read_text())["ops"]
    ok, crashed = sorted(record["trials"], key=lambda t: t["config"]["CRASH"])
    assert len(record["trials"]) == 2 and record["error"] is None
    assert ok["status"] == "passed" and ok["changed"] == {} and record["shapes"][0]["best_index"] == ok["index"]
    assert crashed["status"] == "crashed" and "exited with status 9" in crashed["error"]
    assert crashed["changed"] == {"CRASH": 1} and record["shapes"][0]["counts"]["failed"] == 1


def test_tuning_imports_only_the_core_the_knowledge_base_and_itself() -> None:
    import re

    allowed = ("aka_tui.bench", "aka_tui.knowledge", "aka_tui.tuning", "aka_tui.errors", "aka_tui.paths",
               "aka_tui.safe_ast", "aka_tui.secrets", "aka_tui.environment")
    for path in sorted((REPO / "aka_tui" / "tuning").rglob("*.py")):
        for line in path.read_text().splitlines():
            match = re.match(r"\s*(?:from|import)\s+(aka_tui[\w.]*)", line)
            if match:
                assert match.group(1).startswith(allowed), f"{path.name}: {line.strip()}"


def test_sweep_reports_of_several_gpus_merge_into_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from aka_tui.tuning.report import main as merge_main

    stored = REPO / "docs/benchmarks/2026-11-30-h200-s4-sweeps"
    parts = [stored / "grid-gemm_fp8_blockscale.json", stored / "grid-attention_mla_decode.json"]
    assert merge_main([str(tmp_path), "merged", *map(str, parts)]) == 0
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert [r["op"] for r in merged["ops"]] == ["attention_mla_decode", "gemm_fp8_blockscale"]
    assert (tmp_path / "merged.md").is_file() and "gemm_fp8_blockscale" in capsys.readouterr().out
    assert merge_main([str(tmp_path), "merged"]) == 2


def test_cli_sweeps_a_candidate_file_of_an_operator_without_a_kb_kernel(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """--kernel FILE: any candidate that declares TUNABLES (here a person's, for a made-up problem no KB kernel
    declares), through the isolated child like a KB kernel; its wrong default configuration is reported so."""
    unseen = Path(__file__).resolve().parents[1] / "data" / "unseen"
    kernel = unseen / "centered_swish_rounding_kernel.py"
    rc = main(["kb", "sweep", "centered_swish", "--suite", str(unseen), "--kernel", str(kernel), "--device", "cpu",
               "--shapes", "smoke_r3_c130_fp32", "--max-configs", "3", "--cpu-reps", "1", "--out", str(tmp_path),
               "--name", "k"])
    out = capsys.readouterr()
    report = json.loads((tmp_path / "k.json").read_text())
    (record,) = report["ops"]
    status = {t["config"]["ROUND_F16"]: t["status"] for t in record["trials"]}
    assert status[0] == "passed" and status[1] != "passed", (status, out.err)
    assert rc == 0 and f"--kernel {kernel}" in report["command"]
    assert main(["kb", "sweep", "centered_swish", "silu_and_mul", "--kernel", str(kernel), "--device", "cpu"]) == 2
    assert "give exactly one OP" in capsys.readouterr().err


def test_a_swept_candidate_file_gets_a_compiler_cache_of_its_own() -> None:
    """A person's file (`--kernel`: a model's code) must not write the cache a later sweep of another kernel loads
    (on a GPU it could plant a compiled kernel under the key of a KB kernel's); the KB's own kernels share one."""
    from aka_tui.tuning.isolation import sweep_cache

    kb, hostile, other = sweep_cache({}), sweep_cache({"kernel_source": "A = 1\n"}), sweep_cache({"kernel_source": "B"})
    assert kb.name == "shared-sweep" and len({kb, hostile, other}) == 3
    assert sweep_cache({"kernel_source": "A = 1\n"}) == hostile  # kept between sweeps of the same file
