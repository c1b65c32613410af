"""Resolve what `aka kb sweep` sweeps (problem, KB kernel, shapes) and run one op's job under the GPU lock."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, Iterator

import aka_tui.safe_ast as safe_ast
from aka_tui.bench.problem.lookup import load_problem
from aka_tui.bench.problem.model import Problem, Shape
from aka_tui.errors import AkaError
from aka_tui.knowledge.reference_kernels import ReferenceKernel, kernel_from_source, kernels_for_op
from aka_tui.knowledge.store import KnowledgeBase, load_kb
from aka_tui.tuning import SweepError
from aka_tui.tuning.sweep import SweepOptions, failed_op_record


def resolve_kernel(problem: Problem, kb: KnowledgeBase, entry_id: str | None = None) -> ReferenceKernel:
    """The knowledge base's reference kernel for the problem, found as the offline proposer finds it."""
    kernels = kernels_for_op(kb, problem.name)
    if entry_id is not None:
        kernels = [k for k in kernels if k.entry_id == entry_id]
    if not kernels:
        raise SweepError(f"{problem.name} has no reference kernel in the knowledge base {kb.root} "
                         "(kb/family/<family>/<op>.py with a reference-kernel entry): nothing to sweep")
    return kernels[0]


def kernel_file(path: Path) -> ReferenceKernel:
    """A candidate file that declares TUNABLES / SEARCH_SPACE (an exported session's kernel, a transferred
    adapter, a person's kernel) as the kernel to sweep; SweepError naming the file when it cannot be."""
    if not path.is_file():
        raise SweepError(f"--kernel {path}: no such file")
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepError(f"--kernel {path}: cannot be read as UTF-8 text ({exc})") from None
    try:
        return kernel_from_source(source, path, f"file {path.name}", "person")
    except AkaError as exc:
        raise SweepError(f"--kernel {path}: {exc}") from None


def parse_space(items: list[str] | None, kernel: ReferenceKernel) -> dict[str, list[Any]]:
    """`--space NAME=V1,V2` restrictions, each value inside the kernel's SEARCH_SPACE."""
    space: dict[str, list[Any]] = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or name not in kernel.search_space:
            raise SweepError(f"--space {item!r}: expected NAME=V1,V2 with NAME one of "
                             f"{', '.join(kernel.search_space)} ({kernel.path.name})")
        values = []
        for raw in text.split(","):
            try:
                value = safe_ast.literal_eval(raw.strip())
            except (ValueError, SyntaxError):
                value = raw.strip()
            if value not in kernel.search_space[name]:
                raise SweepError(f"--space {item!r}: {value!r} is not in SEARCH_SPACE[{name!r}] = "
                                 f"{kernel.search_space[name]}")
            values.append(value)
        space[name] = values
    return space


def pinned_space(kernel: ReferenceKernel, varied: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Every tunable at its default except the varied ones: a grid sweep over this space is an A/B (or a small
    factorial) measurement of just the varied tunables."""
    return {name: list(varied.get(name, [value])) for name, value in kernel.tunables.items()}


@contextlib.contextmanager
def gpu_lock(device: str) -> Iterator[None]:
    """The evaluator's per-GPU lock on CUDA (a sweep never times beside an evaluation); nothing on the CPU."""
    if not device.startswith("cuda"):
        yield
        return
    from aka_tui.bench.evaluator.evaluate import parent_index
    from aka_tui.bench.evaluator.gpu_lock import exclusive_gpu, gpu_identity

    with exclusive_gpu(gpu_identity(parent_index(device))):
        yield


def make_job(problem: Problem, kernel: ReferenceKernel, kb_root: Path, shapes: list[Shape], device: str,
             hardware: str, options: SweepOptions) -> dict[str, Any]:
    return {"op": problem.name, "problem_dir": str(problem.directory.resolve()), "kb": str(kb_root),
            "kernel_entry": kernel.entry_id, "shape_ids": [s.shape_id for s in shapes], "device": device,
            "hardware": hardware, "options": {
                "strategy": options.strategy, "max_configs": options.max_configs, "seed": options.seed,
                "input_sets": options.input_sets, "cpu_reps": options.cpu_reps,
                "deadline_unix": options.deadline_unix, "space": options.space, "crosscheck": options.crosscheck},
            # a candidate file travels as its text: the child may not see the file's directory (the sandbox)
            **({"kernel_file": str(kernel.path), "kernel_source": kernel.source} if kernel.origin == "person" else {})}


def sweep_job(job: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Run one op's job in this process (the child of isolation.py, or the CLI with --in-process)."""
    import torch

    from aka_tui.bench.measure.timing import Timers
    from aka_tui.bench.problem.fuzz import resolve_shape
    from aka_tui.bench.roofline.hardware import get_profile
    from aka_tui.tuning.sweep import sweep_op

    timers = Timers.capture()
    kernel = None
    shapes: list[Shape] = []
    try:
        problem = load_problem(job["problem_dir"])
        kernel = (kernel_from_source(job["kernel_source"], Path(job["kernel_file"]), job["kernel_entry"], "person")
                  if job.get("kernel_source") else resolve_kernel(problem, load_kb(job["kb"]), job.get("kernel_entry")))
        shapes = [shape for sid in job["shape_ids"] if (shape := resolve_shape(problem, sid)) is not None]
        device = str(job["device"])
        if device.startswith("cuda") and ":" in device:
            torch.cuda.set_device(torch.device(device))
        profile = get_profile(job["hardware"])
        options = SweepOptions(**job["options"])
        emit({"event": "gpu_lock", "state": "waiting"})  # no stall limit while another evaluation holds the GPU
        with gpu_lock(device):
            emit({"event": "gpu_lock", "state": "held"})
            return sweep_op(problem, kernel, shapes, device, profile, options, timers, emit, job.get("known"))
    except AkaError as exc:
        return failed_op_record(job["op"], kernel, str(exc), job.get("known"), shapes)
    except Exception as exc:  # the op could not be set up (import of the kernel, the reference): its record says why
        return failed_op_record(job["op"], kernel, f"{type(exc).__name__}: {str(exc).strip()[:400]}",
                                job.get("known"), shapes)
