"""Reference Triton kernel for linear_attn_gated_delta_decode (one gated-delta-rule step, state in place).

Grid (cdiv(v_dim, BLOCK_V), batch * heads): a program owns the state columns S[:, v0:v0+BLOCK_V] of one
(sequence, head). Value columns are independent in the delta rule (u, the update and out are all
column-wise once the [k_dim] vectors q_n, k_n are known), so programs never communicate; each one
recomputes the two L2 norms over k_dim (a few hundred bytes, from L2).

Per program, in fp32:  S *= exp(g);  kv = S^T k_n;  u = beta * (v - kv);  S += k_n u^T;  out = S^T q_n.
Tactic K_SPLIT (BLOCK_K < k_dim): the state slice is walked in [BLOCK_K, BLOCK_V] chunks in two passes
(pass 1: kv; pass 2: update, store, out), reading the slice twice but keeping few registers. With
BLOCK_K >= k_dim the slice is loaded once, kept in registers and written once (minimum traffic).
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_V": 32, "BLOCK_K": 256, "num_warps": 8}
SEARCH_SPACE = {
    "BLOCK_V": [8, 16, 32, 64],
    "BLOCK_K": [16, 32, 64, 128, 256],
    "num_warps": [2, 4, 8],
}


@triton.jit
def _linear_attn_gated_delta_decode_kernel(
    q_ptr, k_ptr, v_ptr, g_ptr, beta_ptr, state_ptr, out_ptr,
    heads, k_dim, v_dim, q_scale,
    sq_b, sq_h, sq_k, sk_b, sk_h, sk_k, sv_b, sv_h, sv_v,
    sg_b, sg_h, sbe_b, sbe_h, ss_b, ss_h, ss_k, ss_v, so_b, so_h, so_v,
    BLOCK_K: tl.constexpr, BLOCK_V: tl.constexpr, SINGLE_PASS: tl.constexpr,
):
    pid_v = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // heads).to(tl.int64)
    h = (pid_bh % heads).to(tl.int64)
    vs = pid_v * BLOCK_V + tl.arange(0, BLOCK_V)
    v_ok = vs < v_dim
    vs64 = vs.to(tl.int64)
    ks0 = tl.arange(0, BLOCK_K)

    q_row = q_ptr + b * sq_b + h * sq_h
    k_row = k_ptr + b * sk_b + h * sk_h
    s_base = state_ptr + b * ss_b + h * ss_h

    # L2 norms of q and k over k_dim (fp32)
    qq = tl.zeros((BLOCK_K,), dtype=tl.float32)
    kk = tl.zeros((BLOCK_K,), dtype=tl.float32)
    for k0 in range(0, k_dim, BLOCK_K):
        ks = k0 + ks0
        qv = tl.load(q_row + ks * sq_k, mask=ks < k_dim, other=0.0).to(tl.float32)
        kv_ = tl.load(k_row + ks * sk_k, mask=ks < k_dim, other=0.0).to(tl.float32)
        qq += qv * qv
        kk += kv_ * kv_
    q_mul = q_scale / tl.sqrt(tl.sum(qq, axis=0) + 1e-6)
    k_mul = 1.0 / tl.sqrt(tl.sum(kk, axis=0) + 1e-6)

    decay = tl.exp(tl.load(g_ptr + b * sg_b + h * sg_h).to(tl.float32))
    beta = tl.load(beta_ptr + b * sbe_b + h * sbe_h).to(tl.float32)
    vv = tl.load(v_ptr + b * sv_b + h * sv_h + vs64 * sv_v, mask=v_ok, other=0.0).to(tl.float32)

    if SINGLE_PASS:
        ks = ks0
        k_ok = ks < k_dim
        m = k_ok[:, None] & v_ok[None, :]
        ptrs = s_base + (ks[:, None] * ss_k + vs[None, :] * ss_v)  # int32 offsets inside one slice
        S = tl.load(ptrs, mask=m, other=0.0).to(tl.float32) * decay
        kn = tl.load(k_row + ks * sk_k, mask=k_ok, other=0.0).to(tl.float32) * k_mul
        qn = tl.load(q_row + ks * sq_k, mask=k_ok, other=0.0).to(tl.float32) * q_mul
        kvm = tl.sum(S * kn[:, None], axis=0)
        u = beta * (vv - kvm)
        S = S + kn[:, None] * u[None, :]
        tl.store(ptrs, S.to(state_ptr.dtype.element_ty), mask=m)
        o = tl.sum(S * qn[:, None], axis=0)
    else:
        kvm = tl.zeros((BLOCK_V,), dtype=tl.float32)
        for k0 in range(0, k_dim, BLOCK_K):
            ks = k0 + ks0
            k_ok = ks < k_dim
            m = k_ok[:, None] & v_ok[None, :]
            ptrs = s_base + (ks[:, None] * ss_k + vs[None, :] * ss_v)  # int32 offsets inside one slice
            S = tl.load(ptrs, mask=m, other=0.0).to(tl.float32) * decay
            kn = tl.load(k_row + ks * sk_k, mask=k_ok, other=0.0).to(tl.float32) * k_mul
            kvm += tl.sum(S * kn[:, None], axis=0)
        u = beta * (vv - kvm)
        o = tl.zeros((BLOCK_V,), dtype=tl.float32)
        for k0 in range(0, k_dim, BLOCK_K):
            ks = k0 + ks0
            k_ok = ks < k_dim
            m = k_ok[:, None] & v_ok[None, :]
            ptrs = s_base + (ks[:, None] * ss_k + vs[None, :] * ss_v)  # int32 offsets inside one slice
            S = tl.load(ptrs, mask=m, other=0.0).to(tl.float32) * decay
            kn = tl.load(k_row + ks * sk_k, mask=k_ok, other=0.0).to(tl.float32) * k_mul
            qn = tl.load(q_row + ks * sq_k, mask=k_ok, other=0.0).to(tl.float32) * q_mul
            S = S + kn[:, None] * u[None, :]
            tl.store(ptrs, S.to(state_ptr.dtype.element_ty), mask=m)
            o += tl.sum(S * qn[:, None], axis=0)
    tl.store(out_ptr + b * so_b + h * so_h + vs64 * so_v, o.to(out_ptr.dtype.element_ty), mask=v_ok)


def launch_linear_attn_gated_delta_decode(q, k, v, g, beta, state):
    batch, heads, k_dim = q.shape
    v_dim = v.shape[-1]
    out = torch.empty((batch, heads, v_dim), dtype=q.dtype, device=q.device)
    if batch * heads == 0:
        return out, state
    bv = TUNABLES["BLOCK_V"]
    bk = min(TUNABLES["BLOCK_K"], triton.next_power_of_2(k_dim))  # no wider than the (padded) key dim
    grid = (triton.cdiv(v_dim, bv), batch * heads)
    _linear_attn_gated_delta_decode_kernel[grid](
        q, k, v, g, beta, state, out, heads, k_dim, v_dim, float(k_dim) ** -0.5,
        *q.stride(), *k.stride(), *v.stride(), *g.stride(), *beta.stride(), *state.stride(), *out.stride(),
        BLOCK_K=bk, BLOCK_V=bv, SINGLE_PASS=bk >= k_dim, num_warps=TUNABLES["num_warps"],
    )
    return out, state


class Model(nn.Module):
    def __init__(self, heads: int, k_dim: int, v_dim: int):
        super().__init__()
        self.heads = heads
        self.k_dim = k_dim
        self.v_dim = v_dim

    def forward(self, q, k, v, g, beta, state):
        return launch_linear_attn_gated_delta_decode(q, k, v, g, beta, state)
