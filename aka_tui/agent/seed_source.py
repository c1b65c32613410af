"""Write and check a compiler-seeded candidate: inductor's kernels for every program of a problem, launchers
that read TUNABLES, and a `Model` with the reference's interface that picks the program for its init
arguments and input dtypes."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import torch

from aka_tui.agent.compile_seed import SeedError, SeedKernel, SeedProgram, kernel_tunables, parse_program
from aka_tui.agent.inductor_capture import HELD_PREFIX, CaptureError, capture
from aka_tui.agent.probe import Probe, flatten_outputs, inputs_device, output_matches, reference_model
from aka_tui.agent.seed_gemm import GEMM_SOURCE, GEMM_SPACE, GEMM_TUNABLES
from aka_tui.agent.seed_tables import TABLES_INIT, TABLES_METHOD, TablesError, embedded_reference
from aka_tui.agent.seed_templates import HEADER, MODEL, RUNTIME
from aka_tui.bench.problem.model import Problem, Shape
from aka_tui.bench.problem.settled_order import as_written


@dataclass
class SeedResult:
    """A seeded candidate's source, or why there is none."""

    source: str | None
    reason: str
    programs: int = 0


def _launcher(kernel: SeedKernel) -> str:
    """A launcher that sizes the grid from xnumel/ynumel and takes block sizes from TUNABLES."""
    index = kernel.name.removeprefix("_seed_kernel_")
    prefix = f"k{index}_"
    lines = [f"def _launch_{index}(*args):", f'    """Launch {kernel.name} with its TUNABLES."""']
    lines.append(f"    named = dict(zip({kernel.params!r}, args))")
    lines.append("    meta = {}")
    for c in kernel.constexprs:
        if c == "R0_BLOCK" and kernel.kind == "persistent_reduction":
            lines.append('    meta["R0_BLOCK"] = triton.next_power_of_2(max(int(named["r0_numel"]), 1))')
        elif c == "R0_BLOCK":  # no wider than the row: lanes past it are masked work (the interpreter's time)
            lines.append(f'    meta["R0_BLOCK"] = min(TUNABLES["{prefix}R0_BLOCK"], '
                         'triton.next_power_of_2(max(int(named["r0_numel"]), 1)))')
        else:
            lines.append(f'    meta["{c}"] = TUNABLES["{prefix}{c}"]')
    lines += [f"    {line}" for line in _grid_lines(kernel)]
    lines.append("    if min(grid) <= 0:")
    lines.append("        return")
    lines.append(f'    {kernel.name}[grid](*args, **meta, num_warps=TUNABLES["{prefix}num_warps"], '
                 f'num_stages=TUNABLES["{prefix}num_stages"])')
    return "\n".join(lines) + "\n"


# CUDA's limit on a grid's y (and z) dimension; inductor folds a longer y axis into z (Grid2DWithYZOverflow)
MAX_Y_GRID = 65535


def _grid_lines(kernel: SeedKernel) -> list[str]:
    """The launcher's lines that set `grid` as inductor's grid type for the kernel computes it: Grid1D, Grid2D,
    Grid3D, and Grid2DWithYZOverflow (y tiles beyond MAX_Y_GRID spread over z; the kernel reads its y tile as
    program_id(1) + program_id(2) * num_programs(1) and masks the overflow)."""
    x = 'triton.cdiv(int(named["xnumel"]), meta["XBLOCK"])' if "XBLOCK" in kernel.constexprs else \
        'int(named.get("xnumel", 1))'
    y = 'triton.cdiv(int(named["ynumel"]), meta["YBLOCK"])'
    if kernel.grid_type == "Grid2D":
        return [f"grid = ({x}, {y})"]
    if kernel.grid_type == "Grid3D":
        return [f'grid = ({x}, {y}, triton.cdiv(int(named["znumel"]), meta["ZBLOCK"]))']
    if kernel.grid_type == "Grid2DWithYZOverflow":
        return [f"y_tiles = {y}", f"y_folds = triton.cdiv(y_tiles, {MAX_Y_GRID})",
                f"grid = ({x}, triton.cdiv(y_tiles, y_folds) if y_folds else 0, y_folds)"]
    return [f"grid = ({x},)"]


def _program_source(index: int, program: SeedProgram) -> str:
    lines = [f"def _program_{index}(inputs, _device):", f'    """Generated for {program.key}."""',
             f"    args = [{', '.join(program.arg_exprs)}]"]
    lines += ["    " + line if line else "" for line in program.body]
    return "\n".join(lines) + "\n"


def _signature(fn: Any) -> tuple[str, list[str]]:
    parts, names = [], []
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        names.append(p.name)
        default = p.default
        if default is inspect.Parameter.empty:
            parts.append(p.name)
        else:
            parts.append(f"{p.name}={default!r}" if isinstance(default, (int, float, str, bool, type(None)))
                         else f"{p.name}=None")
    return "".join(", " + s for s in parts), names


def assemble(problem: Problem, reference_model: Any, programs: list[SeedProgram], kernels: dict[str, SeedKernel],
             structure: tuple, keys: dict[str, tuple[dict[str, Any], list[str]]],
             aliases: tuple[str | None, ...] = (), tables: list[str] | None = None) -> str:
    """The candidate file. `aliases`: per reference output, the input it is (an in-place reference returning
    what it wrote into: inductor's code writes those inputs and leaves them out of its results), else None.
    `tables`: the reference's buffers outside its state dict, which the candidate builds with the reference's
    code (seed_tables.py)."""
    tunables: dict[str, Any] = {}
    space: dict[str, Any] = {}
    for kernel in kernels.values():
        t, s = kernel_tunables(kernel)
        tunables.update(t)
        space.update(s)
    gemm = any(p.gemms for p in programs)
    if gemm:
        tunables.update(GEMM_TUNABLES)
        space.update(GEMM_SPACE)
    init_params, init_names = _signature(reference_model.__init__)
    forward_params, forward_names = _signature(reference_model.forward)
    parts = [HEADER.format(problem=problem.name, torch_version=torch.__version__, tunables=tunables, space=space)]
    parts += ["\n\n" + k.source for k in kernels.values()]
    parts.append(RUNTIME)
    if gemm:
        parts.append(GEMM_SOURCE)
    parts += ["\n\n" + _launcher(k) for k in kernels.values()]
    parts += ["\n\n" + _program_source(i, p) for i, p in enumerate(programs)]
    table = "".join(f"\n    ({keys[p.key][0]!r}, {keys[p.key][1]!r}, _program_{i}, {p.fixed!r}),"
                    for i, p in enumerate(programs))
    parts.append(f"\n\n_PROGRAMS = [{table}\n]\n_STRUCTURE = {structure!r}\n_ALIASES = {tuple(aliases)!r}\n")
    held = any(e.startswith("inputs['" + HELD_PREFIX) for p in programs for e in p.arg_exprs)
    if tables:
        parts.append(embedded_reference(problem.reference_path, tables))
    sources = ["inputs", *(["self._seed_held"] if held else []), *(["self._seed_tables()"] if tables else [])]
    parts.append(MODEL.format(init_params=init_params, forward_params=forward_params,
                               program_inputs="{" + ", ".join(f"**{s}" for s in sources) + "}" if len(sources) > 1
                               else "inputs",
                               tables_init=TABLES_INIT if tables else "", tables_method=TABLES_METHOD if tables else "",
                               init_dict="{" + ", ".join(f"{n!r}: {n}" for n in init_names) + "}",
                               forward_dict="{" + ", ".join(f"{n!r}: {n}" for n in forward_names) + "}"))
    return "".join(parts)


def _key(reference_model: Any, shape: Shape, inputs: dict[str, Any]) -> tuple[str, tuple[dict[str, Any], list[str]]]:
    """A program's key, and its init arguments (defaults applied, as the candidate's Model holds them) and
    input dtypes."""
    bound = inspect.signature(reference_model.__init__).bind(None, **(shape.init_kwargs or {}))
    bound.apply_defaults()
    init = {k: v for k, v in list(bound.arguments.items())[1:]}
    dtypes = [str(v.dtype) for v in inputs.values() if isinstance(v, torch.Tensor)]
    return repr((sorted(init.items()), dtypes)), (init, dtypes)


WIDEN_LIMIT = 1024  # how much larger (product of numeric arguments) a wide shape of another tier may be


def _group_key(shape: Shape) -> str:
    strings = sorted((k, v) for k, v in shape.input_kwargs.items() if isinstance(v, str))
    return repr((sorted((shape.init_kwargs or {}).items()), strings))


def _numbers(shape: Shape) -> list[float]:
    return [v for v in shape.input_kwargs.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _size(shape: Shape) -> float:
    return float(math.prod(abs(v) + 1 for v in _numbers(shape)))


def _wide(shape: Shape) -> bool:
    """Every numeric input argument above 1: a traced size of 1 is specialised, not symbolic."""
    return all(v > 1 for v in _numbers(shape))


def _representatives(shapes: list[Shape], others: list[Shape] | None = None) -> list[Shape]:
    """One shape per combination of init arguments and string input arguments (dtype names): the smallest wide
    one. Where `shapes` (a tier) has none, the smallest wide one of `others` (the problem's other shapes) in
    the same combination, up to WIDEN_LIMIT times larger: a program captured where a size is 1 keeps that 1
    and is wrong on every shape where it is not (a one-token smoke shape of a convolution gave (4096, 1)
    outputs on the GPU for (4096, 128) ones)."""
    groups: dict[str, list[Shape]] = {}
    for shape in shapes:
        groups.setdefault(_group_key(shape), []).append(shape)
    chosen = []
    for key, members in groups.items():
        wide = [s for s in members if _wide(s)]
        if not wide:
            smallest = min(members, key=_size)
            wide = [s for s in others or [] if _group_key(s) == key and _wide(s)
                    and _size(s) <= WIDEN_LIMIT * _size(smallest)]
        chosen.append(min(wide or members, key=_size))
    return chosen


def _capture_shapes(problem: Problem, tier: str | None) -> list[Shape]:
    """The shapes whose programs the seed captures: the representatives of `tier`, then one of every other
    combination of init arguments and dtype names among the problem's other tiers, up to WIDEN_LIMIT times the
    largest of those. A candidate built on one tier is timed on others (the CPU builds on smoke shapes, the GPU
    times full ones), and a program traced for other init arguments is wrong there: they are constants of the
    graph (a seed traced with 32 heads gave (1, 32, 128) outputs where 40 heads were asked for)."""
    everything = problem.shapes_for(None)
    chosen = _representatives(problem.shapes_for(tier) or everything, everything)
    covered = {_group_key(s) for s in chosen}
    bound = WIDEN_LIMIT * max(_size(s) for s in chosen) if chosen else 0.0
    return chosen + [s for s in _representatives(everything)
                     if _group_key(s) not in covered and _size(s) <= bound]


MAX_PROGRAMS = 8  # programs a seed captures in all (each a trace and a lowering: seconds to a minute on a CPU)


def _fixed_size_candidates(problem: Problem, tier: str | None, chosen: list[Shape]) -> list[Shape]:
    """The shapes a program with fixed sizes may not serve, up to WIDEN_LIMIT times the largest shape captured:
    the tier's, then the other tiers' (a candidate built on one tier is timed on others), smallest first."""
    bound = WIDEN_LIMIT * max((_size(s) for s in chosen), default=0.0)
    taken = {s.shape_id for s in chosen}
    own = problem.shapes_for(tier) or problem.shapes_for(None)
    own_ids = {s.shape_id for s in own}
    rest = [s for s in problem.shapes_for(None) if s.shape_id not in own_ids]
    return [s for group in (own, rest) for s in sorted(group, key=_size)
            if s.shape_id not in taken and _size(s) <= bound]


def _fits(fixed: list[tuple[str, int, int]], inputs: dict[str, Any]) -> bool:
    return all(isinstance(inputs.get(name), torch.Tensor) and inputs[name].dim() > dim
               and inputs[name].shape[dim] == size for name, dim, size in fixed)


def build_seed(problem: Problem, probes: list[Probe], tier: str | None, device: str) -> SeedResult:
    """Capture every program the problem's shapes of `tier` need, write the candidate, verify it on the probes."""
    from aka_tui.agent.probe import load_modules, reference_tensors
    from aka_tui.bench.problem.inputs import make_inputs

    reference, input_module = load_modules(problem)
    tables = reference_tensors(reference.Model, problem)[1]
    groups: dict[str, tuple[Shape, dict[str, Any], tuple[dict[str, Any], list[str]]]] = {}
    chosen = _capture_shapes(problem, tier)
    for index, shape in enumerate(chosen):
        inputs = make_inputs(problem, input_module, shape, device, 7 + index)
        key, dtypes = _key(reference.Model, shape, inputs)
        groups.setdefault(key, (shape, inputs, dtypes))
    for probe in probes:
        key, dtypes = _key(reference.Model, probe.shape, probe.inputs)
        groups.setdefault(key, (probe.shape, probe.inputs, dtypes))
    kernels: dict[str, SeedKernel] = {}
    programs: list[SeedProgram] = []

    def add(key: str, shape: Shape, inputs: dict[str, Any]) -> None:
        model = as_written(reference.Model)(**(shape.init_kwargs or {})).to(device).eval()
        programs.append(parse_program(key, capture(model, inputs), kernels))

    try:
        for key, (shape, inputs, _dtypes) in groups.items():
            add(key, shape, inputs)
        # shapes whose sizes a program holds fixed otherwise (a loop over them) get programs of their own
        others = [(p.shape, p.inputs) for p in probes] + [
            (s, None) for s in _fixed_size_candidates(problem, tier, chosen)]
        for index, (shape, given) in enumerate(others):
            if len(programs) >= MAX_PROGRAMS or not any(p.fixed for p in programs):
                break
            try:  # a shape that cannot be made or traced here is left to the programs there are
                inputs = given if given is not None else make_inputs(problem, input_module, shape, device,
                                                                     101 + index)
                key = _key(reference.Model, shape, inputs)[0]
                if key in groups and not any(p.key == key and _fits(p.fixed, inputs) for p in programs):
                    add(key, shape, inputs)
            except (CaptureError, SeedError, RuntimeError):
                continue
        source = assemble(problem, reference.Model, programs, kernels, probes[0].structure,
                          {k: v[2] for k, v in groups.items()}, probes[0].aliases, tables)
    except (CaptureError, SeedError, TablesError) as exc:
        return SeedResult(None, str(exc))
    problem_found, unchecked = verify_seed(source, problem, probes, device)
    if problem_found:
        return SeedResult(None, problem_found)
    products = sorted({g.removeprefix("extern_kernels.") for p in programs for g in p.gemms})
    own_gemm = f" and the seed's own GEMM for {', '.join(products)}" if products else ""
    left = (f"; {len(unchecked)} larger probe(s) ({', '.join(unchecked)}) left to the evaluation: the CPU's Triton "
            "interpreter runs them too slowly") if unchecked else ""
    return SeedResult(source, f"compiler seed: torch.compile (inductor) lowered the reference to "
                              f"{len(kernels)} Triton kernel(s){own_gemm} in {len(programs)} program(s){left}",
                      len(programs))


CPU_CHECK_BYTES = 512 << 10  # inputs of a probe beyond the smallest that the seed is checked on in the interpreter


def _input_bytes(probe: Probe) -> int:
    return sum(v.numel() * v.element_size() for v in probe.inputs.values() if isinstance(v, torch.Tensor))


def verify_seed(source: str, problem: Problem, probes: list[Probe], device: str) -> tuple[str, list[str]]:
    """Run the seeded candidate on the probes in this process: ("", ids of probes not run) when every output
    matches, else (why, …). On the CPU the interpreter runs inductor's default blocks one tiny program at a time
    (a reduction's rows one by one: minutes for a 4 MB input), so only the smallest probe and the others under
    CPU_CHECK_BYTES are run there; the evaluation that follows checks the tier's shapes."""
    import tempfile
    import warnings
    from pathlib import Path

    from aka_tui.agent.own_semantics import import_interpreted
    from aka_tui.agent.probe import load_modules
    from aka_tui.bench.problem.module_loading import import_file

    with tempfile.TemporaryDirectory(prefix="aka-seed-") as tmp:
        path = Path(tmp) / f"{problem.name}_seed.py"
        path.write_text(source)
        try:
            # on a CPU the seed's kernels run in Triton's interpreter, which this process's Triton (imported
            # with inductor's, compiling) only gives a kernel defined while TRITON_INTERPRET is set
            module = import_interpreted(path) if device == "cpu" else import_file(path, "seed_check")
            reference = load_modules(problem)[0]
            smallest = min(probes, key=_input_bytes) if probes else None
            unchecked = [p.shape.shape_id for p in probes if device == "cpu" and p is not smallest
                         and _input_bytes(p) > CPU_CHECK_BYTES]
            for probe in probes:
                if probe.shape.shape_id in unchecked:
                    continue
                device_of_probe = inputs_device(probe.inputs)
                model = module.Model(**(probe.shape.init_kwargs or {}))
                if isinstance(model, torch.nn.Module):  # on the probe's device, as the evaluator moves a candidate
                    model = model.to(device_of_probe).eval()
                held = reference_model(reference, probe.shape.init_kwargs or {}, device_of_probe).state_dict()
                if held:  # the evaluator gives a candidate the reference's state dict; so do the probes
                    model.load_state_dict(held)
                # masked lanes of an interpreted kernel compute log(0) and the like: numpy's warnings are noise
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    flat, _ = flatten_outputs(model(**{k: (v.clone() if isinstance(v, torch.Tensor) else v)
                                                       for k, v in probe.inputs.items()}))
                for i, (want, got) in enumerate(zip(probe.outputs, flat)):
                    if not output_matches(problem.tolerance_for, want, got):
                        return (f"the compiler seed does not reproduce the reference: output {i} differs on "
                                f"{probe.shape.shape_id}", unchecked)
                if len(flat) != len(probe.outputs):
                    return (f"the compiler seed does not reproduce the reference: {len(flat)} outputs instead of "
                            f"{len(probe.outputs)}", unchecked)
        except Exception as exc:  # generated code we could not run is no seed
            detail = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            if device == "cpu" and "Interpreter" in type(exc).__name__:
                return ("the compiler seed could not run on the CPU's Triton interpreter (an operation it lacks, "
                        f"not a wrong result; a GPU runs it): {detail}", [])
            return f"the compiler seed failed on the probes: {detail}", []
    return "", unchecked
