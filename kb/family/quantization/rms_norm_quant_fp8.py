"""Reference Triton kernel: RMSNorm (optionally after a residual add) followed by fp8 e4m3 quantisation.

    residual_out = (x + residual) rounded to x.dtype                  (only when a residual is given)
    s            = residual_out (or x) in fp32
    y            = (s * rsqrt(mean(s^2) + eps) * weight) rounded to x.dtype   (F.rms_norm: one rounding)
    dynamic (no `scale`): scale[t] = amax_j |y[t, j]| / FP8_MAX, 1 where that is 0; returned as [T, 1] fp32
    static (`scale`, one fp32 element): that per-tensor scale
    q            = clamp(y / scale, +-FP8_MAX) rounded to nearest even, in float8_e4m3fn (FP8_MAX 448) or
                   float8_e4m3fnuz (FP8_MAX 240), chosen by `out_dtype`
Returns (q, scale, residual_out) or (q, scale) with a dynamic scale; (q, residual_out) or q with a static one.

The fp8 bit patterns are computed with integer operations in the kernel and stored into a uint8 buffer that
is returned as a view of the fp8 dtype (not a copy): Triton on NVIDIA has no e4m3fnuz type, and the CPU
interpreter's own fp8 cast does not round to nearest even. HW_CAST uses the e4m3fn conversion instruction
on a GPU instead (cvt.rn.satfinite on sm_89+); e4m3fnuz goes through it as e4m3fn of 2·v (the two formats
differ only by one in the exponent bias) with the top code and negative zero fixed up. Under the CPU
interpreter bf16 roundings are done in integer arithmetic too (its bf16 cast truncates).

Tiling: each program owns ROWS_PER_PROGRAM rows as a [ROWS, BLOCK] register tile.
  * ONE_PASS: BLOCK = next_power_of_2(hidden); x and residual are read once, the row stays in registers.
  * otherwise a column loop over BLOCK_N chunks: pass 1 adds, stores residual_out and sums squares; a
    dynamic scale needs pass 2 for the row amax; the last pass quantises. Later passes read residual_out
    back (REREAD_SUM, after a CTA barrier) or re-read x and residual.
Cost: per element 2 B of x (+2 B residual, +2 B residual_out) read/written in bf16 and 1 B of q; ~10 FLOPs
and ~20 integer ops for the fp8 encoding. Bandwidth-bound.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_N": 1024, "ONE_PASS": True, "REREAD_SUM": True, "ROWS_PER_PROGRAM": 1, "EXACT_DIV": 0,
            "HW_CAST": 1, "CONST_COLS": 0, "num_warps": 8, "num_stages": 1}
SEARCH_SPACE = {
    "BLOCK_N": [256, 512, 1024, 2048, 4096, 8192],
    "ONE_PASS": [True, False],
    "REREAD_SUM": [True, False],
    "ROWS_PER_PROGRAM": [1, 2, 4, 8],
    "EXACT_DIV": [0, 1],
    "HW_CAST": [0, 1],
    "CONST_COLS": [0, 1],
    "num_warps": [1, 2, 4, 8, 16],
    "num_stages": [1, 2, 3],
}
# Tunables with no effect (the offline search skips them): with ONE_PASS a row is one register tile (as long as
# ROWS_PER_PROGRAM * next_power_of_2(row) <= _MAX_TILE_ELEMS), so there is no column loop to chunk or pipeline.
INERT = {"BLOCK_N": {"ONE_PASS": [True]}, "num_stages": {"ONE_PASS": [True]},
         "REREAD_SUM": {"ONE_PASS": [True]}}

_MAX_TILE_ELEMS = 65536  # largest ROWS * BLOCK register tile ONE_PASS may form; beyond it the loop is used
# CONST_COLS 1 compiles the row width in (one compilation per width): RMSNorm and fused add + RMSNorm gained 2-6%
# from it on the H200 (kb/experience/exp-h200-norm-row-width-compiled-in.md); not yet timed for this kernel.
_FP8_FORMATS = {"float8_e4m3fn": (torch.float8_e4m3fn, False, 448.0),
                "float8_e4m3fnuz": (torch.float8_e4m3fnuz, True, 240.0)}


@triton.jit
def _e4m3_bits(v, FNUZ: tl.constexpr):
    """The e4m3 code (int32 in [0, 255]) of fp32 v: round to nearest even, subnormals, finite values beyond the
    largest saturate to it; e4m3fn keeps the sign of zero and NaN is 0x7F | sign; e4m3fnuz (exponent bias 8,
    max 240) has no negative zero and NaN is 0x80."""
    bits = v.to(tl.int32, bitcast=True)
    mag = bits & 0x7FFFFFFF
    if FNUZ:
        sat = tl.minimum(mag, 0x43700000)  # 240.0
        # normal: keep 3 of 23 mantissa bits, ties to even (a carry moves into the exponent), rebias 127 -> 8
        normal = ((sat + 0x7FFFF + ((sat >> 20) & 1)) >> 20) - 952
        # below 2^-7: multiples of 2^-10, ties to even with the 1.5 * 2^23 add-subtract
        sub = ((sat.to(tl.float32, bitcast=True) * 1024.0 + 12582912.0) - 12582912.0).to(tl.int32)
        code = tl.where(sat < 0x3C000000, sub, normal)
        code = tl.where((bits < 0) & (code != 0), code | 0x80, code)
        code = tl.where(mag > 0x7F800000, 0x80, code)
    else:
        sat = tl.minimum(mag, 0x43E00000)  # 448.0
        normal = ((sat + 0x7FFFF + ((sat >> 20) & 1)) >> 20) - 960  # rebias 127 -> 7
        sub = ((sat.to(tl.float32, bitcast=True) * 512.0 + 12582912.0) - 12582912.0).to(tl.int32)  # 2^-9 steps
        code = tl.where(sat < 0x3C800000, sub, normal)  # below 2^-6
        code = tl.where(bits < 0, code | 0x80, code)
        code = tl.where(mag > 0x7F800000, code | 0x7F, code)
    return code


@triton.jit
def _e4m3_bits_hw(v, FNUZ: tl.constexpr):
    """_e4m3_bits of v (already clamped to +-FP8_MAX) with the GPU's fp32 -> e4m3fn conversion."""
    if FNUZ:
        code = (v * 2.0).to(tl.float8e4nv).to(tl.uint8, bitcast=True).to(tl.int32)
        code = tl.where(tl.abs(v) > 232.0, tl.where(v < 0, 0xFF, 0x7F), code)  # 232 ties down to 224
        code = tl.where(code == 0x80, 0, code)
    else:
        code = v.to(tl.float8e4nv).to(tl.uint8, bitcast=True).to(tl.int32)
    return code


@triton.jit
def _round_to_io(v, io_dtype: tl.constexpr, SOFT_BF16: tl.constexpr):
    """v rounded to the input dtype (nearest even) and back to fp32."""
    if SOFT_BF16:
        bits = v.to(tl.int32, bitcast=True)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) & -65536).to(tl.float32, bitcast=True)
    return v.to(io_dtype).to(tl.float32)


@triton.jit
def _load_sum(x_ptr, r_ptr, ro_ptr, rows, cols, mask, stride_x, stride_r, stride_ro,
              HAS_RESIDUAL: tl.constexpr, STORE: tl.constexpr, SOFT_BF16: tl.constexpr):
    """x (+ residual, rounded to the input dtype, stored as residual_out when STORE) of a tile, in fp32."""
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        r = tl.load(r_ptr + rows[:, None] * stride_r + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        x = _round_to_io(x + r, x_ptr.dtype.element_ty, SOFT_BF16)
        if STORE:
            tl.store(ro_ptr + rows[:, None] * stride_ro + cols[None, :], x.to(ro_ptr.dtype.element_ty), mask=mask)
    return x


@triton.jit
def _normed(x_ptr, w_ptr, s, rstd, cols, col_mask, SOFT_BF16: tl.constexpr):
    """y = s * rstd * weight, rounded once to the input dtype (fp32)."""
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    return _round_to_io(s * rstd[:, None] * w[None, :], x_ptr.dtype.element_ty, SOFT_BF16)


@triton.jit
def _store_codes(q_ptr, y, scale, rows, cols, mask, stride_q, FP8_MAX: tl.constexpr, FNUZ: tl.constexpr,
                 EXACT_DIV: tl.constexpr, HW_CAST: tl.constexpr):
    """Quantise a tile: clamp(y / scale, +-FP8_MAX) as e4m3 codes into the uint8 output."""
    if EXACT_DIV:
        v = tl.div_rn(y, scale[:, None])
    else:
        v = y * tl.div_rn(1.0, scale)[:, None]  # one fp8 ulp off where the ratio sits on a midpoint
    v = tl.minimum(tl.maximum(v, -FP8_MAX), FP8_MAX)
    if HW_CAST:
        code = _e4m3_bits_hw(v, FNUZ)
    else:
        code = _e4m3_bits(v, FNUZ)
    tl.store(q_ptr + rows[:, None] * stride_q + cols[None, :], code.to(tl.uint8), mask=mask)


@triton.jit
def _rms_norm_quant_fp8_kernel(x_ptr, r_ptr, w_ptr, q_ptr, s_ptr, ro_ptr, n_rows, n_cols_arg,
                               stride_x, stride_r, stride_q, stride_ro, eps,
                               HAS_RESIDUAL: tl.constexpr, DYNAMIC: tl.constexpr, FNUZ: tl.constexpr,
                               FP8_MAX: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr,
                               SINGLE_TILE: tl.constexpr, REREAD_SUM: tl.constexpr, EXACT_DIV: tl.constexpr,
                               HW_CAST: tl.constexpr, SOFT_BF16: tl.constexpr, N_COLS: tl.constexpr = 0):
    if N_COLS > 0:  # the row width compiled in
        n_cols = N_COLS
    else:
        n_cols = n_cols_arg
    pid = tl.program_id(0)
    rows = pid.to(tl.int64) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < n_rows
    offs = tl.arange(0, BLOCK)
    if SINGLE_TILE:
        col_mask = offs < n_cols
        mask = row_mask[:, None] & col_mask[None, :]
        s = _load_sum(x_ptr, r_ptr, ro_ptr, rows, offs, mask, stride_x, stride_r, stride_ro,
                      HAS_RESIDUAL, True, SOFT_BF16)
        rstd = 1.0 / tl.sqrt(tl.sum(s * s, axis=1) / n_cols + eps)
        y = _normed(x_ptr, w_ptr, s, rstd, offs, col_mask, SOFT_BF16)
        if DYNAMIC:
            scale = tl.div_rn(tl.max(tl.abs(y), axis=1), FP8_MAX)
            scale = tl.where(scale == 0.0, 1.0, scale)
            tl.store(s_ptr + rows, scale, mask=row_mask)
        else:
            scale = tl.load(s_ptr + rows * 0, mask=row_mask, other=1.0)
        _store_codes(q_ptr, y, scale, rows, offs, mask, stride_q, FP8_MAX, FNUZ, EXACT_DIV, HW_CAST)
    else:
        acc = tl.zeros([ROWS, BLOCK], dtype=tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + offs
            mask = row_mask[:, None] & (cols < n_cols)[None, :]
            s = _load_sum(x_ptr, r_ptr, ro_ptr, rows, cols, mask, stride_x, stride_r, stride_ro,
                          HAS_RESIDUAL, True, SOFT_BF16)
            acc += s * s
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=1) / n_cols + eps)
        if REREAD_SUM:
            tl.debug_barrier()  # make this program's residual_out stores visible to all its threads
        if DYNAMIC:
            peak = tl.zeros([ROWS, BLOCK], dtype=tl.float32)
            for start in range(0, n_cols, BLOCK):
                cols = start + offs
                col_mask = cols < n_cols
                mask = row_mask[:, None] & col_mask[None, :]
                if REREAD_SUM:
                    s = tl.load(ro_ptr + rows[:, None] * stride_ro + cols[None, :], mask=mask, other=0.0)
                    s = s.to(tl.float32)
                else:
                    s = _load_sum(x_ptr, r_ptr, ro_ptr, rows, cols, mask, stride_x, stride_r, stride_ro,
                                  HAS_RESIDUAL, False, SOFT_BF16)
                peak = tl.maximum(peak, tl.abs(_normed(x_ptr, w_ptr, s, rstd, cols, col_mask, SOFT_BF16)))
            scale = tl.div_rn(tl.max(peak, axis=1), FP8_MAX)
            scale = tl.where(scale == 0.0, 1.0, scale)
            tl.store(s_ptr + rows, scale, mask=row_mask)
        else:
            scale = tl.load(s_ptr + rows * 0, mask=row_mask, other=1.0)
        for start in range(0, n_cols, BLOCK):
            cols = start + offs
            col_mask = cols < n_cols
            mask = row_mask[:, None] & col_mask[None, :]
            if REREAD_SUM:
                s = tl.load(ro_ptr + rows[:, None] * stride_ro + cols[None, :], mask=mask, other=0.0,
                            eviction_policy="evict_first").to(tl.float32)
            else:
                s = _load_sum(x_ptr, r_ptr, ro_ptr, rows, cols, mask, stride_x, stride_r, stride_ro,
                              HAS_RESIDUAL, False, SOFT_BF16)
            y = _normed(x_ptr, w_ptr, s, rstd, cols, col_mask, SOFT_BF16)
            _store_codes(q_ptr, y, scale, rows, cols, mask, stride_q, FP8_MAX, FNUZ, EXACT_DIV, HW_CAST)


def _fp8_format(out_dtype) -> tuple[torch.dtype, bool, float]:
    """(dtype, is fnuz, largest finite value) of an e4m3 output named by string or given as a torch dtype."""
    name = out_dtype if isinstance(out_dtype, str) else str(out_dtype).removeprefix("torch.")
    if name not in _FP8_FORMATS:
        raise ValueError(f"out_dtype {out_dtype!r}: this kernel writes float8_e4m3fn or float8_e4m3fnuz")
    return _FP8_FORMATS[name]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def _rows(t: torch.Tensor, n_cols: int) -> tuple[torch.Tensor, int]:
    """t as rows of n_cols with unit column stride, and its row stride; a contiguous t as it is (a reshape
    costs microseconds of host time per call, which small shapes pay in full)."""
    if t.is_contiguous():
        return t, n_cols
    t2 = t.reshape(-1, n_cols)
    if t2.stride(-1) != 1:
        t2 = t2.contiguous()
    return t2, t2.stride(0)


def _rows_per_program(n_rows: int, n_cols: int, cfg: dict, on_gpu: bool) -> int:
    """ROWS_PER_PROGRAM on a GPU. The CPU interpreter's cost is per program (~0.7 ms each plus the tile's numpy
    work), and no GPU tunable means anything there: it packs rows up to the register-tile limit."""
    rows = cfg["ROWS_PER_PROGRAM"]
    if on_gpu:
        return rows
    packed = min(_MAX_TILE_ELEMS // _next_pow2(n_cols), _next_pow2(n_rows))
    return max(rows, packed)


def _tile(n_cols: int, rows: int, cfg: dict) -> tuple[int, bool]:
    full = _next_pow2(n_cols)
    if cfg["ONE_PASS"] and rows * full <= _MAX_TILE_ELEMS:
        return full, True
    block = min(cfg["BLOCK_N"], full)
    return block, block >= n_cols


def _check_shapes(x: torch.Tensor, weight: torch.Tensor, residual, scale) -> None:
    """One line for arguments that do not fit together (the kernel would read out of bounds)."""
    if x.ndim < 1 or not x.is_floating_point() or x.dtype.itemsize < 2:
        raise ValueError(f"x: a floating tensor of 16 or 32 bits, got {x.dtype} {tuple(x.shape)}")
    if weight.numel() != x.shape[-1]:
        raise ValueError(f"weight has {weight.numel()} elements for rows of {x.shape[-1]}")
    if residual is not None and (residual.shape != x.shape or residual.dtype != x.dtype):
        raise ValueError(f"residual {residual.dtype} {tuple(residual.shape)} != x {x.dtype} {tuple(x.shape)}")
    if scale is not None and (scale.numel() != 1 or scale.dtype != torch.float32):
        raise ValueError(f"a static scale is one float32 element, got {scale.dtype} {tuple(scale.shape)}")


def launch_rms_norm_quant_fp8(x: torch.Tensor, weight: torch.Tensor, eps: float, out_dtype="float8_e4m3fn",
                              residual: torch.Tensor | None = None, scale: torch.Tensor | None = None,
                              cfg: dict | None = None):
    cfg = TUNABLES if cfg is None else cfg
    fp8_dtype, fnuz, fp8_max = _fp8_format(out_dtype)
    _check_shapes(x, weight, residual, scale)
    n_cols = x.shape[-1]
    x2, stride_x = _rows(x, n_cols)
    n_rows = x.numel() // n_cols if n_cols else 0
    r2, stride_r = _rows(residual, n_cols) if residual is not None else (x2, stride_x)
    weight = weight.contiguous()
    q = torch.empty(x.shape, dtype=torch.uint8, device=x.device)
    r_out = x.new_empty(x.shape) if residual is not None else x2
    stride_ro = n_cols if residual is not None else stride_x
    dynamic = scale is None
    s = torch.empty((*x.shape[:-1], 1), dtype=torch.float32, device=x.device) if dynamic else scale.reshape(1)
    if n_rows > 0 and n_cols > 0:
        rows = _rows_per_program(n_rows, n_cols, cfg, x.is_cuda)
        block, single = _tile(n_cols, rows, cfg)
        _rms_norm_quant_fp8_kernel[(_cdiv(n_rows, rows),)](
            x2, r2, weight, q, s, r_out, n_rows, n_cols, stride_x, stride_r, n_cols, stride_ro,
            eps, HAS_RESIDUAL=residual is not None, DYNAMIC=dynamic, FNUZ=fnuz, FP8_MAX=fp8_max, ROWS=rows,
            BLOCK=block, SINGLE_TILE=single, REREAD_SUM=bool(cfg["REREAD_SUM"]) and residual is not None,
            EXACT_DIV=bool(cfg["EXACT_DIV"]), HW_CAST=bool(cfg["HW_CAST"]) and x.is_cuda,
            SOFT_BF16=x.dtype == torch.bfloat16 and not x.is_cuda, N_COLS=n_cols if cfg.get("CONST_COLS", 0) else 0,
            num_warps=cfg["num_warps"],
            num_stages=cfg["num_stages"])
    outputs = [q.view(fp8_dtype)]
    if dynamic:
        outputs.append(s)
    if residual is not None:
        outputs.append(r_out)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


class Model(nn.Module):
    # A call of this kernel, for the knowledge base's transfer search (no suite problem defines its interface):
    # forward tensors as [dtype, shape], init values as they are.
    EXAMPLE_CALL = {"init": {"eps": 1e-6, "out_dtype": "float8_e4m3fn"},
                    "forward": {"x": ["bfloat16", [4, 256]], "weight": ["bfloat16", [256]],
                                "residual": ["bfloat16", [4, 256]], "scale": ["float32", [1]]}}

    def __init__(self, eps: float = 1e-6, out_dtype: str = "float8_e4m3fn"):
        super().__init__()
        _fp8_format(out_dtype)
        self.eps = eps
        self.out_dtype = out_dtype

    def forward(self, x: torch.Tensor, weight: torch.Tensor, residual: torch.Tensor | None = None,
                scale: torch.Tensor | None = None):
        return launch_rms_norm_quant_fp8(x, weight, self.eps, self.out_dtype, residual, scale)
