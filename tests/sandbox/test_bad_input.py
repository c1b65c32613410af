"""Bad input gets one line, before anything runs: numbers out of range, fuzz values outside the problem's
domain, a knowledge-base file that is not UTF-8, a settings file with values of the wrong kind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aka_tui.cli import main
from tests.conftest import CANDIDATES, REPO

EVAL = ["eval", str(CANDIDATES / "raises.py"), "--problem", "rms_norm", "--device", "cpu"]


@pytest.mark.parametrize(("argv", "fragment"), [
    ([*EVAL, "--cases", "0"], "argument --cases: 0 is less than 1"),
    ([*EVAL, "--cases", "two"], "argument --cases: 'two' is not an integer"),
    ([*EVAL, "--shape-timeout", "-5"], "argument --shape-timeout: -5 is not positive"),
    ([*EVAL, "--shape-timeout", "nan"], "is not a finite number"),
    ([*EVAL, "--memory-limit", "0"], "argument --memory-limit: 0 is not positive"),
    ([*EVAL, "--own-share", "1.5"], "argument --own-share: 1.5 is outside (0, 1]"),
    ([*EVAL, "--fuzz", "-1"], "argument --fuzz: -1 is less than 0"),
    ([*EVAL, "--sandbox", "docker"], "argument --sandbox: invalid choice"),
    (["bench", "--baseline", "eager", "--gpus", "0"], "argument --gpus: 0 is less than 1"),
    (["bench", "--baseline", "eager", "--cpu-workers", "0"], "argument --cpu-workers: 0 is less than 1"),
    (["optimize", "silu_and_mul", "--dropout", "1"], "argument --dropout: 1 is outside [0, 1)"),
    (["optimize", "silu_and_mul", "--iterations", "0"], "argument --iterations: 0 is less than 1"),
    (["optimize", "silu_and_mul", "--wall-time", "-1"], "argument --wall-time: -1 is not positive"),
    (["optimize", "silu_and_mul", "--best-of", "0"], "argument --best-of: 0 is less than 1"),
    (["replay", "x", "--rerun", "--cases", "0"], "argument --cases: 0 is less than 1"),
])
def test_out_of_range_numbers_are_one_line(argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and fragment in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(("shape", "fragment"), [
    ("fuzz.hidden_size=99999999@smoke_t7_h1000_fp16", "hidden_size=99999999 is outside the declared domain"),
    ("fuzz.hidden_size=0@smoke_t7_h1000_fp16", "hidden_size=0 is outside the declared domain"),
    ("fuzz.num_tokens=-4@smoke_t7_h1000_fp16", "num_tokens=-4 is outside the declared domain"),
    ("fuzz.eps=3@smoke_t7_h1000_fp16", "declares no fuzz domain for 'eps'"),
])
def test_fuzz_values_outside_the_domain_are_refused(shape: str, fragment: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*EVAL, "--shape", shape]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("evaluation error: --shape") and fragment in err and len(err.splitlines()) == 1


def test_a_knowledge_base_file_that_is_not_utf8_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(REPO / "kb", kb)
    (kb / "dsl" / "garbled-entry.md").write_bytes(b"\xff\xfe+++\nid = 'x'\n")
    with open(kb / "family" / "norm" / "rms_norm.py", "ab") as kernel:
        kernel.write(b"\n# \xff\xfe\n")
    assert main(["kb", "--kb", str(kb), "validate"]) == 1
    out = capsys.readouterr().out
    assert "garbled-entry.md: file: is not UTF-8 text" in out and "rms_norm.py: file: is not UTF-8 text" in out
    assert "Traceback" not in out
    assert main(["kb", "--kb", str(kb), "sweep", "rms_norm", "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("rms_norm.py: file: is not UTF-8 text (byte 5011); re-save it as UTF-8") or \
        ("rms_norm.py: file: is not UTF-8 text" in err and len(err.splitlines()) == 1), err


@pytest.mark.parametrize("text", ['{"iterations": "four"}', '{"use_kb": 1, "cases": 2}', '{"dropout_p": "high"}',
                                  '["not", "an", "object"]', '{"iterations": 2.5}'])
def test_a_mistyped_settings_file_gives_defaults_and_one_line(tmp_path: Path, text: str) -> None:
    pytest.importorskip("textual")
    from aka_tui.tui.config import TuiConfig, load_config

    path = tmp_path / "config.json"
    path.write_text(text)
    config, warning = load_config(path)
    assert warning and "default" in warning and "\n" not in warning
    raw = json.loads(text)
    bad = {"iterations", "use_kb", "dropout_p"} & set(raw if isinstance(raw, dict) else ())
    assert all(getattr(config, name) == getattr(TuiConfig(), name) for name in bad)  # each bad field: its default
    path.write_text(json.dumps({"iterations": 6, "dropout_p": 0}))
    assert load_config(path) == (TuiConfig(iterations=6, dropout_p=0), "")


def test_a_python_without_the_projects_packages_gets_one_line() -> None:
    """`python -m aka_tui eval …` from a Python where torch is not installed (not the project's .venv): one line
    that says what to run, not the import chain's traceback."""
    import subprocess
    import sys

    blocker = ("import importlib.abc, sys\n"
               "class NoTorch(importlib.abc.MetaPathFinder):\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               "        if name == 'torch' or name.startswith('torch.'):\n"
               "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
               "sys.meta_path.insert(0, NoTorch())\n"
               "from aka_tui.cli import main\n"
               f"sys.exit(main({EVAL!r}))\n")
    done = subprocess.run([sys.executable, "-c", blocker], cwd=REPO, capture_output=True, text=True, timeout=120)
    err = done.stderr.strip()
    assert done.returncode == 2 and len(err.splitlines()) == 1, err
    assert "has no module 'torch'" in err and "scripts/setup.sh" in err, err
