"""`aka bench run|rescore|libraries|illusion`: each shows only its own options, the old flag forms parse to the
same thing as the subcommands, bad combinations are one line, and a real rescore through both forms."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aka_tui.cli import build_parser, main, parse_args
from aka_tui.cli.bench_legacy import rewrite_bench_argv
from tests.conftest import REPO

REPORT = REPO / "docs/benchmarks/2026-11-29-h200-eager-full.json"

# Options each subcommand must list, and options of the others it must not.
OWN = {
    "run": {"--baseline", "--candidates", "--naive", "--precompile-workers", "--executor", "--gpus", "--ops",
            "--accept", "--cases", "--name", "--compare-compile", "--compare-compile-max-autotune"},
    "rescore": {"--suite", "--out", "--name", "--accept", "--accept-reason"},
    "libraries": {"--shapes", "--rounds", "--ops", "--device", "--tier", "--sandbox", "--name"},
    "illusion": {"--cases", "--device", "--tier", "--own-share", "--out"},
}
NOT_THEIRS = {
    "run": {"--shapes", "--rounds", "--rescore", "--library-compare", "--report"},
    "rescore": {"--baseline", "--candidates", "--shapes", "--rounds", "--executor", "--naive", "--tier", "--device",
                "--report"},
    "libraries": {"--baseline", "--candidates", "--executor", "--naive", "--cases", "--accept", "--rescore",
                  "--report"},
    "illusion": {"--baseline", "--candidates", "--executor", "--naive", "--shapes", "--rounds", "--accept", "--name",
                 "--report", "--precompile-workers"},
}

# (old flag form, the subcommand form it means)
EQUIVALENT = [
    (["bench", "--candidates", "kb/family", "--ops", "rms_norm", "--tier", "smoke"],
     ["bench", "run", "--candidates", "kb/family", "--ops", "rms_norm", "--tier", "smoke"]),
    (["bench", "--baseline", "compile", "--precompile-workers", "4", "--report", "scores"],
     ["bench", "run", "--baseline", "compile", "--precompile-workers", "4"]),
    (["bench", "--baseline=eager", "--gpus", "2", "--naive"], ["bench", "run", "--baseline", "eager", "--gpus", "2",
                                                               "--naive"]),
    (["bench", "--rescore", "a.json", "b.json", "--out", "o", "--name", "merged"],
     ["bench", "rescore", "a.json", "b.json", "--out", "o", "--name", "merged"]),
    (["bench", "--out", "o", "--rescore", "a.json"], ["bench", "rescore", "a.json", "--out", "o"]),
    (["bench", "--library-compare", "--shapes", "largest", "--rounds", "2"],
     ["bench", "libraries", "--shapes", "largest", "--rounds", "2"]),
    (["bench", "--library-compare", "kb/x", "--device", "cpu", "--tier", "smoke"],
     ["bench", "libraries", "kb/x", "--device", "cpu", "--tier", "smoke"]),
    (["bench", "--library-compare=kb/x"], ["bench", "libraries", "kb/x"]),
    (["bench", "--candidates", "d", "--report", "illusion", "--cases", "2"],
     ["bench", "illusion", "d", "--cases", "2"]),
    (["bench", "--report=illusion", "--candidates=d"], ["bench", "illusion", "d"]),
    (["--suite", "s", "bench", "--baseline", "eager"], ["--suite", "s", "bench", "run", "--baseline", "eager"]),
]

BAD = [
    (["bench", "--baseline", "eager", "--candidates", "d"], "argument --candidates: not allowed with argument --baseline"),
    (["bench", "--rescore", "a.json", "--library-compare"], "not allowed with argument --rescore"),
    (["bench", "--candidates", "d", "--rescore", "a.json"], "argument --rescore: not allowed with argument --candidates"),
    (["bench", "--baseline", "eager", "--report", "illusion"], "--report illusion needs --candidates DIR"),
    (["bench", "--candidates", "d", "--report", "fancy"], "argument --report: invalid choice: 'fancy'"),
    (["bench", "--rescore", "a.json", "--executor", "ray"], "unrecognized arguments: --executor ray"),
    (["bench", "run", "--ops", "rms_norm"], "one of the arguments --baseline --candidates is required"),
    (["bench", "illusion"], "the following arguments are required: DIR"),
    (["bench"], "the following arguments are required: ACTION"),
]


def _options_listed(command: list[str], capsys: pytest.CaptureFixture[str]) -> set[str]:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([*command, "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    options = text.split("\noptions:\n", 1)[1]
    return set(re.findall(r"^  (--[\w-]+)", options, flags=re.M)) | set(re.findall(r", (--[\w-]+)", options))


@pytest.mark.parametrize("subcommand", sorted(OWN))
def test_each_subcommand_lists_only_its_own_options(subcommand: str, capsys: pytest.CaptureFixture[str]) -> None:
    listed = _options_listed(["bench", subcommand], capsys)
    assert OWN[subcommand] <= listed, OWN[subcommand] - listed
    assert not listed & NOT_THEIRS[subcommand], listed & NOT_THEIRS[subcommand]


def test_bench_help_names_the_subcommands_and_the_old_forms(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--help"])
    text = capsys.readouterr().out
    for word in ("run", "rescore", "libraries", "illusion", "--library-compare", "--rescore", "--report illusion"):
        assert word in text


@pytest.mark.parametrize("old, new", EQUIVALENT, ids=lambda argv: " ".join(argv))
def test_old_flag_forms_parse_like_the_subcommands(old: list[str], new: list[str]) -> None:
    parser = build_parser()
    assert vars(parse_args(parser, old)) == vars(parse_args(parser, new))
    assert rewrite_bench_argv(new) == new  # the subcommand forms are left alone


@pytest.mark.parametrize("argv", [["bench"], ["bench", "--help"], ["bench", "-h"], ["problems", "--suite", "s"],
                                  ["eval", "eager", "--problem", "rms_norm"], ["kb", "bench"], [], ["--version"]])
def test_other_command_lines_are_not_rewritten(argv: list[str]) -> None:
    assert rewrite_bench_argv(argv) == argv


@pytest.mark.parametrize("argv, fragment", BAD, ids=lambda a: " ".join(a) if isinstance(a, list) else "")
def test_bad_combinations_are_one_clear_line(argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], lines


def test_rescore_runs_the_same_through_the_old_and_the_new_form(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "rescore", str(REPORT), "--out", str(tmp_path / "new"), "--name", "r"]) == 0
    assert "S_agg" in capsys.readouterr().out
    assert main(["bench", "--rescore", str(REPORT), "--out", str(tmp_path / "old"), "--name", "r"]) == 0
    new, old = (json.loads((tmp_path / form / "r.json").read_text()) for form in ("new", "old"))
    assert new["aggregate"] == old["aggregate"] and new["ops"] == old["ops"]
    assert (tmp_path / "new" / "r.md").read_text() == (tmp_path / "old" / "r.md").read_text()


def test_libraries_without_a_gpu_says_so_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("the GPU-required error is for machines without a CUDA GPU")
    assert main(["bench", "libraries", "--device", "cpu", "--out", str(tmp_path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "aka bench libraries needs a CUDA GPU" in lines[0], lines
    assert not any(tmp_path.iterdir())


def test_the_sandbox_line_names_each_containment_once_with_the_cpu_limits_range() -> None:
    """Jobs whose CPU-time limit differs (it scales with their shapes) are one entry with the range, not one
    repeated entry per job; a different containment is its own entry."""
    from types import SimpleNamespace

    from aka_tui.cli.output import sandbox_line

    def result(cpu: int, mechanism: str = "bwrap") -> SimpleNamespace:
        detail = {"mechanism": mechanism, "detail": "bubblewrap 0.8.0", "limits": f"memory 16 GiB, CPU {cpu} s",
                  "memory_by": "watchdog", "tasks_by": "watchdog"}
        return SimpleNamespace(provenance={"sandbox_detail": detail})

    line = sandbox_line([result(540), result(360), result(3540)])
    assert line.count("sandbox:") == 1 and "CPU 360-3540 s" in line
    assert "CPU 360 s" in sandbox_line([result(360)])
    assert sandbox_line([result(360), result(360, "none")]).count("sandbox:") == 2
