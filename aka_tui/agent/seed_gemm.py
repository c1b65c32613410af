"""The compiler seed's own matrix product: where inductor calls a library GEMM (`mm`, `addmm`, `bmm`, `baddbmm`,
`_int_mm`, `_scaled_mm`, `_grouped_mm`, `_weight_int8pack_mm`), the seed calls this Triton kernel instead, so a
projection with a fused epilogue (inductor's own pointwise kernel after the product) is the candidate's kernels
from end to end.

One kernel serves all eight: a batch axis (stride 0 for `mm`), any strides (inductor passes transposed views),
fp32 accumulation (int32 for `_int_mm`'s int8 operands, exact as the library's), `_scaled_mm`'s fp8 operands with
their tensor-wise or row/column-wise scales applied to the sum, an optional broadcast bias scaled by `beta`
(`addmm`, `baddbmm`; `_scaled_mm`'s bias is added after the scales, unscaled), `_grouped_mm`'s groups of rows
(a mixture of experts' tokens sorted by expert: one program per row tile and group, skipping the groups its tile
does not hold), `_weight_int8pack_mm`'s int8 weights taken as the activations' dtype with a scale per column,
the result cast to the output's dtype. fp8 tiles are widened to fp32 on the CPU (the interpreter
has no fp8 dot) and go to fp8 tensor cores on a GPU.
fp32 operands use IEEE dots (the library's default precision for fp32); fp16/bf16 use tensor cores. On the CPU
bf16 tiles are widened to fp32 first (exact) and use IEEE dots: Triton's interpreter computes bf16 dots wrongly
(3.7.1: an error of 5e10 on a 32 x 32 product of unit normals; fp16 and fp32 are right). Tiles,
grouped-row order, warps and stages are TUNABLES (prefix `mm_`), so the offline loop searches them.
"""

from __future__ import annotations

GEMM_TUNABLES: dict[str, object] = {"mm_BLOCK_M": 64, "mm_BLOCK_N": 64, "mm_BLOCK_K": 32, "mm_GROUP_M": 8,
                                    "mm_num_warps": 4, "mm_num_stages": 3}
GEMM_SPACE: dict[str, list[object]] = {"mm_BLOCK_M": [16, 32, 64, 128, 256], "mm_BLOCK_N": [32, 64, 128, 256],
                                       "mm_BLOCK_K": [16, 32, 64, 128], "mm_GROUP_M": [1, 4, 8, 16],
                                       "mm_num_warps": [2, 4, 8], "mm_num_stages": [1, 2, 3, 4, 5]}

GEMM_SOURCE = '''

@triton.jit
def _seed_matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, sa_ptr, sb_ptr, ends_ptr, M, N, K, s_ab, s_am, s_ak, s_bb,
                        s_bk, s_bn, s_cb, s_cm, s_cn, s_xb, s_xm, s_xn, s_sa, s_sb, alpha, beta,
                        HAS_BIAS: tl.constexpr, SCALED: tl.constexpr, GROUPED: tl.constexpr, IEEE: tl.constexpr,
                        WIDEN: tl.constexpr, INTEGER: tl.constexpr, FP8: tl.constexpr, B_AS_A: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """c[b] = alpha * a[b] @ b[b] (* sa[m] * sb[n]) (+ beta * bias[b]); programs walk GROUP_M row tiles per column
    tile. GROUPED: b is group b's weight, and only rows ends[b - 1] <= m < ends[b] are group b's (a and c have batch
    stride 0; a program whose tile holds none of them returns at once). B_AS_A: b's int8 weights take a's dtype."""
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % rows_in_group
    pid_n = (pid % per_group) // rows_in_group
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < M
    n_ok = offs_n < N
    if GROUPED:
        row_end = tl.load(ends_ptr + batch).to(tl.int64)
        row_start = tl.load(ends_ptr + batch - 1, mask=batch > 0, other=0).to(tl.int64)
        if (pid_m * BLOCK_M >= row_end) | ((pid_m + 1) * BLOCK_M <= row_start):
            return
        m_ok = m_ok & (offs_m >= row_start) & (offs_m < row_end)
    a_rows = a_ptr + batch * s_ab + offs_m.to(tl.int64)[:, None] * s_am
    b_cols = b_ptr + batch * s_bb + offs_n.to(tl.int64)[None, :] * s_bn
    if INTEGER:  # int8 operands: an exact int32 sum
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        k_ok = ks < K
        a_ok = m_ok[:, None] & k_ok[None, :]
        b_ok = k_ok[:, None] & n_ok[None, :]
        if FP8:  # fp8 lanes are filled from a float zero (Triton casts no integer to fp8)
            a = tl.load(a_rows + ks.to(tl.int64)[None, :] * s_ak, mask=a_ok, other=0.0)
            b = tl.load(b_cols + ks.to(tl.int64)[:, None] * s_bk, mask=b_ok, other=0.0)
        else:
            a = tl.load(a_rows + ks.to(tl.int64)[None, :] * s_ak, mask=a_ok, other=0)
            b = tl.load(b_cols + ks.to(tl.int64)[:, None] * s_bk, mask=b_ok, other=0)
        if WIDEN:  # (the interpreter's int8-to-bf16 cast is wrong too: int8 weights go straight to fp32 there)
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        elif B_AS_A:
            b = b.to(a.dtype)
        if IEEE:
            acc += tl.dot(a, b, input_precision="ieee")
        else:
            acc += tl.dot(a, b)
    if not INTEGER:
        acc = acc * alpha
    if SCALED:  # _scaled_mm: a scale per row of a and per column of b (stride 0 for one scale per tensor)
        sa = tl.load(sa_ptr + offs_m.to(tl.int64) * s_sa, mask=m_ok, other=0.0).to(tl.float32)
        sb = tl.load(sb_ptr + offs_n.to(tl.int64) * s_sb, mask=n_ok, other=0.0).to(tl.float32)
        acc = acc * sa[:, None] * sb[None, :]
    tile_ok = m_ok[:, None] & n_ok[None, :]
    if HAS_BIAS:
        bias = tl.load(bias_ptr + batch * s_xb + offs_m.to(tl.int64)[:, None] * s_xm
                       + offs_n.to(tl.int64)[None, :] * s_xn, mask=tile_ok, other=0.0)
        acc += beta * bias.to(tl.float32)
    tl.store(c_ptr + batch * s_cb + offs_m.to(tl.int64)[:, None] * s_cm + offs_n.to(tl.int64)[None, :] * s_cn,
             acc.to(c_ptr.dtype.element_ty), mask=tile_ok)


def _seed_gemm(a, b, out, bias=None, alpha=1.0, beta=1.0, scales=None, ends=None):
    """out = alpha * a @ b (* scale_a * scale_b) (+ beta * bias) for 2-D or batched 3-D operands, written into `out`
    (any strides); `scales` is (scale_a, scale_b) as flat vectors over rows and columns with their strides; `ends`
    (with 2-D a and out, 3-D b) is each group's end row: rows of group g take b[g]."""
    if ends is not None:
        a3, b3, c3 = a.unsqueeze(0).expand(b.shape[0], -1, -1), b, out.unsqueeze(0).expand(b.shape[0], -1, -1)
    elif a.dim() == 2:
        a3, b3, c3 = a.unsqueeze(0), b.unsqueeze(0), out.unsqueeze(0)
    else:
        a3, b3, c3 = a, b, out
    batch, m, k = a3.shape
    n = b3.shape[-1]
    if batch == 0 or m == 0 or n == 0:
        return out
    x3 = c3  # not read without a bias
    if bias is not None:  # a broadcast view: stride 0 along the dimensions the bias repeats
        x3 = torch.broadcast_to(bias, out.shape)
        x3 = x3.unsqueeze(0) if a.dim() == 2 else x3
    bm, bn = TUNABLES["mm_BLOCK_M"], TUNABLES["mm_BLOCK_N"]
    fp8 = a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2)
    # the interpreter's bf16 dot is wrong and it has no fp8 dot: widened to fp32 there (exact)
    widen = (a.dtype == torch.bfloat16 or fp8) and a.device.type == "cpu"
    sa, s_sa, sb, s_sb = scales if scales is not None else (c3, 0, c3, 0)
    ends_or_any = ends if ends is not None else c3
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn), batch)
    _seed_matmul_kernel[grid](
        a3, b3, c3, x3, sa, sb, ends_or_any, m, n, k, *a3.stride(), *b3.stride(), *c3.stride(), *x3.stride(), s_sa,
        s_sb, float(alpha), float(beta), HAS_BIAS=bias is not None, SCALED=scales is not None,
        GROUPED=ends is not None,
        IEEE=a.dtype == torch.float32 or widen, WIDEN=widen, INTEGER=a.dtype == torch.int8, FP8=fp8,
        B_AS_A=b.dtype != a.dtype,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=TUNABLES["mm_BLOCK_K"], GROUP_M=TUNABLES["mm_GROUP_M"],
        num_warps=TUNABLES["mm_num_warps"], num_stages=TUNABLES["mm_num_stages"])
    return out


def _seed_mm(a, b, *, out):
    return _seed_gemm(a, b, out)


def _seed_addmm(bias, a, b, *, alpha=1, beta=1, out):
    return _seed_gemm(a, b, out, bias, alpha, beta)


def _seed_int_mm(a, b, *, out):
    return _seed_gemm(a, b, out)


def _seed_scaled_mm(a, b, scale_a, scale_b, bias=None, scale_result=None, *, out_dtype=None, use_fast_accum=False,
                    out):
    """torch._scaled_mm with one scale per tensor or per row of `a` and column of `b` (fp32 sums either way)."""
    m, n = a.shape[0], b.shape[1]
    if scale_result is not None:
        raise ValueError("the seed's GEMM applies no scale_result (an fp8 output's scale)")
    if scale_a.numel() not in (1, m) or scale_b.numel() not in (1, n):
        raise ValueError(f"the seed's GEMM takes tensor-wise or row/column-wise scales, not {tuple(scale_a.shape)} "
                         f"and {tuple(scale_b.shape)}")
    sa, sb = scale_a.reshape(-1), scale_b.reshape(-1)
    scales = (sa, sa.stride(0) if sa.numel() > 1 else 0, sb, sb.stride(0) if sb.numel() > 1 else 0)
    return _seed_gemm(a, b, out, bias, scales=scales)


def _seed_grouped_mm(a, b, offs=None, bias=None, out_dtype=None):
    """torch._grouped_mm of rows [M, K] by groups [G, K, N] with offs (each group's end row; rows past the last end
    are not written), or of [G, M, K] by [G, K, N] without; the result's rows padded to 16 bytes, as the library's."""
    if bias is not None:
        raise ValueError("the seed's GEMM adds no bias to a grouped product")
    dtype = out_dtype or a.dtype
    if a.dim() == 3 and b.dim() == 3 and offs is None:
        return _seed_gemm(a, b, torch.empty(a.shape[0], a.shape[1], b.shape[2], dtype=dtype, device=a.device))
    if a.dim() != 2 or b.dim() != 3 or offs is None:
        raise ValueError("the seed's GEMM takes a grouped product of 2-D rows by 3-D groups with offsets, or of two "
                         f"3-D operands, not {a.dim()}-D by {b.dim()}-D")
    m, n = a.shape[0], b.shape[2]
    align = max(16 // dtype.itemsize, 1)
    out = torch.empty_strided((m, n), (triton.cdiv(n, align) * align, 1), dtype=dtype, device=a.device)
    return _seed_gemm(a, b, out, ends=offs)


def _seed_weight_int8pack_mm(x, w, scales):
    """torch._weight_int8pack_mm: x [M, K] times int8 weights w [N, K] taken as x's dtype, a scale per column."""
    out = torch.empty(x.shape[0], w.shape[0], dtype=x.dtype, device=x.device)
    one = torch.ones(1, dtype=torch.float32, device=x.device)
    return _seed_gemm(x, w.t(), out, scales=(one, 0, scales, scales.stride(0)))


def _seed_bmm(a, b, *, out):
    return _seed_gemm(a, b, out)


def _seed_baddbmm(bias, a, b, *, alpha=1, beta=1, out):
    return _seed_gemm(a, b, out, bias, alpha, beta)
'''
