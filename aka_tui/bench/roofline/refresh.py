"""Recompute a problem's cached roofline (W, Q per shape), running the reference once per shape."""

from __future__ import annotations

from aka_tui.bench.problem.inputs import make_inputs
from aka_tui.bench.problem.model import Problem, RooflineEntry
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.problem.native import load_cached_roofline
from aka_tui.bench.problem.seeds import derive_seed
from aka_tui.bench.roofline.bound import measure_entry, write_cache
from aka_tui.errors import ProblemFormatError


def _devices(device: str) -> list[str]:
    import torch

    if device != "auto":
        return [device]
    # Shapes alone decide W and Q for most references: try the meta device (no memory, no compute) first.
    return ["meta", "cuda" if torch.cuda.is_available() else "cpu"]


def stored_entries(problem: Problem) -> dict[str, RooflineEntry]:
    """A native problem's roofline.json entries as written, whatever its inputs hash says (a stale file's
    entries are what a recount is compared with); none when the file is unreadable."""
    try:
        return load_cached_roofline(problem.name, problem.roofline_path, problem.shapes, check_hash=False)
    except ProblemFormatError:
        return {}


def _agrees(new: RooflineEntry, old: RooflineEntry, within: float) -> bool:
    pairs = ((new.flops, old.flops), (new.bytes_read, old.bytes_read), (new.bytes_written, old.bytes_written))
    return new.path == old.path and all(abs(a - b) <= within * max(abs(a), abs(b)) for a, b in pairs)


def refresh(problem: Problem, device: str = "auto", tier: str | None = None, only_missing: bool = False,
            keep_within: float | None = None, kept: list[str] | None = None) -> int:
    """Recount the shapes of `tier` (only those without an entry when `only_missing`) and keep the counts
    (roofline.json of a native problem, the per-user cache for a published one); returns how many. With
    `keep_within` (a fraction), a recount that agrees with the stored entry that closely keeps the stored one
    (counted on another device, whose random inputs gave slightly other counts); their ids go to `kept`."""
    ref_module = import_file(problem.reference_path, "ref")
    input_module = import_file(problem.input_path, "inp")
    todo = [s for s in problem.shapes_for(tier) if not (only_missing and s.shape_id in problem.roofline)]
    stored = stored_entries(problem) if keep_within is not None and problem.source_format == "native" else {}
    for shape in todo:
        seed = derive_seed(problem.name, shape.shape_id, 0, "roofline")
        errors = []
        for dev in _devices(device):
            try:
                entry = measure_entry(problem, shape, ref_module,
                                      lambda dev=dev: make_inputs(problem, input_module, shape, dev, seed),  # type: ignore[misc]  # mypy cannot infer a lambda with default arguments
                                      lambda dev=dev: ref_module.Model(**shape.init_kwargs).to(dev).eval())  # type: ignore[misc]
            except Exception as exc:  # meta cannot run data-dependent references; try the next device
                errors.append(f"{dev}: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            previous = stored.get(shape.shape_id)
            if previous is not None and keep_within is not None and _agrees(entry, previous, keep_within):
                entry = previous
                if kept is not None:
                    kept.append(shape.shape_id)
            problem.roofline[shape.shape_id] = entry
            break
        else:
            raise ProblemFormatError(f"{problem.name}: roofline of shape {shape.shape_id} failed: " + " | ".join(errors))
    if todo:
        write_cache(problem)
    return len(todo)


def import_from_report(problems: dict[str, Problem], report: dict) -> dict[str, int]:
    """Fill roofline caches from a bench report (W/Q counted on another machine, e.g. a GPU server).

    Only entries for problems whose reference/inputs/shapes hash matches the report's are taken.
    Returns the number of shapes imported per problem.
    """
    from aka_tui.bench.problem.model import RooflineEntry

    imported: dict[str, int] = {}
    for result in report.get("results", []):
        problem = problems.get(result.get("problem"))
        if problem is None or problem.source_format != "native":
            continue
        if result.get("provenance", {}).get("problem_hash") != problem.content_hash:
            continue
        count = 0
        for shape in result.get("shapes", []):
            r = shape.get("roofline")
            if r and shape["shape_id"] in problem.shapes:
                problem.roofline[shape["shape_id"]] = RooflineEntry.from_json(r)
                count += 1
        if count:
            write_cache(problem)
            imported[problem.name] = count
    return imported
