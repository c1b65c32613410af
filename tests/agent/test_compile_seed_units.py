"""The compiler seed's translation of inductor's generated module, on wrapper texts in the form inductor writes
for CUDA (device guard, raw streams, CUDA buffers) and with library calls; no inductor run needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aka_tui.agent.compile_seed import SeedError, extern_calls, kernel_tunables, parse_program
from aka_tui.agent.inductor_capture import CapturedGraph, Placeholder

KERNEL = """
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 1024},
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*bf16', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_mul_sigmoid_0'},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_mul_sigmoid_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + (xindex), xmask).to(tl.float32)
    tl.store(out_ptr0 + (xindex), tmp0 * tl.sigmoid(tmp0), xmask)
"""


def _wrapper(extra_call: str = "") -> str:
    return (f"triton_poi_fused_mul_sigmoid_0 = async_compile.triton('triton_poi_fused_mul_sigmoid_0', '''{KERNEL}''', "
            "device_str='cuda')\n\n"
            "aten = torch.ops.aten\n\n"
            "class Runner:\n"
            "    def call(self, args):\n"
            "        arg0_1, arg1_1 = args\n"
            "        args.clear()\n"
            "        s0 = arg0_1\n"
            "        assert_size_stride(arg1_1, (s0, ), (1, ), 'input')\n"
            "        with torch.cuda._DeviceGuard(0):\n"
            "            torch.cuda.set_device(0)\n"
            "            buf0 = empty_strided_cuda((s0, ), (1, ), torch.bfloat16)\n"
            "            # Topologically Sorted Source Nodes: [mul]\n"
            "            stream0 = get_raw_stream(0)\n"
            "            triton_poi_fused_mul_sigmoid_0.run(arg1_1, buf0, s0, stream=stream0)\n"
            f"{extra_call}"
            "            del arg1_1\n"
            "        return (buf0, )\n\n"
            "runner = Runner(partitions=[])\n")


def _graph(source: str) -> CapturedGraph:
    return CapturedGraph(source, [Placeholder("x", "size", 0), Placeholder("x", None, None)])


def test_cuda_wrapper_becomes_plain_torch_and_our_launchers() -> None:
    kernels: dict = {}
    program = parse_program("key", _graph(_wrapper()), kernels)
    body = "\n".join(program.body)
    assert "_launch_0(arg1_1, buf0, s0)" in body and "_seed_empty(_device, (s0, ), (1, ), torch.bfloat16)" in body
    assert "get_raw_stream" not in body and "set_device" not in body and "assert_size_stride" not in body
    assert "if True:" in body and "stream=" not in body
    assert program.arg_exprs == ["inputs['x'].size(0)", "inputs['x']"]
    (kernel,) = kernels.values()
    assert kernel.kind == "pointwise" and kernel.constexprs == ["XBLOCK"] and kernel.params[-1] == "xnumel"
    assert kernel.source.startswith("@triton.jit\ndef _seed_kernel_0(") and "triton_heuristics" not in kernel.source
    tunables, space = kernel_tunables(kernel)
    assert tunables == {"k0_XBLOCK": 1024, "k0_num_warps": 4, "k0_num_stages": 1}
    assert all(tunables[k] in space[k] for k in tunables)
    # the same kernel traced again for another program is shared, not duplicated
    parse_program("key2", _graph(_wrapper()), kernels)
    assert len(kernels) == 1


@pytest.mark.parametrize("call, named", [
    ("            buf1 = extern_kernels.convolution(buf0, arg1_1, None, (1,), (0,), (1,), False, (0,), 1)\n",
     "extern_kernels.convolution"),
    ("            buf1 = extern_kernels._weight_int4pack_mm(buf0, arg1_1, 128, arg2_1)\n",
     "extern_kernels._weight_int4pack_mm"),
    ("            buf1 = torch.ops.aten._scaled_dot_product_flash_attention.default(buf0)\n",
     "torch.ops.aten._scaled_dot_product_flash_attention.default"),
])
def test_library_calls_are_refused_by_name(call: str, named: str) -> None:
    source = _wrapper(call)
    assert named in extern_calls(source)
    with pytest.raises(SeedError, match="library calls") as raised:
        parse_program("key", _graph(source), {})
    assert named in str(raised.value)


def test_matrix_products_become_the_seeds_own_gemm() -> None:
    """A library mm/addmm/bmm in the wrapper is no refusal: the program calls the seed's GEMM launcher instead,
    keeping inductor's arguments (the transposed view, alpha, beta, out)."""
    call = ("            buf1 = empty_strided_cuda((s0, s0), (s0, 1), torch.bfloat16)\n"
            "            extern_kernels.addmm(arg1_1, buf0, reinterpret_tensor(arg1_1, (s0, s0), (1, s0), 0), "
            "alpha=1, beta=1, out=buf1)\n"
            "            extern_kernels.bmm(buf0, buf1, out=buf1)\n")
    source = _wrapper(call)
    assert extern_calls(source, ("extern_kernels.addmm", "extern_kernels.bmm")) == []
    program = parse_program("key", _graph(source), {})
    body = "\n".join(program.body)
    assert program.gemms == ["extern_kernels.addmm", "extern_kernels.bmm"]
    assert "_seed_addmm(arg1_1, buf0, _seed_reinterpret(arg1_1, (s0, s0), (1, s0), 0), alpha=1, beta=1, " \
           "out=buf1)" in body and "_seed_bmm(buf0, buf1, out=buf1)" in body
    assert "extern_kernels" not in body


def _gemm_module(tmp_path, **tiles):  # type: ignore[no-untyped-def]
    from aka_tui.agent.seed_gemm import GEMM_SOURCE, GEMM_TUNABLES
    from aka_tui.bench.problem.module_loading import import_file

    path = tmp_path / "seed_gemm_module.py"
    path.write_text("import torch\nimport triton\nimport triton.language as tl\n\n"
                    f"TUNABLES = {dict(GEMM_TUNABLES, **tiles)!r}\n" + GEMM_SOURCE)
    return import_file(path, "seed_gemm_module")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_seeds_gemm_matches_the_library(tmp_path, dtype: str) -> None:  # type: ignore[no-untyped-def]
    """mm, addmm (a broadcast bias, alpha, beta) and bmm on transposed, odd-sized operands, several tiles and a
    ragged K chunk (CPU interpreter; bf16 is widened there, the interpreter's bf16 dot being wrong)."""
    import torch

    gemm = _gemm_module(tmp_path, mm_BLOCK_M=16, mm_BLOCK_N=32, mm_BLOCK_K=16, mm_GROUP_M=2)
    torch.manual_seed(0)
    kind = getattr(torch, dtype)
    a = torch.randn(37, 50).to(kind)
    w = torch.randn(70, 50).to(kind)  # used transposed, as F.linear's weight
    bias = torch.randn(70).to(kind)
    tolerance = {"atol": 1e-4, "rtol": 1e-4} if dtype == "float32" else {"atol": 2e-2, "rtol": 2e-2}
    out = torch.empty(37, 70, dtype=kind)
    torch.testing.assert_close(gemm._seed_mm(a, w.t(), out=out), (a.float() @ w.float().t()).to(kind), **tolerance)
    out = torch.empty(37, 70, dtype=kind)
    want = (0.5 * (a.float() @ w.float().t()) + 2.0 * bias.float()).to(kind)
    torch.testing.assert_close(gemm._seed_addmm(bias, a, w.t(), alpha=0.5, beta=2.0, out=out), want, **tolerance)
    x, y = torch.randn(3, 9, 40).to(kind), torch.randn(3, 24, 40).to(kind)
    out = torch.empty(3, 9, 24, dtype=kind)
    want = (x.float() @ y.float().transpose(1, 2)).to(kind)
    torch.testing.assert_close(gemm._seed_bmm(x, y.transpose(1, 2), out=out), want, **tolerance)


def test_unknown_launch_forms_are_refused() -> None:
    template = _wrapper().replace("triton_heuristics.pointwise", "triton_heuristics.template")
    with pytest.raises(SeedError, match="template"):
        parse_program("key", _graph(template), {})


@pytest.mark.parametrize(("grid_type", "numels", "want"), [
    ("Grid1D", {"xnumel": 1000}, (8,)),
    ("Grid2D", {"xnumel": 100, "ynumel": 70}, (4, 3)),
    ("Grid3D", {"xnumel": 100, "ynumel": 70, "znumel": 9}, (4, 3, 2)),
    ("Grid2DWithYZOverflow", {"xnumel": 100, "ynumel": 70}, (4, 3, 1)),
    ("Grid2DWithYZOverflow", {"xnumel": 100, "ynumel": 32 * 70000}, (4, 35000, 2)),  # y tiles past 65535 fold
    ("Grid2DWithYZOverflow", {"xnumel": 100, "ynumel": 0}, (4, 0, 0)),
])
def test_the_seeds_launcher_sizes_each_grid_type_as_inductor_does(grid_type: str, numels: dict, want: tuple) -> None:
    """The launcher's grid for each grid type inductor emits: y tiles beyond CUDA's 65535 spread over z in
    Grid2DWithYZOverflow (the kernel adds program_id(2) * num_programs(1) to its y tile)."""
    import triton

    from aka_tui.agent.compile_seed import SeedKernel
    from aka_tui.agent.seed_source import _grid_lines

    blocks = {"XBLOCK": 32, "YBLOCK": 32, "ZBLOCK": 8} if grid_type != "Grid1D" else {"XBLOCK": 128}
    kernel = SeedKernel("k", "", "pointwise", list(numels), list(blocks), grid_type)
    scope: dict[str, Any] = {"triton": triton, "named": numels, "meta": blocks}
    exec("\n".join(_grid_lines(kernel)), scope)
    assert scope["grid"] == want


@pytest.mark.parametrize(("kind", "r0_numel", "tuned", "want"), [
    ("reduction", 48, 1024, 64), ("reduction", 5000, 1024, 1024), ("reduction", 48, 32, 32),
    ("persistent_reduction", 48, None, 64)])
def test_a_reductions_block_is_no_wider_than_its_row(kind: str, r0_numel: int, tuned: int | None,
                                                     want: int) -> None:
    """A looped reduction's R0_BLOCK is the tuned one, cut to the row's next power of two (lanes past the row are
    masked work)."""
    import triton

    from aka_tui.agent.compile_seed import SeedKernel
    from aka_tui.agent.seed_source import _launcher

    kernel = SeedKernel("_seed_kernel_0", "", kind, ["xnumel", "r0_numel"], ["XBLOCK", "R0_BLOCK"], "Grid1D")
    launched: dict[str, Any] = {}

    class Recorder:
        def __getitem__(self, grid: tuple) -> Any:
            return lambda *args, **meta: launched.update(meta)

    scope: dict[str, Any] = {"triton": triton, "_seed_kernel_0": Recorder(),
                             "TUNABLES": {"k0_XBLOCK": 1, "k0_R0_BLOCK": tuned, "k0_num_warps": 8,
                                          "k0_num_stages": 1}}
    exec(_launcher(kernel), scope)
    scope["_launch_0"](4, r0_numel)
    assert launched["R0_BLOCK"] == want


def test_equal_sizes_in_the_traced_inputs_stay_separate_symbols() -> None:
    """Traced on a square input, rows and columns must still be two arguments of the program: one shared
    symbol made the seed return (rows, rows) for every non-square input."""
    import torch

    from aka_tui.agent.inductor_capture import capture

    class Centered(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x.float()
            return y - y.mean(dim=-1, keepdim=True)

    graph = capture(Centered(), {"x": torch.randn(8, 8)})
    sizes = {(p.input_name, p.index) for p in graph.placeholders if p.prop == "size"}
    assert {("x", 0), ("x", 1)} <= sizes, graph.placeholders


@pytest.mark.parametrize("spatial, stride, padding, dilation", [(1, [1], [0], [1]), (1, [2], [1], [2]),
                                                                  (2, [1, 2], [1, 0], [1, 1])])
def test_depthwise_convolution_is_a_sum_over_its_taps(spatial: int, stride: list[int], padding: list[int],
                                                      dilation: list[int]) -> None:
    import torch
    import torch.nn.functional as F

    from aka_tui.agent.seed_decompositions import depthwise_convolution

    x = torch.randn((2, 6) + (11,) * spatial)
    w = torch.randn((6, 1) + (3,) * spatial)
    b = torch.randn(6)
    conv = F.conv1d if spatial == 1 else F.conv2d
    want = conv(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=6)
    got = depthwise_convolution(x, w, b, stride, padding, dilation, False, [0] * spatial, 6)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    # a dense or transposed convolution is left to inductor (a library call)
    dense = torch.randn((6, 6) + (3,) * spatial)
    assert depthwise_convolution(x, dense, b, stride, padding, dilation, False, [0] * spatial, 1) is NotImplemented
    assert depthwise_convolution(x, w, b, stride, padding, dilation, True, [0] * spatial, 6) is NotImplemented


def test_depthwise_convolution_lowers_to_triton_for_every_length() -> None:
    """A depthwise conv1d (the short causal convolution of linear-attention layers) becomes the seed's own
    pointwise kernel, with the sequence length a symbol, not a library call."""
    import torch
    import torch.nn.functional as F

    from aka_tui.agent.compile_seed import extern_calls
    from aka_tui.agent.inductor_capture import capture

    class ShortConv(torch.nn.Module):
        def forward(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
            return F.silu(F.conv1d(x, weight.unsqueeze(1), padding=3, groups=weight.shape[0]))

    graph = capture(ShortConv(), {"x": torch.randn(1, 16, 24), "weight": torch.randn(16, 4)})
    assert not extern_calls(graph.source), extern_calls(graph.source)
    sizes = {(p.input_name, p.index) for p in graph.placeholders if p.prop == "size"}
    assert ("x", 2) in sizes, graph.placeholders  # the length stays an argument of the program


def test_the_interpreters_stand_in_rounds_half_to_even(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """torch.round lowers to libdevice.nearbyint, which the CPU interpreter lacks: the seed's stand-in rounds
    as the GPU does (half to even), so such a reference still seeds on the CPU."""
    import torch

    from aka_tui.agent.seed_templates import HEADER
    from aka_tui.bench.problem.module_loading import import_file

    path = tmp_path / "round_seed.py"
    path.write_text(HEADER.format(problem="round", torch_version="", tunables={}, space={}) + '''

@triton.jit
def _round(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, libdevice.nearbyint(x), mask=offs < n)
''')
    module = import_file(path, "round_seed")
    x = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, 0.51, -0.51, 3.7, -3.2, 0.0])
    y = torch.empty_like(x)
    module._round[(1,)](x, y, x.numel(), BLOCK=16)
    torch.testing.assert_close(y, torch.round(x))


def test_the_interpreters_stand_in_powers_as_torch_does(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """libdevice.pow (a size's power, as in `dim ** -0.5` with a symbolic dim, or x ** y) runs on the CPU
    interpreter through the seed's stand-in: torch.pow's values for negative bases (odd, even and fractional
    exponents), zero bases and a scalar base made from an integer argument."""
    import torch

    from aka_tui.agent.seed_templates import HEADER
    from aka_tui.bench.problem.module_loading import import_file

    path = tmp_path / "pow_seed.py"
    path.write_text(HEADER.format(problem="pow", torch_version="", tunables={}, space={}) + '''

@triton.jit
def _pow(x_ptr, e_ptr, y_ptr, size_ptr, size, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    e = tl.load(e_ptr + offs, mask=offs < n, other=1.0)
    tl.store(y_ptr + offs, libdevice.pow(x, e), mask=offs < n)
    scalar = libdevice.pow((size).to(tl.float64), tl.full([1], -0.5, tl.float64))
    tl.store(size_ptr + tl.arange(0, 1), scalar.to(tl.float32))
''')
    module = import_file(path, "pow_seed")
    x = torch.tensor([2.0, -2.0, -2.0, -2.0, 0.0, 0.0, 0.0, 9.0, -8.0, 1.5])
    e = torch.tensor([3.0, 3.0, 2.0, 0.5, 0.0, 2.0, -1.0, -0.5, -1.0, 0.0])
    y, size = torch.empty_like(x), torch.empty(1)
    module._pow[(1,)](x, e, y, size, 64, x.numel(), BLOCK=16)
    torch.testing.assert_close(y, torch.pow(x, e), equal_nan=True)
    torch.testing.assert_close(size, torch.tensor([64 ** -0.5]))


def test_large_probes_are_left_to_the_evaluation_on_the_cpu() -> None:
    """The interpreter runs inductor's default blocks one tiny program at a time: beyond the smallest probe, a
    probe over CPU_CHECK_BYTES is not run (it would be minutes), and the seed says which it left."""
    import dataclasses

    import torch

    from aka_tui.agent.probe import make_probes
    from aka_tui.agent.seed_source import CPU_CHECK_BYTES, build_seed, verify_seed
    from aka_tui.bench.problem.lookup import load_problem
    from tests.conftest import DATA

    problem = load_problem(DATA / "unseen" / "centered_swish")
    probes = [p for p in make_probes(problem, "cpu") if p.inputs["x"].dtype == torch.float32][:1]
    seeded = build_seed(problem, probes, "smoke", "cpu")
    assert seeded.source is not None, seeded.reason
    rows = CPU_CHECK_BYTES // (4 * 130) + 1
    big = dataclasses.replace(probes[0], shape=dataclasses.replace(probes[0].shape, shape_id="big"),
                              inputs={"x": torch.randn(rows, 130)},
                              outputs=[torch.zeros(rows, 130), torch.zeros(rows, 1)])  # wrong if it were run
    assert verify_seed(seeded.source, problem, probes + [big], "cpu") == ("", ["big"])
    small = dataclasses.replace(big, inputs={"x": torch.randn(3, 130)},
                                outputs=[torch.zeros(3, 130), torch.zeros(3, 1)])
    found, _ = verify_seed(seeded.source, problem, probes + [small], "cpu")
    assert "output 0 differs on big" in found  # a small one is run, and its wrong outputs are found


def _swish_problem(tmp_path: Path, name: str, smoke: dict, full: dict) -> tuple[Any, Path]:
    """The centered-swish test problem with one smoke and one full shape, each {"init_kwargs", "input_kwargs"}."""
    import json
    import shutil

    from aka_tui.bench.problem.lookup import load_problem
    from tests.conftest import DATA

    directory = tmp_path / name
    shutil.copytree(DATA / "unseen" / "centered_swish", directory)
    (directory / "shapes.json").write_text(json.dumps({
        "smoke": {**smoke, "tier": "smoke", "weight": 1.0}, "full": {**full, "tier": "full", "weight": 1.0}}))
    return load_problem(directory), directory


def _seeded_module(problem: Any, keep: Any, tmp_path: Path) -> tuple[Any, str]:
    """The seed built on the smoke tier from the probes `keep` selects, imported interpreted, and its line."""
    from aka_tui.agent.own_semantics import import_interpreted
    from aka_tui.agent.probe import make_probes
    from aka_tui.agent.seed_source import build_seed

    probes = [p for p in make_probes(problem, "cpu") if keep(p)][:1]
    seeded = build_seed(problem, probes, "smoke", "cpu")
    assert seeded.source is not None, seeded.reason
    path = tmp_path / "seed.py"
    path.write_text(seeded.source)
    return import_interpreted(path), seeded.reason


def test_a_size_of_one_in_the_tier_is_not_captured_when_another_tier_has_it_wider(tmp_path: Path) -> None:
    """A tier whose only shape has a size of 1 (one token) would give a program with that 1 baked in: the
    capture takes the smallest wide shape of the problem's other tiers instead, and the seed is right on
    sizes it never saw."""
    import torch

    from aka_tui.bench.problem.module_loading import import_file

    problem, directory = _swish_problem(
        tmp_path, "one_row_swish",
        {"init_kwargs": {"scale": 0.5}, "input_kwargs": {"rows": 1, "cols": 40, "dtype": "float32"}},
        {"init_kwargs": {"scale": 0.5}, "input_kwargs": {"rows": 3, "cols": 40, "dtype": "float32"}})
    module, _ = _seeded_module(problem, lambda p: p.inputs["x"].shape[0] == 1, tmp_path)
    reference = import_file(directory / "reference.py", "one_row_reference")
    x = torch.randn(5, 40)
    for g, w in zip(module.Model(0.5)(x), reference.Model(0.5)(x)):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("descending", [False, True])
def test_a_sort_is_a_stable_ranking_with_torchs_values_and_indices(descending: bool) -> None:
    """aten.sort as the seed decomposes it: torch's stable sort exactly, NaN last ascending and first
    descending, ties in their order, along any dimension (integers: test_seed_index_forms.py); complex
    numbers are left to inductor."""
    import torch

    from aka_tui.agent.seed_decompositions import rank_sort

    x = torch.randn(3, 7, 5, generator=torch.Generator().manual_seed(9))
    x[0, 2, 1] = x[2, 3, 4] = x[2, 1, 4] = float("nan")
    x[1, :, 0] = 1.0  # a whole row of ties
    x[0, 4, 2] = float("inf")
    for dim in (0, 1, -1):
        values, indices = rank_sort(x, dim, descending)
        want = torch.sort(x, dim=dim, descending=descending, stable=True)
        assert torch.equal(indices, want.indices), dim
        torch.testing.assert_close(values, want.values, equal_nan=True)
    assert rank_sort(torch.ones(5, dtype=torch.complex64), 0, descending) is NotImplemented


def test_a_scans_combine_function_comes_with_its_kernel_under_the_kernels_name() -> None:
    """Inductor writes a scan's combine function as a @triton.jit helper before the kernel, named per kernel
    module (`_triton_helper_fn_add0` in each): the seed keeps it with its kernel, renamed after the kernel, so
    two kernels' helpers never collide; identical kernels with helpers still share one definition."""
    helper = "@triton.jit\ndef _triton_helper_fn_add0(arg0_0, arg1_0):\n    return arg0_0 {op} arg1_0\n\n"
    scan = KERNEL.replace("@triton_heuristics.pointwise(", helper + "@triton_heuristics.pointwise(").replace(
        "tmp0 * tl.sigmoid(tmp0)", "tl.associative_scan(tmp0, 0, _triton_helper_fn_add0)")
    kernels: dict = {}
    for op in ("+", "+", "*"):
        parse_program(op, _graph(_wrapper().replace(KERNEL, scan.replace("{op}", op))), kernels)
    sources = [k.source for k in kernels.values()]
    assert len(sources) == 2  # the second "+" kernel is the first's
    for index, source in enumerate(sources):
        assert f"def _seed_kernel_{index}_helper_add0(" in source and "_triton_helper_fn" not in source
        assert f"tl.associative_scan(tmp0, 0, _seed_kernel_{index}_helper_add0)" in source
        assert "triton_heuristics" not in source and f"def _seed_kernel_{index}(in_ptr0" in source
    assert "arg0_0 * arg1_0" in sources[1]


def test_a_small_top_k_is_rounds_of_selection_with_torchs_values() -> None:
    import torch

    from aka_tui.agent.seed_decompositions import MAX_TOPK, selection_topk

    torch.manual_seed(0)
    for shape, k, dim, largest in [((6, 100), 5, -1, True), ((4, 7, 9), 3, 1, False), ((5, 33), 33, -1, True)]:
        x = torch.randn(*shape)
        values, indices = selection_topk(x, k, dim, largest)
        want_values, want_indices = torch.topk(x, k, dim, largest)
        assert torch.equal(values, want_values) and torch.equal(indices, want_indices)
    # NaN ranks first among the largest and last among the smallest; -inf rows and ties still give k
    # distinct positions holding torch's values (tie order is free in torch.topk)
    x = torch.randn(3, 10)
    x[0, 3] = float("nan")
    x[1, :] = float("-inf")
    x[2, 2] = x[2, 5] = 5.0
    for largest in (True, False):
        values, indices = selection_topk(x, 4, largest=largest)
        torch.testing.assert_close(values, torch.topk(x, 4, largest=largest).values, equal_nan=True)
        assert all(len(set(row.tolist())) == 4 for row in indices)
        torch.testing.assert_close(torch.gather(x, 1, indices), values, equal_nan=True)
    assert selection_topk(x, MAX_TOPK + 1) is NotImplemented  # longer than the row: torch's own error
    assert selection_topk(torch.ones(10, dtype=torch.complex64), 2) is NotImplemented  # complex: inductor's


@pytest.mark.parametrize("k", [3, 70])
def test_a_top_k_threshold_lowers_to_the_seeds_own_kernels(k: int) -> None:
    """torch.topk is a library call under inductor; with the selection rounds (or, for k above MAX_TOPK, the
    ranking) the seed owns it, and the interpreter's stand-ins run the NaN checks the rounds need."""
    import torch

    from aka_tui.agent.compile_seed import extern_calls
    from aka_tui.agent.inductor_capture import capture

    class KeepTopK(torch.nn.Module):
        def __init__(self, k: int) -> None:
            super().__init__()
            self.k = k

        def forward(self, scores: torch.Tensor) -> torch.Tensor:
            kth = torch.topk(scores, self.k, dim=-1).values[..., -1:]
            return torch.where(scores >= kth, scores, torch.full_like(scores, float("-inf")))

    graph = capture(KeepTopK(k), {"scores": torch.randn(6, 100)})
    assert not extern_calls(graph.source), extern_calls(graph.source)
    assert "@triton.jit" in graph.source


def test_the_interpreters_stand_ins_find_nan_and_inf(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """libdevice.isnan / isinf (inductor's NaN checks, e.g. in a top-k's selection) exist on the GPU only."""
    import torch

    from aka_tui.agent.seed_templates import HEADER
    from aka_tui.bench.problem.module_loading import import_file

    path = tmp_path / "nan_seed.py"
    path.write_text(HEADER.format(problem="nan", torch_version="", tunables={}, space={}) + '''

@triton.jit
def _flags(x_ptr, nan_ptr, inf_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(nan_ptr + offs, libdevice.isnan(x).to(tl.int8), mask=offs < n)
    tl.store(inf_ptr + offs, libdevice.isinf(x).to(tl.int8), mask=offs < n)
''')
    module = import_file(path, "nan_seed")
    x = torch.tensor([0.0, float("nan"), float("inf"), -float("inf"), -1.5, 3.0e38])
    nan, inf = torch.empty(6, dtype=torch.int8), torch.empty(6, dtype=torch.int8)
    module._flags[(1,)](x, nan, inf, x.numel(), BLOCK=8)
    assert nan.bool().tolist() == torch.isnan(x).tolist() and inf.bool().tolist() == torch.isinf(x).tolist()


def test_init_arguments_of_another_tier_get_their_own_program(tmp_path: Path) -> None:
    """Init arguments are constants of a traced graph: a seed built on the smoke tier also captures the
    combinations that only the full tier has, so it is right where the GPU times it (not the nearest program,
    traced with other constants)."""
    import torch

    from aka_tui.bench.problem.module_loading import import_file

    problem, directory = _swish_problem(
        tmp_path, "two_scale_swish",
        {"init_kwargs": {"scale": 0.5}, "input_kwargs": {"rows": 3, "cols": 40, "dtype": "float32"}},
        {"init_kwargs": {"scale": 2.0}, "input_kwargs": {"rows": 64, "cols": 40, "dtype": "float32"}})
    module, reason = _seeded_module(problem, lambda p: p.shape.shape_id == "smoke", tmp_path)
    assert "2 program(s)" in reason
    reference = import_file(directory / "reference.py", "two_scale_reference")
    x = torch.randn(5, 40)
    for g, w in zip(module.Model(2.0)(x), reference.Model(2.0)(x)):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)


def test_int64_and_bool_scatters_move_in_a_dtype_inductor_scatters_itself_on_a_gpu() -> None:
    """On a GPU inductor leaves int64 and bool scatters to ATen (its own rule, asked here for "cuda"); the seed
    moves them as float64 bits and as uint8, exactly (NaN-pattern and denormal-pattern integers included)."""
    import torch
    from torch._inductor.utils import use_scatter_fallback
    from torch.fx.experimental.proxy_tensor import make_fx

    from aka_tui.agent.seed_decompositions import seed_decompositions

    def scatter(base: torch.Tensor, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        return base.scatter(1, index, src)

    index = torch.stack([torch.randperm(6, generator=torch.Generator().manual_seed(r)) for r in range(3)])
    integers = torch.tensor([[-2**63, 2**63 - 1, -1, 0, 7, 2**53 + 1]] * 3)
    for src in (integers, torch.rand(3, 6, generator=torch.Generator().manual_seed(1)) > 0.5):
        base = torch.zeros_like(src)
        traced = make_fx(scatter, decomposition_table=seed_decompositions())(base, index, src)
        scatters = [n for n in traced.graph.nodes if n.target == torch.ops.aten.scatter.src]
        assert scatters
        for node in scatters:
            self_dtype, src_dtype = node.args[0].meta["val"].dtype, node.args[3].meta["val"].dtype
            assert not use_scatter_fallback(torch.ops.aten.scatter.src, None, self_dtype, src_dtype, "cuda", True)
        out = traced(base, index, src)
        assert out.dtype == src.dtype and torch.equal(out, scatter(base, index, src))


def test_a_wide_top_k_is_the_head_of_the_ranking() -> None:
    """Above MAX_TOPK rounds a top-k is the first k places of the stable ranking: torch.topk's values and
    indices (distinct values; NaN first among the largest, last among the smallest)."""
    import torch

    from aka_tui.agent.seed_decompositions import MAX_TOPK, selection_topk

    x = torch.randn(3, 4 * MAX_TOPK, generator=torch.Generator().manual_seed(5))
    x[1, 7] = float("nan")
    k = MAX_TOPK + 9
    for dim, largest in [(-1, True), (-1, False), (1, True)]:
        values, indices = selection_topk(x, k, dim, largest)
        want = torch.topk(x, k, dim, largest)
        assert torch.equal(indices, want.indices), (dim, largest)
        torch.testing.assert_close(values, want.values, equal_nan=True)
    assert selection_topk(torch.ones(300, dtype=torch.complex64), k) is NotImplemented


def test_a_capture_failure_names_the_error_dynamo_wrapped() -> None:
    from aka_tui.agent.inductor_capture import _first_line

    wrapped = RuntimeError("backend='backend' raised:\nCaptureError: the traced graph reads L_self_gamma_\n\n"
                           "Set TORCH_LOGS for more")
    assert _first_line(wrapped) == "CaptureError: the traced graph reads L_self_gamma_"
    assert _first_line(RuntimeError("plain failure\nmore")) == "plain failure"
    assert _first_line(RuntimeError("")) == "RuntimeError"


def test_repeated_indices_are_a_search_of_the_running_totals() -> None:
    """torch.repeat_interleave with a tensor of repeats is a library call under inductor; as a search of the
    running totals (the total read back on the host) inductor writes it as its own kernels, with torch's values."""
    import torch

    from aka_tui.agent.compile_seed import extern_calls
    from aka_tui.agent.inductor_capture import capture
    from aka_tui.agent.seed_data_dependent import repeated_indices

    for repeats in (torch.tensor([2, 0, 3, 1, 0]), torch.tensor([0, 0]), torch.randint(0, 5, (40,))):
        want = torch.repeat_interleave(repeats)
        assert torch.equal(repeated_indices(repeats), want)
        assert torch.equal(repeated_indices(repeats, output_size=want.numel()), want)

    class Expand(torch.nn.Module):
        def forward(self, values: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
            return torch.repeat_interleave(values, counts, dim=0)

    graph = capture(Expand(), {"values": torch.randn(6, 4), "counts": torch.randint(0, 4, (6,))})
    assert not extern_calls(graph.source), extern_calls(graph.source)
    assert "@triton.jit" in graph.source


def test_attention_is_captured_as_its_math_for_the_seeds_own_gemm() -> None:
    """scaled_dot_product_attention would lower to a fused attention library kernel (flash on the CPU as on a
    GPU), which no candidate owns; captured with the math backend it is matrix products (the seed's own GEMM
    takes them) and a softmax inductor writes, with a mask and with grouped query heads."""
    import torch
    import torch.nn.functional as F

    from aka_tui.agent.compile_seed import extern_calls
    from aka_tui.agent.inductor_capture import capture

    class Biased(torch.nn.Module):
        def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)

    class Grouped(torch.nn.Module):
        def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    q, kv = torch.randn(2, 4, 16, 32), torch.randn(2, 2, 16, 32)
    for model, inputs in ((Biased(), {"q": q, "k": q.clone(), "v": q.clone(), "bias": torch.randn(2, 4, 16, 16)}),
                          (Grouped(), {"q": q, "k": kv, "v": kv.clone()})):
        graph = capture(model, inputs)
        assert set(extern_calls(graph.source)) == {"extern_kernels.bmm"}, extern_calls(graph.source)
        assert "@triton.jit" in graph.source
