"""Reference Triton kernel: LayerNorm over the last dimension with weight and bias (biased variance).

y = (x - mean) * rsqrt(var + eps) * weight + bias, statistics in fp32, one final rounding to x.dtype.

Tiling: each program owns ROWS_PER_PROGRAM rows as a [ROWS, BLOCK] register tile.
  * ONE_PASS (or BLOCK_N >= hidden): BLOCK = next_power_of_2(hidden); the row is read once and the exact
    two-step statistics (mean, then the centred sum of squares) are taken on the registers.
  * otherwise a column loop over BLOCK_N chunks. Pass 1 takes each chunk's exact mean and centred M2 and
    merges them into the running (mean, M2) with Chan's parallel update, so the statistics cost one sweep
    and do not suffer the cancellation of sum/sum-of-squares. Pass 2 re-reads the row (L2-resident thanks
    to the evict_last hint of pass 1), normalises and stores.

AUTO 1 picks ROWS_PER_PROGRAM and num_warps from the row width as the RMSNorm kernel does (a tile of about
AUTO_TILE elements, 16 a thread, at most 8 warps); AUTO 0 launches the explicit tunables. EARLY_WEIGHTS issues
the weight and bias loads with the row's, so their latency is not paid after the reductions (see EARLY_WAVES).
H200, saturated timer: AUTO took t4096 x h1152 from 13.2 to 11.6 us (two rows a program), the wide rows as
before.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"AUTO": 1, "BLOCK_N": 1024, "EARLY_WEIGHTS": 1, "ONE_PASS": True, "ROWS_PER_PROGRAM": 1,
            "CONST_COLS": 1, "num_warps": 8, "num_stages": 1}
SEARCH_SPACE = {
    "AUTO": [0, 1],
    "EARLY_WEIGHTS": [0, 1, 2],
    "BLOCK_N": [256, 512, 1024, 2048, 4096, 8192],
    "ONE_PASS": [True, False],
    "ROWS_PER_PROGRAM": [1, 2, 4, 8],
    "CONST_COLS": [0, 1],
    "num_warps": [1, 2, 4, 8, 16],
    "num_stages": [1, 2, 3],
}
# Tunables with no effect (the offline search skips them): with ONE_PASS a row is one register tile (as long as
# ROWS_PER_PROGRAM * next_power_of_2(row) <= _MAX_TILE_ELEMS, true for every suite shape), so there is no column
# loop to chunk or pipeline.
INERT = {"BLOCK_N": {"ONE_PASS": [True]}, "num_stages": {"ONE_PASS": [True]}, "EARLY_WEIGHTS": {"ONE_PASS": [False]},
         "ROWS_PER_PROGRAM": {"AUTO": [1]}, "num_warps": {"AUTO": [1]}}
AUTO_TILE = 4096  # elements of a program's tile under AUTO
# CONST_COLS 1 compiles the row width in (one compilation per width; kb/experience/exp-h200-norm-row-width-compiled-in.md).
# H200, saturated timer, 14 shapes (widths 1152-8192): 6144-wide rows 34.0 -> 31.1 us, the others within the
# 2.6% spread between two runs of one configuration (geometric mean 1.2% faster, no shape slower beyond it).

_MAX_TILE_ELEMS = 65536  # largest ROWS * BLOCK register tile ONE_PASS may form; beyond it the loop is used


@triton.jit
def _layer_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols_arg, stride_x, stride_y, eps,
                       ROWS: tl.constexpr, BLOCK: tl.constexpr, SINGLE_TILE: tl.constexpr,
                       EARLY_WEIGHTS: tl.constexpr, N_COLS: tl.constexpr = 0):
    if N_COLS > 0:  # the row width compiled in
        n_cols = N_COLS
    else:
        n_cols = n_cols_arg
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < n_rows
    x_rows = x_ptr + rows[:, None] * stride_x
    y_rows = y_ptr + rows[:, None] * stride_y
    offs = tl.arange(0, BLOCK)
    if SINGLE_TILE:
        col_mask = offs < n_cols
        mask = row_mask[:, None] & col_mask[None, :]
        if EARLY_WEIGHTS:
            w = tl.load(w_ptr + offs, mask=col_mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + offs, mask=col_mask, other=0.0).to(tl.float32)
        x = tl.load(x_rows + offs[None, :], mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=1) / n_cols
        xc = tl.where(mask, x - mean[:, None], 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=1) / n_cols + eps)
        if not EARLY_WEIGHTS:
            w = tl.load(w_ptr + offs, mask=col_mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + offs, mask=col_mask, other=0.0).to(tl.float32)
        y = xc * rstd[:, None] * w[None, :] + b[None, :]
        tl.store(y_rows + offs[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        mean = tl.zeros([ROWS], dtype=tl.float32)
        m2 = tl.zeros([ROWS], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + offs
            mask = row_mask[:, None] & (cols < n_cols)[None, :]
            x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
            n_a = start * 1.0  # columns merged so far (every earlier chunk is full), as fp32
            n_b = tl.minimum(n_cols - start, BLOCK).to(tl.float32)
            mean_b = tl.sum(x, axis=1) / n_b
            xc = tl.where(mask, x - mean_b[:, None], 0.0)
            m2_b = tl.sum(xc * xc, axis=1)
            n_ab = n_a + n_b
            delta = mean_b - mean
            mean = mean + delta * (n_b / n_ab)
            m2 = m2 + m2_b + delta * delta * (n_a * n_b / n_ab)
        rstd = 1.0 / tl.sqrt(m2 / n_cols + eps)
        for start in range(0, n_cols, BLOCK):
            cols = start + offs
            col_mask = cols < n_cols
            mask = row_mask[:, None] & col_mask[None, :]
            x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
            w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
            y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
            tl.store(y_rows + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0

# EARLY_WEIGHTS: 0 loads the weights after the reduction, 2 with the row, 1 (the default) with the row when the
# grid is at most EARLY_WAVES programs per SM. H200 (saturated timer): issued early they save 2-4% where each SM
# holds a few programs (128-512 rows of 2880-8192) and cost 4-8% where many programs queue per SM (2048-8192
# rows: the weights held across the reduction take registers from the resident programs).
EARLY_WAVES = 4
_SMS: dict[int, int] = {}


def _sm_count(device: torch.device) -> int:
    """The device's SM count, cached (the property lookup costs microseconds a call); 132 off CUDA."""
    if device.type != "cuda":
        return 132
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SMS[index]


def _early_weights(mode: int, single: bool, programs: int, device: torch.device) -> bool:
    """Whether the weight loads go with the row's (EARLY_WEIGHTS mode; only a single-tile row has them apart)."""
    return single and (mode == 2 or (mode == 1 and programs <= EARLY_WAVES * _sm_count(device)))


def _rows(t: torch.Tensor, n_cols: int) -> tuple[torch.Tensor, int]:
    """t as rows of n_cols with unit column stride, and its row stride; a contiguous t as it is (a reshape
    costs microseconds of host time per call, which small shapes pay in full)."""
    if t.is_contiguous():
        return t, n_cols
    t2 = t.reshape(-1, n_cols)
    if t2.stride(-1) != 1:
        t2 = t2.contiguous()
    return t2, t2.stride(0)


def _tile(n_cols: int, cfg: dict) -> tuple[int, bool]:
    rows = cfg["ROWS_PER_PROGRAM"]
    full = _next_pow2(n_cols)
    if cfg["ONE_PASS"] and rows * full <= _MAX_TILE_ELEMS:
        return full, True
    block = min(cfg["BLOCK_N"], full)
    return block, block >= n_cols


def _auto(n_cols: int) -> dict[str, int]:
    """AUTO's rows per program and warps for rows of n_cols (see the module docstring)."""
    full = _next_pow2(n_cols)
    rows = max(1, min(64, AUTO_TILE // full))
    return {"ROWS_PER_PROGRAM": rows, "num_warps": max(1, min(8, rows * full // 512))}


def _out_like(x: torch.Tensor) -> torch.Tensor:
    """An uninitialised contiguous tensor shaped like x: empty_like where x is contiguous (on the host it costs a
    third of torch.empty with dtype and device keywords, which decode-sized calls pay in full), else torch.empty."""
    return torch.empty_like(x) if x.is_contiguous() else torch.empty(x.shape, dtype=x.dtype, device=x.device)


def launch_layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float,
                      cfg: dict | None = None) -> torch.Tensor:
    cfg = TUNABLES if cfg is None else cfg
    n_cols = x.shape[-1]
    if cfg.get("AUTO", 0):
        cfg = {**cfg, **_auto(n_cols)}
    x2, stride_x = _rows(x, n_cols)
    weight = weight.contiguous()
    bias = bias.contiguous()
    n_rows = x.numel() // n_cols if n_cols else 0
    y = _out_like(x)
    if n_rows > 0:
        rows = cfg["ROWS_PER_PROGRAM"]
        block, single = _tile(n_cols, cfg)
        grid = (_cdiv(n_rows, rows),)
        early = _early_weights(cfg.get("EARLY_WEIGHTS", 1), single, grid[0], x.device)
        _layer_norm_kernel[grid](x2, weight, bias, y, n_rows, n_cols, stride_x, n_cols, eps,
                                 ROWS=rows, BLOCK=block, SINGLE_TILE=single, EARLY_WEIGHTS=early,
                                 N_COLS=n_cols if cfg.get("CONST_COLS", 0) else 0,
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return y


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-5):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps

    def forward(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return launch_layer_norm(x, weight, bias, self.eps)
