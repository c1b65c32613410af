"""The compiler seed's own matrix product: where inductor calls a library GEMM (`mm`, `addmm`, `bmm`, `baddbmm`,
`_int_mm`), the seed calls this Triton kernel instead, so a projection with a fused epilogue (inductor's own
pointwise kernel after the product) is the candidate's kernels from end to end.

One kernel serves all five: a batch axis (stride 0 for `mm`), any strides (inductor passes transposed views),
fp32 accumulation (int32 for `_int_mm`'s int8 operands, exact as the library's), an optional broadcast bias scaled
by `beta` (`addmm`, `baddbmm`), the result cast to the output's dtype.
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
def _seed_matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K, s_ab, s_am, s_ak, s_bb, s_bk, s_bn, s_cb, s_cm,
                        s_cn, s_xb, s_xm, s_xn, alpha, beta, HAS_BIAS: tl.constexpr, IEEE: tl.constexpr,
                        WIDEN: tl.constexpr, INTEGER: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """c[b] = alpha * a[b] @ b[b] (+ beta * bias[b]); programs walk GROUP_M row tiles per column tile."""
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
    a_rows = a_ptr + batch * s_ab + offs_m.to(tl.int64)[:, None] * s_am
    b_cols = b_ptr + batch * s_bb + offs_n.to(tl.int64)[None, :] * s_bn
    if INTEGER:  # int8 operands: an exact int32 sum
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + offs_k
        k_ok = ks < K
        a = tl.load(a_rows + ks.to(tl.int64)[None, :] * s_ak, mask=m_ok[:, None] & k_ok[None, :], other=0)
        b = tl.load(b_cols + ks.to(tl.int64)[:, None] * s_bk, mask=k_ok[:, None] & n_ok[None, :], other=0)
        if WIDEN:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        if IEEE:
            acc += tl.dot(a, b, input_precision="ieee")
        else:
            acc += tl.dot(a, b)
    if not INTEGER:
        acc = acc * alpha
    tile_ok = m_ok[:, None] & n_ok[None, :]
    if HAS_BIAS:
        bias = tl.load(bias_ptr + batch * s_xb + offs_m.to(tl.int64)[:, None] * s_xm
                       + offs_n.to(tl.int64)[None, :] * s_xn, mask=tile_ok, other=0.0)
        acc += beta * bias.to(tl.float32)
    tl.store(c_ptr + batch * s_cb + offs_m.to(tl.int64)[:, None] * s_cm + offs_n.to(tl.int64)[None, :] * s_cn,
             acc.to(c_ptr.dtype.element_ty), mask=tile_ok)


def _seed_gemm(a, b, out, bias=None, alpha=1.0, beta=1.0):
    """out = alpha * a @ b (+ beta * bias) for 2-D or batched 3-D operands, written into `out` (any strides)."""
    if a.dim() == 2:
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
    widen = a.dtype == torch.bfloat16 and a.device.type == "cpu"  # the interpreter's bf16 dot is wrong
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn), batch)
    _seed_matmul_kernel[grid](
        a3, b3, c3, x3, m, n, k, *a3.stride(), *b3.stride(), *c3.stride(), *x3.stride(), float(alpha),
        float(beta), HAS_BIAS=bias is not None, IEEE=a.dtype == torch.float32 or widen, WIDEN=widen,
        INTEGER=a.dtype == torch.int8,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=TUNABLES["mm_BLOCK_K"], GROUP_M=TUNABLES["mm_GROUP_M"],
        num_warps=TUNABLES["mm_num_warps"], num_stages=TUNABLES["mm_num_stages"])
    return out


def _seed_mm(a, b, *, out):
    return _seed_gemm(a, b, out)


def _seed_addmm(bias, a, b, *, alpha=1, beta=1, out):
    return _seed_gemm(a, b, out, bias, alpha, beta)


def _seed_int_mm(a, b, *, out):
    return _seed_gemm(a, b, out)


def _seed_bmm(a, b, *, out):
    return _seed_gemm(a, b, out)


def _seed_baddbmm(bias, a, b, *, alpha=1, beta=1, out):
    return _seed_gemm(a, b, out, bias, alpha, beta)
'''
