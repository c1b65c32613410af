"""RMSNorm forms for `norm_interval_device.py --forms`: one row a program, the two-pass loop of inductor's
generated kernel, with each of its properties switchable, to find which of them a decode-size interval depends on.
"""

import triton
import triton.language as tl


@triton.jit
def rms_two_pass(x_ptr, w_ptr, y_ptr, n_cols, eps, N: tl.constexpr, R: tl.constexpr, CONST_N: tl.constexpr,
                 WIDE: tl.constexpr, WHERE: tl.constexpr):
    """Pass 1 sums x^2 over R-wide chunks (loads kept in L2), pass 2 re-reads, normalises and stores.
    CONST_N: the width N compiled in; WIDE: 64-bit row offsets; WHERE: masked lanes kept by tl.where."""
    row = tl.program_id(0)
    if WIDE:
        row = row.to(tl.int64)
    if CONST_N:
        ncols = N
    else:
        ncols = n_cols
    base = tl.arange(0, R)[None, :]
    acc = tl.zeros([1, R], tl.float32)
    for off in tl.range(0, ncols, R):
        idx = off + base
        m = idx < ncols
        x = tl.load(x_ptr + (idx + ncols * row), m, eviction_policy="evict_last", other=0.0).to(tl.float32)
        if WHERE:
            acc = tl.where(m, acc + x * x, acc)
        else:
            acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, 1)[:, None] / ncols + eps)
    for off in tl.range(0, ncols, R):
        idx = off + base
        m = idx < ncols
        x = tl.load(x_ptr + (idx + ncols * row), m, eviction_policy="evict_first", other=0.0).to(tl.float32)
        w = tl.load(w_ptr + idx, m, eviction_policy="evict_last", other=0.0).to(tl.float32)
        tl.store(y_ptr + (idx + ncols * row), (x * rstd * w).to(y_ptr.dtype.element_ty), m)
