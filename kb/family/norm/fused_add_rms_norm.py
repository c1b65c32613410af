"""Reference Triton kernel: fused residual add + RMSNorm (functional: returns new y and residual_out).

residual_out = (x + residual) rounded to x.dtype; y = residual_out * rsqrt(mean(residual_out^2) + eps) * weight,
statistics in fp32 over the *rounded* sum (as the reference), one final rounding of y.

Tiling: each program owns ROWS_PER_PROGRAM rows as a [ROWS, BLOCK] register tile.
  * ONE_PASS: BLOCK = next_power_of_2(hidden): x and residual are read once, the sum stays in registers for
    the reduction and the normalisation.
  * otherwise a column loop over BLOCK_N chunks (one chunk when BLOCK_N >= hidden). Pass 1 adds, rounds,
    stores residual_out and accumulates the squares. Pass 2 either reads residual_out back (REREAD_SUM: one
    stream, after a CTA barrier so the program's own stores are visible) or re-reads x and residual and
    recomputes the identical rounded sum.
  * rows at least WIDE_COLS wide take the loop in 4096-wide chunks at 16 warps (measured below _MAX_TILE_ELEMS).
  * CONST_COLS (the default) compiles the row width in (one compilation per width).
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_N": 1024, "EARLY_WEIGHTS": 1, "ONE_PASS": True, "REREAD_SUM": True, "ROWS_PER_PROGRAM": 1,
            "WIDE_COLS": 8192, "CONST_COLS": 1, "num_warps": 8, "num_stages": 1}
SEARCH_SPACE = {
    "WIDE_COLS": [0, 8192],
    "BLOCK_N": [256, 512, 1024, 2048, 4096, 8192],
    "EARLY_WEIGHTS": [0, 1, 2],
    "ONE_PASS": [True, False],
    "REREAD_SUM": [True, False],
    "ROWS_PER_PROGRAM": [1, 2, 4, 8],
    "CONST_COLS": [0, 1],
    "num_warps": [1, 2, 4, 8, 16],
    "num_stages": [1, 2, 3],
}
# Tunables with no effect (the offline search skips them): with ONE_PASS a row is one register tile (as long as
# ROWS_PER_PROGRAM * next_power_of_2(row) <= _MAX_TILE_ELEMS, true for every suite shape), so there is no column
# loop to chunk or pipeline.
INERT = {"BLOCK_N": {"ONE_PASS": [True]}, "num_stages": {"ONE_PASS": [True]},
         "REREAD_SUM": {"ONE_PASS": [True]}, "EARLY_WEIGHTS": {"ONE_PASS": [False]}}

_MAX_TILE_ELEMS = 65536  # largest ROWS * BLOCK register tile ONE_PASS may form; beyond it the loop is used
# Rows at least WIDE_COLS wide (0: none) run the two-pass loop in 4096-wide chunks at 16 warps, whatever the other
# tunables say. H200, 8192 x 8192 bf16, saturated timer, median of 5 shuffled rounds: 130.93 us against 135.86
# for the one-pass row (a copy of the same bytes 129.60); at 7168 wide (512 rows) the loop lost 4%.
_WIDE = {"ONE_PASS": False, "BLOCK_N": 4096, "ROWS_PER_PROGRAM": 1, "num_warps": 16}
# CONST_COLS (the default): the row width compiled in (loop bounds, masks and the mean's divisor constants; one
# compilation per width). H200, saturated timer, median of 3 shuffled rounds: 512 x 7168 11.20 -> 10.66 us,
# 256 x 4096 and 4096 x 4096 unchanged (6.72, 37.0).


@triton.jit
def _fused_add_rms_norm_kernel(x_ptr, r_ptr, w_ptr, y_ptr, ro_ptr, n_rows, n_cols_arg,
                               stride_x, stride_r, stride_y, stride_ro, eps,
                               ROWS: tl.constexpr, BLOCK: tl.constexpr, SINGLE_TILE: tl.constexpr,
                               REREAD_SUM: tl.constexpr, EARLY_WEIGHTS: tl.constexpr, N_COLS: tl.constexpr = 0):
    # N_COLS > 0: the row width compiled in (masks, loop bounds and the mean's divisor are constants)
    if N_COLS > 0:
        n_cols = N_COLS
    else:
        n_cols = n_cols_arg
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < n_rows
    x_rows = x_ptr + rows[:, None] * stride_x
    r_rows = r_ptr + rows[:, None] * stride_r
    y_rows = y_ptr + rows[:, None] * stride_y
    ro_rows = ro_ptr + rows[:, None] * stride_ro
    offs = tl.arange(0, BLOCK)
    if SINGLE_TILE:
        col_mask = offs < n_cols
        mask = row_mask[:, None] & col_mask[None, :]
        if EARLY_WEIGHTS:  # issued with x and r: its latency hides under theirs instead of following the reduction
            w = tl.load(w_ptr + offs, mask=col_mask, other=0.0).to(tl.float32)
        x = tl.load(x_rows + offs[None, :], mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_rows + offs[None, :], mask=mask, other=0.0).to(tl.float32)
        s_lp = (x + r).to(ro_ptr.dtype.element_ty)
        tl.store(ro_rows + offs[None, :], s_lp, mask=mask)
        s = s_lp.to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(s * s, axis=1) / n_cols + eps)
        if not EARLY_WEIGHTS:
            w = tl.load(w_ptr + offs, mask=col_mask, other=0.0).to(tl.float32)
        y = s * rstd[:, None] * w[None, :]
        tl.store(y_rows + offs[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([ROWS, BLOCK], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + offs
            mask = row_mask[:, None] & (cols < n_cols)[None, :]
            x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
            r = tl.load(r_rows + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
            s_lp = (x + r).to(ro_ptr.dtype.element_ty)
            tl.store(ro_rows + cols[None, :], s_lp, mask=mask)
            s = s_lp.to(tl.float32)
            acc += s * s
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=1) / n_cols + eps)
        if REREAD_SUM:
            tl.debug_barrier()  # make this program's residual_out stores visible to all its threads
        for start in range(0, n_cols, BLOCK):
            cols = start + offs
            col_mask = cols < n_cols
            mask = row_mask[:, None] & col_mask[None, :]
            if REREAD_SUM:
                s = tl.load(ro_rows + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
            else:
                x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
                r = tl.load(r_rows + cols[None, :], mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
                s = (x + r).to(ro_ptr.dtype.element_ty).to(tl.float32)
            w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
            y = s * rstd[:, None] * w[None, :]
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
    return min(cfg["BLOCK_N"], full), False


def _out_like(x: torch.Tensor) -> torch.Tensor:
    """An uninitialised contiguous tensor shaped like x: empty_like where x is contiguous (on the host it costs a
    third of torch.empty with dtype and device keywords, which decode-sized calls pay in full), else torch.empty."""
    return torch.empty_like(x) if x.is_contiguous() else torch.empty(x.shape, dtype=x.dtype, device=x.device)


def launch_fused_add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
                              cfg: dict | None = None):
    cfg = TUNABLES if cfg is None else cfg
    n_cols = x.shape[-1]
    if 0 < cfg.get("WIDE_COLS", 0) <= n_cols:
        cfg = {**cfg, **_WIDE}
    x2, stride_x = _rows(x, n_cols)
    r2, stride_r = _rows(residual, n_cols)
    weight = weight.contiguous()
    n_rows = x.numel() // n_cols if n_cols else 0
    y = _out_like(x)
    r_out = _out_like(x)
    if n_rows > 0:
        rows = cfg["ROWS_PER_PROGRAM"]
        block, single = _tile(n_cols, cfg)
        grid = (_cdiv(n_rows, rows),)
        _fused_add_rms_norm_kernel[grid](
            x2, r2, weight, y, r_out, n_rows, n_cols, stride_x, stride_r, n_cols, n_cols, eps,
            ROWS=rows, BLOCK=block, SINGLE_TILE=single, REREAD_SUM=cfg["REREAD_SUM"],
            N_COLS=n_cols if cfg.get("CONST_COLS", 0) else 0,
            EARLY_WEIGHTS=_early_weights(cfg.get("EARLY_WEIGHTS", 1), single, grid[0], x.device),
            num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return y, r_out


class Model(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.hidden_size = hidden_size
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor):
        return launch_fused_add_rms_norm(x, residual, weight, self.eps)
