"""The sandbox's parts on their own: environment allow-list, bubblewrap command line, mode resolution, limits and
their verdicts (small processes, no torch), and the secret scrubber's encoded forms."""

from __future__ import annotations

import base64
import os
import sys
import urllib.parse
from pathlib import Path

import pytest

from aka_tui.bench.sandbox import bwrap
from aka_tui.bench.sandbox.containment import GiB, MiB, ResourceLimits
from aka_tui.environment import environment_snapshot
from aka_tui.errors import EvaluationError
from aka_tui.secrets import REDACTED, contains_secret, scrub
from tests.conftest import REPO

MECHANISM, WHY_NOT = bwrap.resolve_mode("auto")
KEY = "sk-ant-api03-Zx9_unit-test-key-0123456789abcdefghij"


def test_environment_keeps_the_allow_list_and_drops_every_credential(tmp_path: Path) -> None:
    source = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "ANTHROPIC_API_KEY": KEY, "GITHUB_TOKEN": "ghp_x" * 4,
              "AWS_SECRET_ACCESS_KEY": "s" * 20, "DB_PASSWORD": "p" * 12, "CUDA_VISIBLE_DEVICES": "3",
              "TORCH_API_KEY": "t" * 20, "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
              "NVSHMEM_DISABLE_NVLS": "1", "NVIDIA_DRIVER_CAPABILITIES": "compute", "HOME": "/root",
              "SSH_AUTH_SOCK": "/tmp/agent", "PYTHONPATH": "/opt/libs", "TRITON_CACHE_DIR": "/root/.triton"}
    env = bwrap.worker_environment(bwrap.View(tmp_path, env={"TRITON_INTERPRET": "1"}), source)
    for dropped in ("ANTHROPIC_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "TORCH_API_KEY",
                    "SSH_AUTH_SOCK"):
        assert dropped not in env
    for kept in ("CUDA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                 "NVSHMEM_DISABLE_NVLS", "NVIDIA_DRIVER_CAPABILITIES", "LANG", "TRITON_INTERPRET"):
        assert env[kept] == (source.get(kept) or "1")
    assert env["HOME"].startswith(str(tmp_path)) and env["TMPDIR"].startswith(str(tmp_path))
    assert env["TRITON_CACHE_DIR"].startswith(str(tmp_path))
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPO), "/opt/libs"]  # this package first, absolute
    assert not any(KEY in v for v in env.values())


def test_the_environment_copy_survives_another_thread_changing_it() -> None:
    """Evaluations start workers on threads while their caller sets and removes variables (pytest's
    PYTEST_CURRENT_TEST); `dict(os.environ)` then raises KeyError now and then (seen in CI: 79 of 20000 copies
    here). The sandbox's copy never does."""
    import threading

    stop = threading.Event()

    def toggle() -> None:
        while not stop.is_set():
            os.environ["AKA_TEST_ENV_RACE"] = "1"
            os.environ.pop("AKA_TEST_ENV_RACE", None)

    thread = threading.Thread(target=toggle, daemon=True)
    thread.start()
    try:
        for _ in range(20000):
            assert "PATH" in environment_snapshot()
    finally:
        stop.set()
        thread.join()


def test_bwrap_command_line_shows_the_package_but_not_the_project_or_home(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    fake_gpu = tmp_path / "nvidia0"
    fake_gpu.write_text("")
    monkeypatch.setattr(bwrap, "GPU_DEVICES", (str(tmp_path / "nvidia*"),))
    view = bwrap.View(tmp_path / "work", (REPO / "problems" / "silu_and_mul",), (), gpu=True)
    argv = bwrap.bwrap_argv("/usr/bin/bwrap", view, ["python", "-c", "pass"])
    for flag in ("--die-with-parent", "--unshare-net", "--unshare-pid", "--new-session"):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    bound = {argv[i + 1] for i, a in enumerate(argv) if a in ("--ro-bind", "--bind", "--dev-bind")}
    assert str(REPO / "aka_tui") in bound and str(REPO / "problems" / "silu_and_mul") in bound
    for hidden in (REPO, REPO / "kb", REPO / "sessions", Path.home(), Path(os.environ["HOME"])):
        assert str(hidden) not in bound
    assert str(fake_gpu) in [argv[i + 1] for i, a in enumerate(argv) if a == "--dev-bind"]
    writable = [argv[i + 1] for i, a in enumerate(argv) if a == "--bind"]
    assert writable == [str(tmp_path / "work")]
    assert argv[-4:] == ["--", "python", "-c", "pass"]


def test_mode_resolution_says_why_there_is_no_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert bwrap.resolve_mode("none") == ("none", "turned off (--sandbox none)")
    monkeypatch.setenv("AKA_BWRAP", str(tmp_path / "missing-bwrap"))
    mechanism, note = bwrap.resolve_mode("auto")
    assert mechanism == "none" and "bubblewrap not found" in note and "AKA_BWRAP" in note
    with pytest.raises(EvaluationError, match="--sandbox bwrap asked for"):
        bwrap.resolve_mode("bwrap")
    with pytest.raises(EvaluationError, match="--unsafe-no-sandbox"):
        bwrap.require_sandbox_for_model(None, allow_unsafe=False)
    bwrap.require_sandbox_for_model(None, allow_unsafe=True)
    monkeypatch.setenv("AKA_SANDBOX", "none")
    monkeypatch.delenv("AKA_BWRAP")
    assert bwrap.resolve_mode(None)[0] == "none"


def test_anthropic_proposer_refuses_to_run_unsandboxed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from aka_tui.cli import main

    argv = ["optimize", "silu_and_mul", "--proposer", "anthropic", "--sandbox", "none", "--device", "cpu",
            "--sessions", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--unsafe-no-sandbox" in err and "without a sandbox" in err
    assert list(tmp_path.iterdir()) == []  # refused before any session was created


def _run(code: str, limits: ResourceLimits, tmp_path: Path, mode: str) -> tuple[int, str | None, str]:
    view = bwrap.View(tmp_path / "work", gpu=False)
    view.work_dir.mkdir(exist_ok=True)
    process, report = bwrap.spawn([sys.executable, "-c", code], view, limits, mode)
    code_ = process.wait(timeout=120)
    process.close()
    return code_, process.limit_reached(code_), report.line()


MODES = [pytest.param("bwrap", marks=pytest.mark.skipif(MECHANISM != "bwrap", reason=f"no bubblewrap: {WHY_NOT}")),
         "none"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroup-if-any", "watchdog"])
def test_memory_limit_ends_the_tree_with_a_verdict(tmp_path: Path, mode: str, cgroups: bool) -> None:
    hog = "import time\nheld = []\nfor _ in range(12):\n    held.append(b'x' * (64 << 20)); time.sleep(0.15)\n"
    code, verdict, line = _run(hog, ResourceLimits(memory_bytes=256 * MiB, cgroups=cgroups), tmp_path, mode)
    assert code != 0 and verdict is not None and verdict.startswith("out of memory: limit 256 MiB"), (code, line)
    assert f"sandbox: {mode}" in line


@pytest.mark.parametrize("mode", MODES)
def test_task_limit_by_the_watchdog(tmp_path: Path, mode: str) -> None:
    bomb = ("import threading, time\nfor _ in range(300):\n"
            "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start(); time.sleep(0.003)\n"
            "time.sleep(5)\n")
    code, verdict, _ = _run(bomb, ResourceLimits(tasks=40, cgroups=False), tmp_path, mode)
    assert verdict is not None and verdict.startswith("task limit reached: limit 40"), code


def test_cpu_and_disk_limits_have_verdicts(tmp_path: Path) -> None:
    mode = "bwrap" if MECHANISM == "bwrap" else "none"
    _, verdict, _ = _run("while True: pass", ResourceLimits(cpu_s=1), tmp_path, mode)
    assert verdict == "CPU time limit exceeded: limit 1 s of CPU time per process"
    filler = "import time\nfor i in range(40):\n    open(f'f{i}', 'wb').write(b'x' * (1 << 20)); time.sleep(0.05)\n"
    _, verdict, _ = _run(filler, ResourceLimits(disk_bytes=8 * MiB), tmp_path, mode)
    assert verdict is not None and verdict.startswith("disk limit exceeded: limit 8 MiB")


def test_the_disk_limit_counts_what_the_worker_writes_not_what_its_cache_held(tmp_path: Path) -> None:
    """A shared compiler cache already over the limit (the compile baseline's, filled by --precompile-workers)
    does not end a worker that only reads it; writing past the limit still does."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for i in range(12):
        (cache / f"held{i}").write_bytes(b"x" * (1 << 20))
    view = bwrap.View(tmp_path / "work", writable=(cache,), gpu=False)
    view.work_dir.mkdir()
    reader = f"import time\nfor p in sorted(__import__('os').listdir({str(cache)!r})): time.sleep(0.1)\n"
    writer = "import time\nfor i in range(40):\n    open(f'f{i}', 'wb').write(b'x' * (1 << 20)); time.sleep(0.05)\n"
    for code, limited in ((reader, False), (writer, True)):
        process, _ = bwrap.spawn([sys.executable, "-c", code], view, ResourceLimits(disk_bytes=8 * MiB), "none")
        verdict = process.limit_reached(process.wait(timeout=120))
        process.close()
        assert (verdict is not None and verdict.startswith("disk limit exceeded: limit 8 MiB")) == limited, verdict


def test_scrub_finds_the_key_plain_and_encoded() -> None:
    raw = KEY.encode()
    forms = [KEY, KEY[::-1], raw.hex(), raw.hex().upper(), urllib.parse.quote(KEY, safe=""),
             base64.b32encode(raw).decode()]
    for prefix in (b"", b"a", b"ab", b"abc"):  # every alignment inside a longer encoded blob
        forms.append(base64.b64encode(prefix + raw + b"tail").decode())
        forms.append(base64.urlsafe_b64encode(prefix + raw).decode())
    for form in forms:
        text = f"result: {form} end"
        cleaned = scrub(text, (KEY,))
        assert REDACTED in cleaned and not contains_secret(cleaned, [KEY]), form


def test_scrub_uses_every_credential_like_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdefgh12345")
    monkeypatch.setenv("LANG", "C.UTF-8-long-value")
    text = scrub("token tok-abcdefgh12345, lang C.UTF-8-long-value")
    assert "tok-abcdefgh12345" not in text and "C.UTF-8-long-value" in text


def test_default_memory_limit_fits_the_machine() -> None:
    assert 0 < bwrap.default_memory_bytes() <= 16 * GiB


def test_the_apps_anthropic_proposer_refuses_too_unless_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    from aka_tui.bench.problem.lookup import load_problem
    from aka_tui.bench.roofline.hardware import get_profile
    from aka_tui.tui.agent_runner import RunSettings, make_proposer
    from tests.conftest import PROBLEMS

    monkeypatch.setenv("AKA_SANDBOX", "none")
    settings = RunSettings(PROBLEMS / "silu_and_mul", Path("sessions"), proposer="anthropic")
    problem = load_problem(PROBLEMS / "silu_and_mul")
    with pytest.raises(EvaluationError, match="AKA_UNSAFE_NO_SANDBOX=1"):
        make_proposer(settings, problem, get_profile("cpu"))
    monkeypatch.setenv("AKA_UNSAFE_NO_SANDBOX", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # constructing the client makes no request
    assert type(make_proposer(settings, problem, get_profile("cpu"))).__name__ == "AnthropicProposer"


def test_gpu_workers_get_the_expandable_allocator_unless_the_person_chose(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from aka_tui.bench.evaluator.worker_process import GPU_ALLOCATOR, _view

    job = {"problem_dir": str(tmp_path), "candidate": {"kind": "baseline"}, "device": "cuda:0"}
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    view = _view(job, tmp_path)
    assert bwrap.worker_environment(view)["PYTORCH_CUDA_ALLOC_CONF"] == GPU_ALLOCATOR
    assert "PYTORCH_CUDA_ALLOC_CONF" not in _view({**job, "device": "cpu"}, tmp_path).env
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:512")
    assert bwrap.worker_environment(_view(job, tmp_path))["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:512"


def test_files_a_worker_could_replace_are_read_without_following_or_blocking(tmp_path: Path) -> None:
    """The log and the start-up error file live in the worker's work dir: a link to a file outside is not
    followed, a FIFO (which would block the reader forever) and a directory read as empty, and a sparse file the
    size of the file limit is read only as far as asked."""
    from aka_tui.bench.sandbox.containment import read_worker_file

    outside = tmp_path / "id_ed25519"
    outside.write_text("private")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "link.log").symlink_to(outside)
    os.mkfifo(tmp_path / "work" / "fifo.log")
    sparse = tmp_path / "work" / "sparse.log"
    with open(sparse, "wb") as handle:
        handle.truncate(1 << 34)
        handle.seek((1 << 34) - 4)
        handle.write(b"tail")
    assert read_worker_file(outside) == b"private"
    assert read_worker_file(tmp_path / "work" / "link.log", tail=1500) == b""
    assert read_worker_file(tmp_path / "work" / "fifo.log", tail=1500) == b""
    assert read_worker_file(tmp_path / "work", head=300) == b""
    assert read_worker_file(sparse, tail=6) == b"\0\0tail"
    assert read_worker_file(sparse, head=3) == b"\0\0\0"


def test_text_from_a_worker_loses_what_a_terminal_acts_on(tmp_path: Path) -> None:
    """A crash message quotes the worker's log, which the candidate prints into: its escape sequences (OSC 52
    writes the person's clipboard) must not reach the terminal `aka` prints the message on."""
    from aka_tui.bench.evaluator.isolation import _log_tail
    from aka_tui.bench.sandbox.containment import printable

    log = tmp_path / "worker-0.log"
    log.write_bytes("x\x1b]52;c;Y3VybA==\x07\r\x1b[2J\x9b31m\tok\n".encode())
    assert _log_tail(log) == "x]52;c;Y3VybA==[2J31m\tok"
    assert printable({"error\x1b": ["a\x1bb", 1, None, {"m": "\x07c\n"}]}) == {"error": ["ab", 1, None, {"m": "c\n"}]}


def test_kept_candidate_caches_stay_within_their_size_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A candidate's compiler cache outlives its workers; the kept caches together are held to a byte budget
    (a worker's disk limit counts only its own growth), the newest alone above it is emptied."""
    monkeypatch.setattr(bwrap, "CACHE_BUDGET", 3 * MiB)
    root = tmp_path / "sandbox"
    for age, (name, mib) in enumerate([("candidate-new", 1), ("candidate-mid", 1), ("candidate-old", 2)]):
        (root / name).mkdir(parents=True)
        (root / name / "blob").write_bytes(os.urandom(mib * MiB))
        os.utime(root / name, (1_000_000 - age * 100, 1_000_000 - age * 100))
    (root / "shared-compile").mkdir()
    (root / "shared-compile" / "blob").write_bytes(os.urandom(4 * MiB))
    bwrap._prune(root)
    assert sorted(p.name for p in root.iterdir()) == ["candidate-mid", "candidate-new", "shared-compile"]
    (root / "candidate-new" / "more").write_bytes(os.urandom(3 * MiB))
    bwrap._prune(root)
    assert sorted(p.name for p in root.iterdir()) == ["candidate-mid", "candidate-new", "shared-compile"]
    assert list((root / "candidate-new").iterdir()) == []
