"""The Ray backend's failure modes are one clear line: Ray missing, a bad or unreachable address."""

from __future__ import annotations

import sys
import time

import pytest

from aka_tui.cli import main
from aka_tui.errors import EvaluationError
from aka_tui.executors.base import make_executor


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(autouse=True)
def _not_connected() -> None:
    ray = pytest.importorskip("ray")
    ray.shutdown()


def test_ray_missing_says_how_to_install(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(EvaluationError, match=r"pip install 'aka-tui\[ray\]'"):
        make_executor("ray", device="cpu")
    code = main(["bench", "--baseline", "eager", "--executor", "ray", "--device", "cpu", "--ops", "rms_norm"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "pip install 'aka-tui[ray]'" in err[0], err


# The two "within seconds" tests assert on wall time: `make test` runs them after the parallel pass, alone.
@pytest.mark.serial
def test_nothing_listening_is_one_line_within_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    code = main(["bench", "--baseline", "eager", "--executor", "ray", "--ray-address", f"127.0.0.1:{_free_port()}",
                 "--device", "cpu", "--ops", "rms_norm", "--out", "/nonexistent-never-written"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("Ray cluster unreachable: no Ray cluster answers at"), err
    assert time.monotonic() - started < 15


def test_malformed_address_and_auto_without_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(EvaluationError, match="neither auto nor HOST:PORT"):
        make_executor("ray", device="cpu", ray_address="no-port-here")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr("ray._private.services.find_gcs_addresses", lambda: [])
    monkeypatch.setattr("ray._private.services.get_ray_address_from_environment", lambda addr, temp_dir: None)
    with pytest.raises(EvaluationError, match="found no running Ray cluster"):
        make_executor("ray", device="cpu", ray_address="auto")


@pytest.mark.slow
@pytest.mark.serial
def test_a_port_that_is_not_ray_is_one_line_within_seconds() -> None:
    """Something answers TCP but is no Ray head: the real CLI prints one line and exits, it does not retry for minutes."""
    import os
    import socket
    import subprocess

    from tests.conftest import REPO

    server = socket.socket()
    server.bind(("0.0.0.0", 0))
    server.listen(8)
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "aka_tui", "bench", "--baseline", "eager", "--executor", "ray", "--ray-address",
             f"127.0.0.1:{server.getsockname()[1]}", "--device", "cpu", "--ops", "rms_norm"],
            cwd=REPO, capture_output=True, text=True, timeout=60, env={**os.environ, "RAY_ADDRESS": ""})
    finally:
        server.close()
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1 and "is not a Ray head" in err[0], proc.stderr
    assert time.monotonic() - started < 30
