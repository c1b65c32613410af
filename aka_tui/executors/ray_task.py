"""What a Ray task carries and runs on its node: the problem's files and the candidate's source in its
arguments (no shared filesystem), written to a temporary directory there and evaluated by the driver's evaluator;
per-shape progress goes back through a small actor on the head node (`TaskEvents`)."""

from __future__ import annotations

import os
import socket
import tempfile
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from aka_tui.bench.evaluator.evaluate import CandidateSpec, EvalOptions, evaluate_candidate
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.errors import AkaError, EvaluationError
from aka_tui.executors.base import EvalJob

MAX_SHIPPED_BYTES = 64 << 20  # a problem directory larger than this is a mistake, not a payload


def _read_tree(directory: Path) -> dict[str, bytes]:
    """Every file under `directory` (relative path → bytes), without bytecode caches."""
    files: dict[str, bytes] = {}
    total = 0
    for path in sorted(directory.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            data = path.read_bytes()
            total += len(data)
            files[path.relative_to(directory).as_posix()] = data
    if total > MAX_SHIPPED_BYTES:
        raise EvaluationError(f"problem directory {directory} holds {total >> 20} MiB; the Ray executor ships "
                              f"at most {MAX_SHIPPED_BYTES >> 20} MiB per problem (move data out of it)")
    return files


def job_payload(job: EvalJob, device: str) -> dict[str, Any]:
    """What a task needs to evaluate a job anywhere: problem files, candidate source, options, labels."""
    directory = job.problem.directory.resolve()
    parent = {name: (directory.parent / name).read_bytes() for name in ("operator_importance.json",)
              if (directory.parent / name).is_file()}  # Atrex-Bench keeps op weights one level up
    spec = job.spec
    return {
        "key": job.key, "problem_name": directory.name, "problem_dir": str(directory),
        "problem_files": _read_tree(directory), "suite_files": parent,
        "candidate_kind": spec.kind, "candidate_path": str(spec.path) if spec.path else None,
        "candidate_text": spec.path.read_bytes() if spec.path else None,
        "options": replace(job.options, device=device),  # the executor's choice, not the driver's "auto"
    }


def _write_files(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _rewrite(value: Any, swaps: list[tuple[str, str]]) -> Any:
    """Replace node-local temporary paths by the driver's paths in every string of a JSON value."""
    if isinstance(value, str):
        for old, new in swaps:
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [_rewrite(v, swaps) for v in value]
    if isinstance(value, dict):
        return {k: _rewrite(v, swaps) for k, v in value.items()}
    return value


def _placement(device: str) -> dict[str, Any]:
    import ray

    context = ray.get_runtime_context()
    gpus = [str(g) for g in context.get_accelerator_ids().get("GPU", [])]
    name = "cpu"
    if device.startswith("cuda"):
        import torch

        name = torch.cuda.get_device_name(0)
    return {"executor": "ray", "node": socket.gethostname(), "node_id": context.get_node_id(),
            "gpu": ",".join(gpus) if gpus else None, "device": device, "name": name}


def evaluate_remote(payload: dict[str, Any], events: Any = None) -> dict[str, Any]:
    """The Ray task: materialise the problem and candidate in a temp dir, evaluate, return JSON."""
    options: EvalOptions = payload["options"]
    device = "cuda" if options.device.startswith("cuda") else "cpu"
    placement = _placement(device)

    def emit(kind: str, data: Any) -> None:
        if events is None:
            return
        import ray

        try:  # synchronous, so every event is logged before the task's result is
            ray.get(events.put.remote(payload["key"], kind, data), timeout=30)
        except Exception:  # noqa: BLE001 - progress is best effort; the result still comes back
            pass

    emit("start", {**placement, "pid": os.getpid()})
    with tempfile.TemporaryDirectory(prefix="aka-ray-") as tmp:
        root = Path(tmp)
        problem_dir = root / "suite" / payload["problem_name"]
        _write_files(problem_dir, payload["problem_files"])
        _write_files(root / "suite", payload["suite_files"])
        swaps = [(str(problem_dir), payload["problem_dir"])]
        spec = CandidateSpec(payload["candidate_kind"])
        if payload["candidate_text"] is not None:
            local = root / "candidate" / Path(payload["candidate_path"]).name
            local.parent.mkdir()
            local.write_bytes(payload["candidate_text"])
            spec = CandidateSpec("file", local)
            swaps.insert(0, (str(local), payload["candidate_path"]))
        swaps.append((str(root), "<ray-tmp>"))
        problem = load_problem(problem_dir)
        remote_options = replace(options, device=device, visible_devices=None)  # Ray set CUDA_VISIBLE_DEVICES
        result = evaluate_candidate(
            problem, spec, remote_options,
            on_shape=lambda r: emit("shape", _rewrite(asdict(r), swaps)))
        from aka_tui.bench.roofline.hardware import get_profile

        data = _rewrite(result.to_json(), swaps)
        data["provenance"]["placement"] = placement
        profile_name = data["provenance"]["hardware_profile"]
        try:
            profile = get_profile(profile_name)  # a node's measured profile is known only there: ship it
        except AkaError:
            profile = None
        return {"result": data, "placement": placement, "profile": profile}


class TaskEvents:
    """Actor: an append-only list of (job key, kind, data) that tasks write and the driver drains."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str, Any]] = []

    def put(self, key: str, kind: str, data: Any) -> None:
        self.items.append((key, kind, data))

    def drain(self) -> list[tuple[str, str, Any]]:
        items, self.items = self.items, []
        return items
