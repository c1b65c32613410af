"""Compiler seeding: turn inductor's generated Triton kernels and launch code into a standalone candidate.

Each kernel inductor generated is copied into the candidate as a plain `@triton.jit` function (inductor's
autotuning decorator removed; its device helpers such as `triton_helpers.max2` stay, they are inlined), and
each launch goes through a launcher of ours whose block sizes, warps and stages come from the candidate's
TUNABLES, so the offline loop searches them. The wrapper's buffer allocation and launch order are kept; any
call it makes into a library (extern GEMMs, attention, aten fallbacks) is refused: such a seed would not be
the candidate's own kernels, so the agent falls back to transfer or to the model — except the matrix products
(`mm`, `addmm`, `bmm`, `baddbmm`, `_int_mm`, `_scaled_mm`, `_grouped_mm`, `_weight_int8pack_mm`), which the seed
computes with a Triton GEMM of its own (`seed_gemm.py`), so that a projection with a fused epilogue becomes the
candidate's own kernels too. One program is generated per combination of init arguments and input dtypes among the
problem's shapes (both are constants of a traced graph); input sizes stay symbolic, but those a trace holds fixed
(`fixed_sizes`: a loop ran over them) are recorded, and shapes that need other values get programs of their own
(`seed_source.build_seed`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from aka_tui.agent.inductor_capture import HELD_PREFIX, CapturedGraph

_KERNEL_RE = re.compile(r"^(\w+) = async_compile\.triton\('(\w+)', '''\n(.*?)''', device_str='(\w+)'\)",
                        re.MULTILINE | re.DOTALL)
_EXTERN_MARKERS = ("extern_kernels.", "async_compile.cpp", "torch.ops.", "aten.", "cpp_fused", "async_compile.cuda")
# library matrix products the seed computes itself: the wrapper's call -> the seed's launcher (seed_gemm.py)
OWN_GEMMS = {"extern_kernels.mm": "_seed_mm", "extern_kernels.addmm": "_seed_addmm", "extern_kernels.bmm": "_seed_bmm",
             "extern_kernels.baddbmm": "_seed_baddbmm", "extern_kernels._int_mm": "_seed_int_mm",
             "extern_kernels._scaled_mm": "_seed_scaled_mm", "extern_kernels._grouped_mm": "_seed_grouped_mm",
             "extern_kernels._weight_int8pack_mm": "_seed_weight_int8pack_mm"}
_GRID_TYPES = ("Grid1D", "Grid2D", "Grid2DWithYZOverflow", "Grid3D")
BLOCK_SPACE = {"pointwise": [128, 256, 512, 1024, 2048, 4096], "x-reduction": [1, 2, 4, 8, 16, 32]}
R_BLOCK_SPACE = [64, 128, 256, 512, 1024, 2048, 4096]
WARPS_SPACE = [1, 2, 4, 8, 16]
STAGES_SPACE = [1, 2, 3]


class SeedError(Exception):
    """The generated code cannot become a standalone candidate (extern calls, unknown launch form)."""


@dataclass
class SeedKernel:
    """One generated Triton kernel, cleaned, with what its launcher needs."""

    name: str
    source: str
    kind: str  # pointwise | reduction | persistent_reduction
    params: list[str]
    constexprs: list[str]
    grid_type: str


@dataclass
class SeedProgram:
    """One traced graph: the wrapper's call body (translated) and how to build its arguments."""

    key: str
    body: list[str]
    arg_exprs: list[str]
    kernels: list[str] = field(default_factory=list)
    gemms: list[str] = field(default_factory=list)  # the library products it computes with the seed's GEMM
    fixed: list[tuple[str, int, int]] = field(default_factory=list)  # (input, dim, size) the trace fixed


_VIEW_DTYPE = "aten.view.dtype("


def _plain_views(line: str) -> str:
    """`aten.view.dtype(X, torch.T)` (a buffer reinterpreted as another dtype of its width, as a returned bitcast
    view is written) as the torch view `(X).view(torch.T)`: no library work."""
    while (start := line.find(_VIEW_DTYPE)) >= 0:
        depth, end = 1, start + len(_VIEW_DTYPE)
        while end < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[end], 0)
            end += 1
        found = re.fullmatch(r"(.+), (torch\.\w+)", line[start + len(_VIEW_DTYPE):end - 1], re.DOTALL)
        if depth or found is None:
            return line  # not the form above: left as the library call it is
        line = f"{line[:start]}({found.group(1)}).view({found.group(2)}){line[end:]}"
    return line


def extern_calls(source: str, owned: tuple[str, ...] = ()) -> list[str]:
    """Library calls the generated wrapper makes (outside the Triton kernels), but those in `owned`. Its size and
    stride asserts name the op that made a buffer (a string, not a call): the seed drops them."""
    found = []
    for line in _call_body(source):
        if line.strip().startswith("assert_"):
            continue
        code = _plain_views(line.split("#", 1)[0])
        for marker in _EXTERN_MARKERS:
            for match in re.finditer(re.escape(marker) + r"[\w.]*", code):
                call = match.group(0).rstrip(".")
                if call not in owned:
                    found.append(call)
    return sorted(set(found))


def gemm_calls(body: list[str]) -> list[str]:
    """The library matrix products (OWN_GEMMS) a call body makes."""
    return sorted({call for line in body for call in OWN_GEMMS if re.search(re.escape(call) + r"\(", line)})


def _decorator_kind(text: str) -> str:
    found = re.search(r"@triton_heuristics\.(\w+)\(", text)
    if found is None:
        raise SeedError("a generated kernel has no inductor heuristics decorator to read its kind from")
    if found.group(1) not in ("pointwise", "reduction", "persistent_reduction"):
        raise SeedError(f"a generated kernel is a {found.group(1)} (template/foreign), not an own kernel")
    return found.group(1)


_HELPER_RE = re.compile(r"\b_triton_helper_fn_(\w+)")


def clean_kernel(name: str, text: str) -> SeedKernel:
    """The kernel as a plain @triton.jit function, with its launch metadata; the @triton.jit helpers inductor
    writes before a scan's or a sort's kernel (their combine functions) come with it."""
    kind = _decorator_kind(text)
    grid = re.search(r"'grid_type': '(\w+)'", text)
    grid_type = grid.group(1) if grid else "Grid1D"
    if grid_type not in _GRID_TYPES:
        raise SeedError(f"kernel {name}: grid type {grid_type} is not supported by the seed's launcher")
    decorator = re.search(r"@triton_heuristics\.\w+\(", text)
    assert decorator is not None  # _decorator_kind found it
    start = text.index("@triton.jit", decorator.end())
    first = text.find("@triton.jit")
    helpers = text[first:decorator.start()].rstrip() + "\n\n\n" if first < decorator.start() else ""
    kernel_text = text[start:]
    body = helpers + kernel_text
    header = re.search(r"def \w+\((.*?)\):", kernel_text, re.DOTALL)
    if header is None:
        raise SeedError(f"kernel {name}: no signature")
    params: list[str] = []
    constexprs: list[str] = []
    for raw in header.group(1).split(","):
        raw = raw.strip()
        if not raw:
            continue
        pname = raw.split(":")[0].strip()
        (constexprs if "constexpr" in raw else params).append(pname)
    for c in constexprs:
        if not re.fullmatch(r"[XYZ]BLOCK|R0_BLOCK", c):
            raise SeedError(f"kernel {name}: unknown compile-time parameter {c}")
    return SeedKernel(name, body.rstrip() + "\n", kind, params, constexprs, grid_type)


def _call_body(source: str) -> list[str]:
    """The lines of the wrapper's `call(args)`, dedented to one level."""
    lines = source.splitlines()
    for index, line in enumerate(lines):
        found = re.match(r"^(\s*)def call\((?:self, )?args\):", line)
        if found:
            indent = len(found.group(1)) + 4
            body = []
            for nxt in lines[index + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) < indent:
                    break
                body.append(nxt[indent:] if nxt.strip() else "")
            return body
    raise SeedError("the generated wrapper has no call(args) function")


def translate_body(body: list[str], kernel_names: dict[str, str]) -> list[str]:
    """The call body with inductor's runtime replaced by plain torch and the seed's launchers."""
    out = []
    for line in body:
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("assert_") or "get_raw_stream(" in line:
            continue
        if "torch.cuda.set_device" in line:
            continue
        line = re.sub(r"with torch\.cuda\._DeviceGuard\(\d+\):", "if True:", line)
        line = re.sub(r"\bempty_strided_(cpu|cuda)\(", "_seed_empty(_device, ", line)
        line = re.sub(r"\breinterpret_tensor\(", "_seed_reinterpret(", line)
        line = _plain_views(line)
        line = re.sub(r",\s*stream=\w+\)", ")", line)
        for var, launcher in kernel_names.items():
            line = re.sub(rf"\b{var}\.run\(", f"{launcher}(", line)
        for call, launcher in OWN_GEMMS.items():
            line = re.sub(re.escape(call) + r"\(", f"{launcher}(", line)
        if ".run(" in line:
            raise SeedError(f"the generated wrapper launches something the seed does not know: {stripped[:80]}")
        out.append(line)
    return out


def arg_expressions(graph: CapturedGraph) -> list[str]:
    """How the candidate builds each argument of `call` from its forward inputs."""
    exprs = []
    for p in graph.placeholders:
        if p.prop is None:
            exprs.append(f"inputs[{p.input_name!r}]")
        else:
            exprs.append(f"inputs[{p.input_name!r}].{p.prop}({p.index})")
    return exprs


_ASSERT_RE = re.compile(r"^assert_size_stride\((\w+), \(([^()]*)\)")


def fixed_sizes(graph: CapturedGraph) -> list[tuple[str, int, int]]:
    """The sizes of forward inputs the traced program holds fixed, as (input name, dimension, size): those the
    wrapper asserts as a number rather than a symbol. A Python loop over a size (`range(tokens)`, a list of
    sequence bounds read with `.tolist()`) fixes it; so does a size of 0 or 1. The program is only right for
    inputs of those sizes."""
    body = _call_body(graph.source)
    names = next((re.findall(r"\w+", line.split("=", 1)[0]) for line in body if re.search(r"=\s*args\s*$", line)),
                 [])
    inputs = {var: p.input_name for var, p in zip(names, graph.placeholders)
              if p.prop is None and not p.input_name.startswith(HELD_PREFIX)}
    fixed = []
    for line in body:
        found = _ASSERT_RE.match(line.strip())
        if found is None or found.group(1) not in inputs:
            continue
        for dim, size in enumerate(part.strip() for part in found.group(2).split(",") if part.strip()):
            if size.isdigit():
                fixed.append((inputs[found.group(1)], dim, int(size)))
    return fixed


def parse_program(key: str, graph: CapturedGraph, kernels: dict[str, SeedKernel]) -> SeedProgram:
    """One captured graph as a program of the seed; its kernels are added to `kernels` (deduplicated)."""
    externs = extern_calls(graph.source, tuple(OWN_GEMMS))
    if externs:
        raise SeedError("inductor emits library calls for this reference: " + ", ".join(externs)
                        + " (a compiler seed would not be the candidate's own kernels)")
    body = _call_body(graph.source)
    gemms = gemm_calls(body)
    names: dict[str, str] = {}
    used = []
    for var, name, text, _device in _KERNEL_RE.findall(graph.source):
        kernel = clean_kernel(name, text)
        same = next((k for k in kernels.values() if k.source.replace(k.name, "KERNEL")
                     == _HELPER_RE.sub(r"KERNEL_helper_\1", kernel.source.replace(kernel.name, "KERNEL"))), None)
        if same is None:
            index = len(kernels)
            kernel.source = kernel.source.replace(f"def {kernel.name}(", f"def _seed_kernel_{index}(")
            # each kernel's helpers under its own names: inductor numbers them per kernel module
            kernel.source = _HELPER_RE.sub(rf"_seed_kernel_{index}_helper_\1", kernel.source)
            kernel.name = f"_seed_kernel_{index}"
            kernels[kernel.name] = kernel
            same = kernel
        names[var] = f"_launch{same.name.removeprefix('_seed_kernel')}"
        used.append(same.name)
    if not names and not gemms:
        raise SeedError("inductor generated no Triton kernel for this reference (nothing is computed?)")
    return SeedProgram(key, translate_body(body, names), arg_expressions(graph), used, gemms, fixed_sizes(graph))


def kernel_tunables(kernel: SeedKernel) -> tuple[dict[str, object], dict[str, list[object]]]:
    """Defaults and search space of one kernel's block sizes, warps and stages (prefix k<i>_)."""
    prefix = "k" + kernel.name.removeprefix("_seed_kernel_") + "_"
    tunables: dict[str, object] = {}
    space: dict[str, list[object]] = {}
    reduction = kernel.kind != "pointwise"
    for c in kernel.constexprs:
        if c == "R0_BLOCK":
            if kernel.kind == "persistent_reduction":
                continue  # the whole row in one tile: sized at launch
            tunables[prefix + c], space[prefix + c] = 1024, list(R_BLOCK_SPACE)
        elif reduction:
            tunables[prefix + c], space[prefix + c] = 1, list(BLOCK_SPACE["x-reduction"])
        else:
            default = {"Grid1D": 1024, "Grid3D": 8}.get(kernel.grid_type, 32)  # a tile is the product of its axes
            values = {"Grid1D": BLOCK_SPACE["pointwise"], "Grid3D": [2, 4, 8, 16, 32]}.get(kernel.grid_type,
                                                                                         [8, 16, 32, 64, 128])
            tunables[prefix + c], space[prefix + c] = default, list(values)
    tunables[prefix + "num_warps"], space[prefix + "num_warps"] = (8 if reduction else 4), list(WARPS_SPACE)
    tunables[prefix + "num_stages"], space[prefix + "num_stages"] = 1, list(STAGES_SPACE)
    return tunables, space
