"""Our kernels against the vendor library on the same problem, side by side in one run.

For each compared op and selected shape: our side is the candidate's `Model` (the KB reference kernel, loaded
as `aka bench run --candidates kb/family` loads it) on the problem's inputs; the library side is the same logical
problem through PyTorch's library path:

- gemm_bf16_linear_epilogue: `torch.matmul(x, w.t())` alone (cuBLAS: the bar) and `F.linear` plus the
  epilogue in torch (context);
- gemm_fp8_blockscale: `torch._scaled_mm` at the same M, N, K in float8_e4m3fn, with the problem's block-wise
  scales where this PyTorch supports them, else row-wise, else tensor-wise scales (a throughput bar at the
  same M, N, K; the form used is recorded);
- attention_prefill_varlen: causal `F.scaled_dot_product_attention` formulations of the packed batch
  (SDPA's flash kernel on the packed batch, nested jagged tensors, one call per length group, one padded
  call; the fastest that agrees with the reference is the bar), with the backend that ran;
- rms_norm, fused_add_rms_norm, layer_norm, silu_and_mul, rope: a peer library, Liger-Kernel (`liger.py`), where
  it is installed (without it these ops are left out and the run says so in one line); no target, the ratio
  as it is.

Every formulation is checked against the problem's reference within the problem's tolerance before it is
timed; a disagreement is reported instead of a ratio. Our side goes through the evaluator's measurement engine
(`aka_tui.bench.measure`: its checked case, its timing protocol with the timed calls verified); the library side
through the same timing protocol in the same frames (the engine's call loop and a launch recorder, whose own
bookkeeping is subtracted from both sides' host times; `shape._timer`). Both time the evaluator's case inputs with one
`Timers.capture()`, interleaved (ours, library, ours, library, ... for `rounds` rounds), the median of the
per-round medians per side, under the per-GPU lock; device time, and end to end (max(host time of one call,
device time), as `e2e_time_ms` in the scores). Each side's `status` uses the engine's verdicts. Layout preparation for the library
(views, transposes, padding, stacked or expanded K/V heads, scale layouts) happens outside the timed call:
the library is timed on the layout it likes best, so the bar errs on the library's side.

Only torch, triton and numpy are imported (the device machine runs this from the checkout).
"""

from __future__ import annotations

import logging
import os
import platform
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Callable

import torch

from aka_tui.bench.compare.library.liger import INSTALL_HINT, PEER, liger_status, skip_line
from aka_tui.bench.compare.library.plans import Context
from aka_tui.bench.compare.library.results import (
    DRY_RUN_NOTE,
    EXACT_FLOP_LIMIT,
    GPU_REQUIRED,
    PEER_OPS,
    SHAPE_SETS,
    TARGETS,
    LibraryCompareReport,
    ShapeComparison,
    short_error,
)
from aka_tui.bench.compare.library.shape import compare_shape
from aka_tui.bench.measure.timing import Timers
from aka_tui.bench.problem.model import Problem, Shape, Suite
from aka_tui.errors import EvaluationError
from aka_tui.paths import checkout_dir


def select_shapes(problem: Problem, tier: str, which: Iterable[str],
                  flops_of: Callable[[Shape], float]) -> list[tuple[Shape, list[str]]]:
    """The shapes to compare, in suite order, each with why it was selected (largest by FLOPs, weighted, all)."""
    shapes = problem.shapes_for(tier)
    if not shapes:
        return []
    reasons: dict[str, list[str]] = {}
    which = list(which)
    if "all" in which:
        for s in shapes:
            reasons.setdefault(s.shape_id, []).append("all")
    if "largest" in which:
        reasons.setdefault(max(shapes, key=flops_of).shape_id, []).append("largest")
    if "weighted" in which:
        for s in shapes:
            if s.weight > 0:
                reasons.setdefault(s.shape_id, []).append("weighted")
    return [(s, reasons[s.shape_id]) for s in shapes if s.shape_id in reasons]


def parse_shape_sets(text: str) -> list[str]:
    sets = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in sets if t not in SHAPE_SETS]
    if unknown or not sets:
        raise EvaluationError(f"--shapes takes a comma-separated list of {', '.join(SHAPE_SETS)}, not {text!r}")
    return sets


def resolve_run_device(device: str, tier: str | None) -> tuple[str, str]:
    """(device, tier): a CUDA GPU and the full tier by default; the CPU only as an explicit smoke dry-run."""
    has_cuda = torch.cuda.is_available()
    if device == "auto":
        device = "cuda" if has_cuda else "cpu-implicit"
    if device.startswith("cuda"):
        if not has_cuda:
            raise EvaluationError(GPU_REQUIRED)
        return device, tier or "full"
    if device in ("cpu", "cpu-implicit"):
        if device == "cpu" and tier == "smoke":
            return "cpu", "smoke"
        raise EvaluationError(GPU_REQUIRED)
    raise EvaluationError(f"unknown device {device!r}: use cuda, cuda:N, or cpu (with --tier smoke: a dry-run)")


def select_ops(requested: list[str] | None, suite: Suite, probe_cache: dict,
               log: Callable[[str], None]) -> list[str]:
    """The ops to compare: those asked for, else every op with a target and, where Liger is importable, the ops it
    covers that the suite has (a run without it says so once). Liger is probed only when one of its ops may run."""
    ops = list(requested or [])
    compared = (*TARGETS, *PEER_OPS)
    unknown = [o for o in ops if o not in compared]
    if unknown:
        raise EvaluationError(f"no library comparison for {', '.join(unknown)}; compared ops: {', '.join(compared)}")
    if not ops:
        status = liger_status(probe_cache)
        if not status.available:
            log(skip_line(status))
        peers = [o for o in PEER_OPS if o in suite.problems] if status.available else []
        return [*TARGETS, *peers]
    peer_only = [o for o in ops if o in PEER_OPS]
    if peer_only and not liger_status(probe_cache).available:
        raise EvaluationError(f"{', '.join(peer_only)} compared only against the {PEER} peer, which is not importable "
                              f"({liger_status(probe_cache).reason}): {INSTALL_HINT}")
    return ops


def _l2_bytes(device: str, hardware: str | None) -> int:
    from aka_tui.bench.roofline.hardware import detect_profile, get_profile
    from aka_tui.errors import HardwareProfileError

    try:
        return (get_profile(hardware) if hardware else detect_profile(device)).l2_bytes
    except HardwareProfileError:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        return int(getattr(props, "L2_cache_size", 0) or 64 << 20)


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _candidates_dir(candidates_dir: Path | None) -> Path:
    """DIR as given, `kb/family` by default; a relative `kb/...` also from outside the checkout."""
    repo = checkout_dir()
    candidates_dir = candidates_dir or repo / "kb" / "family"
    if not candidates_dir.is_absolute() and not candidates_dir.is_dir() and (repo / candidates_dir).is_dir():
        candidates_dir = repo / candidates_dir
    if not candidates_dir.is_dir():
        raise EvaluationError(f"candidates directory {candidates_dir} does not exist")
    return candidates_dir


def _device_facts(device: str, dry_run: bool, hardware: str | None) -> tuple[str, int, dict[str, str]]:
    """(device name, L2 bytes for the timer's flush, library versions) of the device compared on."""
    if dry_run:
        device_name, l2_bytes = platform.processor() or platform.machine(), 0
    else:
        if torch.device(device).index is not None:
            torch.cuda.set_device(torch.device(device))
        device_name = torch.cuda.get_device_name(torch.cuda.current_device())
        l2_bytes = _l2_bytes(device, hardware)
    versions = {"python": platform.python_version(), "torch": torch.__version__,
                "cuda": str(torch.version.cuda), "cudnn": str(torch.backends.cudnn.version())}
    try:
        import triton

        versions["triton"] = triton.__version__
    except ImportError:
        versions["triton"] = "missing"
    return device_name, l2_bytes, versions


def _compare_op(problem: Problem, candidates_dir: Path, device: str, tier: str, shape_sets: Iterable[str],
                probe_cache: dict, comparisons: list[ShapeComparison], errors: dict[str, str],
                shape_args: tuple[Timers, int, int, float], log: Callable[[str], None],
                after_shape: Callable[[], None]) -> None:
    """One op: load its reference, inputs and candidate, then compare each selected shape."""
    from aka_tui.bench.problem.module_loading import import_file
    from aka_tui.bench.problem.settled_order import import_reference
    from aka_tui.bench.scoring.bench_report import find_candidate

    op = problem.name
    path = find_candidate(candidates_dir, problem)
    if path is None:
        errors[op] = f"no candidate for {op} in {candidates_dir}"
        log(f"{op}: {errors[op]}")
        return
    try:
        ref_module = import_reference(problem.reference_path, "ref")
        input_module = import_file(problem.input_path, "inp")
        cand_cls = import_file(path, "cand").Model
    except Exception as exc:
        errors[op] = f"cannot load {op}: {short_error(exc)}"
        log(f"{op}: {errors[op]}")
        return
    ctx = Context(problem, ref_module, input_module, device, probe_cache)
    for shape, why in select_shapes(problem, tier, shape_sets, ctx.flops):
        log(f"{op}:{shape.shape_id} ({', '.join(why)})")
        try:
            comparisons.append(compare_shape(ctx, shape, why, cand_cls, _display(path), *shape_args, log))
        except Exception as exc:  # inputs or reference failing: the problem's side, say so and go on
            errors[f"{op}:{shape.shape_id}"] = short_error(exc)
            log(f"  failed: {short_error(exc)}")
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
        after_shape()


def run_library_compare(suite: Suite, device: str, tier: str, ops: list[str] | None = None,
                        shape_sets: Iterable[str] = ("largest", "weighted"), candidates_dir: Path | None = None,
                        rounds: int = 3, hardware: str | None = None, exact_flop_limit: float = EXACT_FLOP_LIMIT,
                        log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
                        checkpoint: Callable[[LibraryCompareReport], None] | None = None) -> LibraryCompareReport:
    """Compare each op's candidate with the library on the selected shapes (see the module docstring);
    `checkpoint` receives the report so far after every shape (a killed run keeps what it measured)."""
    started = time.time()
    dry_run = not device.startswith("cuda")
    if dry_run:
        # Before anything imports triton.language: its own @triton.jit helpers (tl.cdiv...) must be interpreted too.
        if os.environ.get("TRITON_INTERPRET") != "1" and "triton.language" in sys.modules:
            raise EvaluationError("the CPU dry-run needs the Triton interpreter, but triton was imported without it: "
                                  "set TRITON_INTERPRET=1 in the environment")
        os.environ["TRITON_INTERPRET"] = "1"
    timers = Timers.capture()  # before any candidate module is imported, as in the evaluator's worker
    probe_cache: dict = {}
    ops = select_ops(ops, suite, probe_cache, log)
    missing = [o for o in ops if o not in suite.problems]
    if missing:
        raise EvaluationError(f"problem(s) {', '.join(missing)} not in the suite {suite.directory}")
    candidates_dir = _candidates_dir(candidates_dir)
    if dry_run:
        log(DRY_RUN_NOTE)
    device_name, l2_bytes, versions = _device_facts(device, dry_run, hardware)
    peers = {PEER: probe_cache["liger"].to_json()} if "liger" in probe_cache else {}
    if peers:
        versions["liger_kernel"] = peers[PEER]["version"] or "missing"
    comparisons: list[ShapeComparison] = []
    errors: dict[str, str] = {}

    def report() -> LibraryCompareReport:
        fp8 = probe_cache.get("fp8")
        return LibraryCompareReport(device, device_name, tier, dry_run, rounds, str(candidates_dir), versions,
                                    fp8.attempts if fp8 else [], list(comparisons), time.time() - started,
                                    dict(errors), peers)

    def body() -> None:
        with torch.no_grad():
            for op in ops:
                _compare_op(suite.problems[op], candidates_dir, device, tier, shape_sets, probe_cache, comparisons,
                            errors, (timers, l2_bytes, rounds, exact_flop_limit), log,
                            lambda: checkpoint(report()) if checkpoint is not None else None)

    nested_log = logging.getLogger("torch.nested._internal.sdpa")  # warns at length when a backend declines
    level = nested_log.level
    nested_log.setLevel(logging.ERROR)
    try:
        if dry_run:
            body()
        else:
            from aka_tui.bench.evaluator.gpu_lock import exclusive_gpu, gpu_identity

            with exclusive_gpu(gpu_identity(torch.cuda.current_device())):
                body()
    finally:
        nested_log.setLevel(level)
    return report()
