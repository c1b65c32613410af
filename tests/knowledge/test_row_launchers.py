"""The row-wise KB kernels' launchers take a contiguous input as it is (no reshape on the host path) and any
other layout through a row view: the same result for a sliced or transposed input as for its contiguous copy,
and an empty one (CPU interpreter)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from aka_tui.bench.problem.module_loading import import_file
from tests.conftest import REPO

W, B = torch.randn(64, generator=torch.Generator().manual_seed(1)), torch.randn(64)


def _kernel(path: str):  # type: ignore[no-untyped-def]
    return import_file(REPO / "kb/family" / path, path.replace("/", "_").removesuffix(".py"))


LAUNCHES: dict[str, Callable[[torch.Tensor], object]] = {
    "rms_norm": lambda x: _kernel("norm/rms_norm.py").launch_rms_norm(x, W, 1e-6),
    "layer_norm": lambda x: _kernel("norm/layer_norm.py").launch_layer_norm(x, W, B, 1e-6),
    "fused_add_rms_norm": lambda x: _kernel("norm/fused_add_rms_norm.py").launch_fused_add_rms_norm(
        x, x.flip(-1), W, 1e-6),
    "gated_rms_norm": lambda x: _kernel("norm/gated_rms_norm.py").launch_gated_rms_norm(x, x.flip(-1), W, 16, 1e-6),
    "silu_and_mul": lambda x: _kernel("activation/silu_and_mul.py").launch_silu_and_mul(x),
    "rms_norm_quant_fp8": lambda x: _kernel("quantization/rms_norm_quant_fp8.py").launch_rms_norm_quant_fp8(
        x, W, 1e-6, "float8_e4m3fn", x.flip(-1)),
    "quant_fp8_per_token": lambda x: _kernel("quantization/quant_fp8_per_token.py").launch_quant_fp8_per_token(x),
}


def _flat(result: object) -> list[torch.Tensor]:
    """The outputs, fp8 codes as bytes (compared exactly)."""
    outputs = list(result) if isinstance(result, tuple) else [result]
    return [t.view(torch.uint8) if t.dtype.itemsize == 1 else t for t in outputs]  # type: ignore[union-attr]


@pytest.mark.parametrize("op", list(LAUNCHES))
def test_any_layout_gives_the_contiguous_result(op: str) -> None:
    big = torch.randn(6, 3, 80, generator=torch.Generator().manual_seed(0))
    for x in (big[..., :64], big[..., :64].transpose(0, 1)):
        assert not x.is_contiguous()
        got, want = _flat(LAUNCHES[op](x)), _flat(LAUNCHES[op](x.contiguous()))
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.is_contiguous()
            torch.testing.assert_close(g, w)
    for out in _flat(LAUNCHES[op](torch.randn(0, 64))):
        assert out.shape[0] == 0


@pytest.mark.parametrize(("rows", "cols"), [(77, 128), (5, 1024), (3, 5000)])
def test_rms_norm_auto_tiles_narrow_rows_many_to_a_program(rows: int, cols: int) -> None:
    """AUTO packs rows of 128 thirty-two to a program (4096-element tiles, 8 warps), wide rows one to a program,
    and gives the explicit launch's result, a partial last program included."""
    kernel = _kernel("norm/rms_norm.py")
    assert kernel._auto(128, False) == {"ROWS_PER_PROGRAM": 32, "num_warps": 8}
    assert kernel._auto(1024, False)["ROWS_PER_PROGRAM"] == 4 and kernel._auto(8192, False)["ROWS_PER_PROGRAM"] == 1
    torch.manual_seed(0)
    x, w = torch.randn(rows, cols), torch.randn(cols)
    auto = kernel.launch_rms_norm(x, w, 1e-6, dict(kernel.TUNABLES, AUTO=1))
    explicit = kernel.launch_rms_norm(x, w, 1e-6, dict(kernel.TUNABLES, AUTO=0))
    want = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-6) * w
    torch.testing.assert_close(auto, explicit, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(auto, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("col_loop", [False, True])
def test_silu_and_mul_tiles_rows_across_programs(col_loop: bool) -> None:
    """A row wider than BLOCK_N: its column blocks are consecutive programs of the 1-D grid (or one program's
    loop), a partial last row block and column block included."""
    kernel = _kernel("activation/silu_and_mul.py")
    cfg = dict(kernel.TUNABLES, BLOCK_N=64, ROWS_PER_PROGRAM=2, COL_LOOP=col_loop)
    x = torch.randn(5, 2 * 200, generator=torch.Generator().manual_seed(2))
    gate, up = x[:, :200], x[:, 200:]
    torch.testing.assert_close(kernel.launch_silu_and_mul(x, cfg), torch.nn.functional.silu(gate) * up)


def test_rms_norm_launch_plans_follow_tunables_edited_in_place() -> None:
    """The launcher caches its tile plan per row width and tunables; a search that edits TUNABLES in place gets
    the plan of the new values, not the cached one (same result, another tiling)."""
    kernel = _kernel("norm/rms_norm.py")
    x = torch.randn(9, 128, generator=torch.Generator().manual_seed(3))
    want = kernel.launch_rms_norm(x, W.repeat(2), 1e-6)
    saved = dict(kernel.TUNABLES)
    try:
        kernel.TUNABLES.update(AUTO=0, ROWS_PER_PROGRAM=2, num_warps=2)
        torch.testing.assert_close(kernel.launch_rms_norm(x, W.repeat(2), 1e-6), want)
        plans = {key[0]: plan for key, plan in kernel._PLANS.items() if key[0] == 128}
        assert sorted(plan[0] for key, plan in kernel._PLANS.items() if key[0] == 128) == [2, 32], plans
    finally:
        kernel.TUNABLES.clear()
        kernel.TUNABLES.update(saved)


def _norm_formulas(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> dict[str, tuple[Callable, torch.Tensor]]:
    """Each norm kernel's launch with a config, and what it must return (torch in fp32)."""
    rms = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-6)
    s = x + x.flip(-1)
    return {
        "norm/rms_norm.py": (lambda k, cfg: k.launch_rms_norm(x, w, 1e-6, cfg), rms * w),
        "norm/layer_norm.py": (lambda k, cfg: k.launch_layer_norm(x, w, b, 1e-6, cfg),
                               torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-6)),
        "norm/fused_add_rms_norm.py": (lambda k, cfg: k.launch_fused_add_rms_norm(x, x.flip(-1), w, 1e-6, cfg)[0],
                                       s * torch.rsqrt(s.square().mean(-1, keepdim=True) + 1e-6) * w),
    }


@pytest.mark.parametrize("path", ["norm/rms_norm.py", "norm/layer_norm.py", "norm/fused_add_rms_norm.py"])
@pytest.mark.parametrize("early", [0, 2])
def test_norms_with_weights_loaded_before_or_after_the_reduction(path: str, early: int) -> None:
    """EARLY_WEIGHTS only moves where the weight (and bias) loads are issued: the same normalised rows, a masked
    tail (100 of a 128-wide tile) and several rows a program (layer_norm's AUTO) included."""
    kernel = _kernel(path)
    torch.manual_seed(4)
    x, w, b = torch.randn(7, 100), torch.randn(100), torch.randn(100)
    launch, want = _norm_formulas(x, w, b)[path]
    for cfg in (dict(kernel.TUNABLES, EARLY_WEIGHTS=early), dict(kernel.TUNABLES, EARLY_WEIGHTS=early, AUTO=1)):
        torch.testing.assert_close(launch(kernel, cfg), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("path", "name"), [("norm/rms_norm.py", "_rms_norm_kernel"),
                                            ("norm/layer_norm.py", "_layer_norm_kernel"),
                                            ("norm/fused_add_rms_norm.py", "_fused_add_rms_norm_kernel")])
def test_norms_with_the_row_width_compiled_in_or_passed(path: str, name: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """CONST_COLS only moves the row width from a run-time argument into the compiled kernel (N_COLS): the same
    rows in the one-pass tile and in the column loop (a masked tail: 300 wide in 128-wide chunks)."""
    kernel = _kernel(path)
    recorder = _Recorder(getattr(kernel, name))
    monkeypatch.setattr(kernel, name, recorder)
    torch.manual_seed(8)
    x, w, b = torch.randn(5, 300), torch.randn(300), torch.randn(300)
    launch, want = _norm_formulas(x, w, b)[path]
    for const in (0, 1):
        for one_pass in (True, False):
            cfg = dict(kernel.TUNABLES, AUTO=0, WIDE_COLS=0, CONST_COLS=const, ONE_PASS=one_pass, BLOCK_N=128)
            torch.testing.assert_close(launch(kernel, cfg), want, rtol=1e-5, atol=1e-5)
            call = recorder.calls[-1]
            assert (call["N_COLS"], call["SINGLE_TILE"]) == (300 if const else 0, one_pass), call


def test_layer_norm_auto_tiles_like_rms_norm() -> None:
    kernel = _kernel("norm/layer_norm.py")
    assert kernel._auto(128) == {"ROWS_PER_PROGRAM": 32, "num_warps": 8}
    assert kernel._auto(1152) == {"ROWS_PER_PROGRAM": 2, "num_warps": 8}
    assert kernel._auto(8192) == {"ROWS_PER_PROGRAM": 1, "num_warps": 8}


def test_weights_go_early_only_on_small_grids() -> None:
    """EARLY_WEIGHTS 1 issues the weight loads with the row's while the grid is at most EARLY_WAVES programs per
    SM, never for a looped row; 0 and 2 force either way."""
    kernel = _kernel("norm/rms_norm.py")
    cpu, limit = torch.device("cpu"), kernel.EARLY_WAVES * 132
    assert kernel._early_weights(1, True, limit, cpu) and not kernel._early_weights(1, True, limit + 1, cpu)
    assert not kernel._early_weights(1, False, 1, cpu) and not kernel._early_weights(0, True, 1, cpu)
    assert kernel._early_weights(2, True, 10 * limit, cpu)


class _Recorder:
    """Stands in for a JIT kernel: records each launch's keyword arguments and forwards the launch."""

    def __init__(self, fn: object) -> None:
        self.fn, self.calls = fn, []  # type: list[dict]

    def __getitem__(self, grid: tuple) -> Callable:
        def launch(*args: object, **kwargs: object) -> object:
            self.calls.append(kwargs)
            return self.fn[grid](*args, **kwargs)  # type: ignore[index]
        return launch


@pytest.mark.parametrize(("path", "name"), [("norm/rms_norm.py", "_rms_norm_kernel"),
                                            ("norm/fused_add_rms_norm.py", "_fused_add_rms_norm_kernel")])
def test_wide_rows_take_the_two_pass_loop(path: str, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows of 8192 and more run the column loop in 4096-wide chunks at 16 warps by default (a masked tail
    included); narrower rows, or the rule switched off, keep the one-pass register row. Same results."""
    kernel = _kernel(path)
    recorder = _Recorder(getattr(kernel, name))
    monkeypatch.setattr(kernel, name, recorder)
    torch.manual_seed(5)
    off = {"WIDE_COLS": 0} if "WIDE_COLS" in kernel.TUNABLES else {"AUTO": 0}
    for cols, cfg, looped in ((8200, {}, True), (1500, {}, False), (8200, off, False)):
        x, w, b = torch.randn(2, cols), torch.randn(cols), torch.randn(cols)
        launch, want = _norm_formulas(x, w, b)[path]
        torch.testing.assert_close(launch(kernel, dict(kernel.TUNABLES, **cfg)), want, rtol=1e-5, atol=1e-5)
        call = recorder.calls[-1]
        assert (not call["SINGLE_TILE"], call["BLOCK"] == 4096, call["num_warps"] == 16) == (looped,) * 3, call


@pytest.mark.parametrize(("rows", "cols", "warps"), [(3, 2880, 16), (300, 4100, 8)])
def test_rms_norm_rows_from_a_4096_tile_loop_with_the_width_compiled_in(rows: int, cols: int, warps: int,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Under AUTO, rows whose tile is 4096 wide or more (below WIDE_COLS) run the two-pass loop in 4096-wide
    chunks (one chunk for 2880: two passes over it) with the width compiled in, at 16 warps on a grid of at most
    FEW_ROWS_PER_SM rows an SM (132 SMs off CUDA) and 8 above; the rows are the formula's."""
    kernel = _kernel("norm/rms_norm.py")
    recorder = _Recorder(kernel._rms_norm_kernel)
    monkeypatch.setattr(kernel, "_rms_norm_kernel", recorder)
    torch.manual_seed(7)
    x, w = torch.randn(rows, cols), torch.randn(cols)
    want = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-6) * w
    torch.testing.assert_close(kernel.launch_rms_norm(x, w, 1e-6), want, rtol=1e-5, atol=1e-5)
    call = recorder.calls[-1]
    assert (call["SINGLE_TILE"], call["BLOCK"], call["N_COLS"], call["num_warps"]) == (False, 4096, cols, warps)
    narrow = kernel.launch_rms_norm(x[:, :1500], w[:1500], 1e-6)  # a 2048 tile: the one-pass row, width passed
    assert (recorder.calls[-1]["SINGLE_TILE"], recorder.calls[-1]["N_COLS"]) == (True, 0)
    torch.testing.assert_close(narrow, x[:, :1500] * torch.rsqrt(x[:, :1500].square().mean(-1, keepdim=True)
                                                                  + 1e-6) * w[:1500], rtol=1e-5, atol=1e-5)


def _heads_views(tokens: int, q_heads: int, k_heads: int, dim: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(q, k) contiguous, as slices of one fused [tokens, q_heads + 2 * k_heads, dim] buffer (strided heads), and
    with the head axis last-but-one of a transposed buffer (no unit stride in the last axis)."""
    gen = torch.Generator().manual_seed(6)
    fused = torch.randn(tokens, q_heads + 2 * k_heads, dim, generator=gen)
    flipped = torch.randn(tokens, dim, q_heads + k_heads, generator=gen).transpose(1, 2)
    return [(fused[:, :q_heads].contiguous(), fused[:, q_heads:q_heads + k_heads].contiguous()),
            (fused[:, :q_heads], fused[:, q_heads:q_heads + k_heads]),
            (flipped[:, :q_heads], flipped[:, q_heads:])]


@pytest.mark.parametrize("op", ["rope", "qk_head_norm"])
def test_head_kernels_take_strided_heads(op: str) -> None:
    """RoPE and the per-head norm read q and k through their strides (slices of a fused projection) or copy them
    when the last axis is strided; each returns contiguous outputs equal to the reference's."""
    reference = import_file(REPO / f"problems/{op}/reference.py", f"{op}_reference")
    path = "rope/rope.py" if op == "rope" else "norm/qk_head_norm.py"
    kernel = _kernel(path)
    tokens, dim = 5, 32
    positions = torch.tensor([3, 0, 7, 1, 2])
    freqs = torch.outer(torch.arange(8.0), 1.0 / 10000 ** (torch.arange(0, dim, 2.0) / dim))
    cache = torch.cat([freqs.cos(), freqs.sin()], dim=-1)
    w_q, w_k = torch.randn(dim), torch.randn(dim)
    for q, k in _heads_views(tokens, 4, 2, dim):
        args = (positions, q, k, cache) if op == "rope" else (q, k, w_q, w_k)
        init = {"head_size": dim} if op == "rope" else {"head_dim": dim}
        got = kernel.Model(**init)(*args)
        want = reference.Model(**init)(*args)
        for g, w in zip(got, want):
            assert g.is_contiguous()
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
