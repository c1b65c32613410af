"""The Ray backend: one Ray task per evaluation, each holding one GPU (or one CPU) of an existing cluster
(what a task runs on its node: aka_tui/executors/ray_task.py).

Nothing relies on a shared filesystem: the problem directory's files and the candidate's source travel in
the task's arguments and are written to a temporary directory on the node, and the `aka_tui` package
itself travels as a Ray `py_modules` runtime environment (so a node needs only ray, torch, triton and
numpy, and always runs the driver's evaluator). A small event-log actor on the head node carries
per-shape progress and "started on node X" events back while tasks run.
"""

from __future__ import annotations

import logging
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aka_tui.bench.evaluator.evaluate import cache_new_rooflines
from aka_tui.bench.measure.results import CandidateResult, ShapeResult
from aka_tui.errors import AkaError, EvaluationError
from aka_tui.executors.base import EvalJob, JobOutcome, ShapeCallback
from aka_tui.executors.ray_task import TaskEvents, evaluate_remote, job_payload

INSTALL_HINT = "pip install 'aka-tui[ray]' (or scripts/setup.sh --ray)"
CONNECT_TIMEOUT_S = 5.0  # TCP reachability of the head's GCS port
MAX_RETRIES = 3  # re-runs of a task whose worker process or node died
POLL_S = 0.25


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise EvaluationError(f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}",
                              "Ray is not installed") from None
    return ray


def _check_reachable(address: str) -> str:
    """Resolve `auto`/HOST:PORT to the head's GCS address and check that its port answers, quickly."""
    bad = EvaluationError(f"--ray-address {address!r} is neither auto nor HOST:PORT of a Ray head node",
                          "bad Ray address")
    if address.startswith("ray://"):
        raise EvaluationError("Ray Client addresses (ray://) are not supported: run aka on a node of the cluster "
                              "(or submit it as a Ray job) and pass auto or the head's HOST:PORT", "bad Ray address")
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die

        host_port = canonicalize_bootstrap_address_or_die(address)
    except ConnectionError:
        raise EvaluationError(
            "--ray-address auto found no running Ray cluster on this machine (no RAY_ADDRESS, no `ray start` "
            "here); start one with `ray start --head` or pass --ray-address HOST:PORT of its head node",
            "Ray cluster not found") from None
    except ValueError:
        raise bad from None
    host, _, port = host_port.rpartition(":")
    if not host or not port.isdigit():
        raise bad
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise EvaluationError(
            f"no Ray cluster answers at {host_port} ({reason} within {CONNECT_TIMEOUT_S:.0f} s); check "
            f"--ray-address (the head's GCS port, 6379 by default) and that `ray status` works there",
            "Ray cluster unreachable") from None
    return host_port


def _speaks_grpc(host: str, port: int) -> bool:
    """Whether the port answers an HTTP/2 client preface with SETTINGS, as a Ray head's gRPC server does."""
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S) as conn:
            conn.sendall(preface)
            frame = b""
            while len(frame) < 9:
                chunk = conn.recv(9 - len(frame))
                if not chunk:
                    break
                frame += chunk
    except OSError:
        return False
    return len(frame) == 9 and frame[3] == 0x04


def _connect(address: str) -> None:
    ray = _ray()
    if ray.is_initialized():  # a connection made by the caller (an embedding app, a test) is reused
        current = ray.get_runtime_context().gcs_address
        if address not in ("auto", current):
            wanted = _check_reachable(address)
            if wanted != current:
                raise EvaluationError(f"this process is already connected to the Ray cluster at {current}; "
                                      f"--ray-address {address} needs a new process", "Ray already connected")
        return
    target = _check_reachable(address)
    host, _, port = target.rpartition(":")
    if not _speaks_grpc(host.strip("[]"), int(port)):  # else ray.init would retry for minutes
        raise EvaluationError(f"{target} accepts connections but is not a Ray head (no gRPC answer within "
                              f"{CONNECT_TIMEOUT_S:.0f} s); check --ray-address (the head's GCS port, 6379 by "
                              f"default)", "Ray cluster unreachable")
    try:
        ray.init(address=target, logging_level=logging.WARNING, log_to_driver=False)
    except Exception as exc:  # noqa: BLE001 - Ray raises many kinds here; the person needs one line
        first = str(exc).strip().splitlines()
        raise EvaluationError(f"cannot connect to the Ray cluster at {target}: "
                              f"{type(exc).__name__}: {first[0] if first else ''}", "Ray connection failed") from None


def _upload_package() -> str:
    """Upload the driver's aka_tui package to the cluster (content-addressed, once) and return its URI.

    Ray accepts local directories in `py_modules` only in `ray.init`; uploading here, as `ray.init` does,
    lets a task-level runtime env carry it, also on a connection the caller made.
    """
    from ray._private.runtime_env.py_modules import upload_py_modules_if_needed

    package = str(Path(__file__).resolve().parents[1])  # the aka_tui directory
    with tempfile.TemporaryDirectory(prefix="aka-ray-upload-") as scratch:
        try:
            env = upload_py_modules_if_needed({"py_modules": [package], "excludes": ["__pycache__", "*.pyc"]},
                                              include_gitignore=True, scratch_dir=scratch)
        except Exception as exc:  # noqa: BLE001 - one line for the person
            raise EvaluationError(f"could not upload the aka_tui package to the Ray cluster: {exc}",
                                  "Ray upload failed") from None
    return str(env["py_modules"][0])


class RayExecutor:
    """Evaluations as Ray tasks: `num_gpus=1` each on a GPU cluster (Ray pins CUDA_VISIBLE_DEVICES), else `num_cpus=1`."""

    name = "ray"
    remote = True

    def __init__(self, address: str = "auto", device: str = "auto", gpus: int | None = None) -> None:
        self.address = address
        _connect(address)
        ray = _ray()
        cluster_gpus = float(ray.cluster_resources().get("GPU", 0))
        if device.startswith("cuda:"):
            raise EvaluationError(f"--device {device}: Ray chooses the GPU of each task; use --device cuda")
        if device == "cuda" and cluster_gpus < 1:
            raise EvaluationError("--device cuda asked for, but the Ray cluster has no GPU resources "
                                  "(use --device cpu, or add GPU worker nodes)")
        if device not in ("auto", "cuda", "cpu"):
            raise EvaluationError(f"unknown device {device!r}: use auto, cpu or cuda")
        self.device = "cuda" if device == "cuda" or (device == "auto" and cluster_gpus >= 1) else "cpu"
        if gpus is not None and gpus < 1:
            raise EvaluationError(f"--gpus {gpus}: give at least 1 (the most evaluations in flight at once)")
        self.max_in_flight = gpus  # None: submit everything, Ray queues what the cluster cannot place yet
        self.started: list[dict[str, Any]] = []  # one per task attempt, in the order seen: key, node_id, pid…
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._pending: dict[Any, EvalJob] = {}  # submitted refs → jobs
        self._running: set[str] = set()  # keys whose task reported "start"
        self._package_uri: str | None = None

    def describe(self) -> list[dict[str, Any]]:
        """One entry per alive node: host, Ray node id, GPUs/CPUs and the GPU model Ray detected."""
        ray = _ray()
        slots = []
        for node in ray.nodes():
            if not node.get("Alive"):
                continue
            resources = node.get("Resources", {})
            accelerator = next((k.split(":", 1)[1] for k in resources if k.startswith("accelerator_type:")), None)
            slots.append({"node": node.get("NodeManagerHostname"), "node_id": node.get("NodeID"),
                          "gpus": int(resources.get("GPU", 0)), "cpus": int(resources.get("CPU", 0)),
                          "name": accelerator or ("cpu" if not resources.get("GPU") else "gpu"),
                          "device": self.device})
        return slots

    def runtime_env(self) -> dict[str, Any]:
        """The driver's aka_tui ships with every task; the CPU interpreter is set before any kernel import."""
        if self._package_uri is None:
            self._package_uri = _upload_package()
        env: dict[str, Any] = {"py_modules": [self._package_uri]}
        if self.device == "cpu":
            env["env_vars"] = {"TRITON_INTERPRET": "1"}
        return env

    def _task_options(self) -> dict[str, Any]:
        ray = _ray()
        resources = {"num_gpus": 1, "num_cpus": 1} if self.device == "cuda" else {"num_cpus": 1}
        # Ray re-runs a task whose worker or node died (max_retries); an exception raised by the task is
        # retried only when it is a Ray system error, never an evaluator error (verdicts are data anyway).
        return {**resources, "max_retries": MAX_RETRIES,
                "retry_exceptions": [ray.exceptions.RaySystemError, ray.exceptions.ObjectLostError],
                "runtime_env": self.runtime_env()}

    def cancel(self) -> None:
        """Stop submitting; cancel submitted tasks that have not started (running ones finish)."""
        self._cancelled.set()
        ray = _ray()
        with self._lock:
            waiting = [ref for ref, job in self._pending.items() if job.key not in self._running]
        for ref in waiting:
            try:
                ray.cancel(ref, force=False)
            except Exception:  # noqa: BLE001 - already finished or gone
                pass

    def _event_log(self) -> Any:
        """The event log lives on the head node: it outlives any worker node (the cluster dies with the head)."""
        ray = _ray()
        return ray.remote(TaskEvents).options(num_cpus=0, resources={"node:__internal_head__": 0.001},
                                            runtime_env=self.runtime_env()).remote()

    def run(self, jobs: list[EvalJob], on_shape: ShapeCallback | None = None) -> Iterator[JobOutcome]:
        """Submit the jobs as tasks (at most `max_in_flight` at a time); yield outcomes as they finish."""
        ray = _ray()
        self._cancelled.clear()
        task = ray.remote(evaluate_remote).options(**self._task_options())
        events = self._event_log()
        by_key = {job.key: job for job in jobs}
        reported: dict[str, set[str]] = {job.key: set() for job in jobs}
        queue = list(jobs)

        def submit() -> None:
            while queue and not self._cancelled.is_set() and (
                    self.max_in_flight is None or len(self._pending) < self.max_in_flight):
                job = queue.pop(0)
                ref = task.remote(job_payload(job, self.device), events)
                with self._lock:
                    self._pending[ref] = job

        def drain() -> None:
            try:
                items = ray.get(events.drain.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - the log is best effort; outcomes still arrive
                return
            for key, kind, data in items:
                if kind == "start":
                    self.started.append({"key": key, **data})
                    with self._lock:
                        self._running.add(key)
                elif kind == "shape" and on_shape and key in by_key:
                    result = ShapeResult.from_json(data)
                    if result.shape_id not in reported[key]:  # a retried task reports its shapes again
                        reported[key].add(result.shape_id)
                        on_shape(by_key[key], result)

        try:
            submit()
            while self._pending:
                done, _ = ray.wait(list(self._pending), num_returns=1, timeout=POLL_S)
                drain()
                for ref in done:
                    with self._lock:
                        job = self._pending.pop(ref)
                    outcome = self._collect(ray, ref, job)
                    if outcome is not None:
                        if on_shape:  # shapes whose events were lost are reported before the outcome
                            for shape in outcome.result.shapes:
                                if shape.shape_id not in reported[job.key]:
                                    reported[job.key].add(shape.shape_id)
                                    on_shape(job, shape)
                        yield outcome
                    submit()  # after the yield: a cancel() made on seeing this outcome submits nothing more
        finally:
            self.cancel()
            with self._lock:
                self._pending.clear()
                self._running.clear()
            try:
                ray.kill(events)
            except Exception:  # noqa: BLE001
                pass

    def _collect(self, ray: Any, ref: Any, job: EvalJob) -> JobOutcome | None:
        """The finished task's outcome; None when it was cancelled; an AkaError when it failed."""
        try:
            data = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return None
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, AkaError):
                raise cause from None
            raise EvaluationError(f"{job.key}: the evaluation task failed on the Ray cluster: "
                                  f"{type(cause).__name__ if cause else 'error'}: {str(cause or exc).strip()[:300]}",
                                  "Ray task failed") from None
        except ray.exceptions.RuntimeEnvSetupError as exc:
            raise EvaluationError(f"a Ray node could not set up aka's runtime environment (py_modules): "
                                  f"{str(exc).strip().splitlines()[-1][:300]}", "Ray runtime env failed") from None
        except ray.exceptions.RayError as exc:
            raise EvaluationError(f"{job.key}: lost after {MAX_RETRIES} retries on the Ray cluster: "
                                  f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}",
                                  "Ray task lost") from None
        result = CandidateResult.from_json(data["result"])
        cache_new_rooflines(job.problem, result.shapes)  # the node's cache write went to its temp dir
        return JobOutcome(job, result, data["placement"], profile=data["profile"])


def wait_for_nodes(count: int, timeout_s: float = 30.0) -> int:
    """Block until the cluster has `count` alive nodes (for scripts and tests); returns the count seen."""
    ray = _ray()
    deadline = time.monotonic() + timeout_s
    alive = 0
    while time.monotonic() < deadline:
        alive = sum(1 for n in ray.nodes() if n.get("Alive"))
        if alive >= count:
            break
        time.sleep(0.2)
    return alive
