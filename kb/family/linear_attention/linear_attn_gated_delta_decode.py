"""Reference Triton kernel for linear_attn_gated_delta_decode: the gated delta rule, one decode step or a
recurrent update over every token of a sequence, state in place or returned.

Grid (cdiv(v_dim, BLOCK_V), sequences * heads): a program owns the state columns S[:, v0:v0+BLOCK_V] of one
(sequence, value head). Value columns are independent in the delta rule (u, the update and out are all
column-wise once the [k_dim] vectors q_n, k_n are known), so programs never communicate; each one
recomputes the two L2 norms over k_dim (a few hundred bytes, from L2).

Per token, in fp32:  S *= exp(g);  kv = S^T k_n;  u = beta * (v - kv);  S += k_n u^T;  out = S^T q_n.
With BLOCK_K >= k_dim the slice is loaded once, kept in registers over all of the sequence's tokens and
written once (minimum traffic). Tactic K_SPLIT (BLOCK_K < k_dim, one decode step only): the slice is walked
in [BLOCK_K, BLOCK_V] chunks in two passes (pass 1: kv; pass 2: update, store, out), reading it twice but
keeping few registers; several tokens always take the single pass.

The token loop (several tokens per sequence, or packed sequences) is serial per program, so its cost per token
is latency: the input loads, then reductions that depend on each other. PREFETCH=1 pipelines it by hand: token
t+1's q, k, v, gate and beta are loaded (masked past the sequence's end) before token t's math and carried as
loop state, so the loads are in flight during the math. FUSED_REDUCE=1 shortens the chain: |q|^2, |k|^2 and q.k
in one reduction, S^T k_n and S^T q_n of the decayed slice in one more, out = S^T q_n + u (k_n . q_n) (two
reduction rounds a token instead of four). The loop launches with SEQ_BLOCK_V columns and SEQ_WARPS warps, the
decode step with BLOCK_V and num_warps. Measured on an H200 (b=1, 4120 tokens, 16/32 heads, 128/128,
scripts/gdr_configs_device.py, 2026-12-03): the loop as it was (32 columns, 8 warps, neither tactic) 2.22 us a
token; PREFETCH alone 1.54; 16 columns, 2 warps, both tactics (the defaults) 0.89, 2.5x.

CHUNK (default 16; 0 keeps the token loop) folds the recurrence into chunks of CHUNK tokens for sequences of a
chunk or more on average (`_gated_delta_chunk_kernel`, the WY form): a chunk's updates come from one triangular
system, solved by doubling, and every product is a [CHUNK x ...] dot (tf32 with CHUNK_TF32 1, else fp32), so a
program walks CHUNK tokens a step instead of one. H100, b=1, 16/32 heads, 128/128, bf16, do_bench against the
token loop at its defaults (`scripts/gdr_configs_device.py --grid CHUNK=0,32,64 ...`, 2026-12-06): 8192 tokens
7248 -> 2854 us (2.5x), 1033 tokens 920 -> 388 us (2.4x), 128 tokens 117 -> 56 us (2.1x); largest differences
from the loop 4.9e-4 in the output, 1.2e-3 in the final state (unit-scale inputs). CHUNK_V columns of the state a
program (16), CHUNK_WARPS (4; 8 warps 1.3-1.6x slower). 16-token chunks against 32 (H100, 2026-12-06): 1.01-1.05x
on those three, 1.00-1.15x on every published gated-delta shape through the evaluator (S_op 0.047 -> 0.049; the
token loop 0.032); ptxas spills 48 bytes a thread at 16 against 576 at 32 (255 registers either way).

Interface forms (constexpr branches: a launch compiles only its own form): q/k/v as
[batch, heads, dim] (one token) or [batch, tokens, heads, dim] (grouped: value head h reads query/key head
h // (heads // q_heads)), or packed sequences by cu_seqlens; g/beta given, or g = -exp(A_log) *
softplus(a + dt_bias) and beta = sigmoid(b) computed per token; the state per sequence or a pool of slots
read at state_indices; final states written in place, or into a new pool (a copy kernel moves the slots
no sequence owns).
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_V": 32, "BLOCK_K": 256, "num_warps": 8, "SEQ_BLOCK_V": 16, "SEQ_WARPS": 2, "PREFETCH": 1,
            "FUSED_REDUCE": 1, "CHUNK": 16, "CHUNK_V": 16, "CHUNK_WARPS": 4, "CHUNK_TF32": 1}
SEARCH_SPACE = {
    "BLOCK_V": [8, 16, 32, 64],
    "BLOCK_K": [16, 32, 64, 128, 256],
    "num_warps": [2, 4, 8],
    "SEQ_BLOCK_V": [8, 16, 32, 64],
    "SEQ_WARPS": [1, 2, 4, 8],
    "PREFETCH": [0, 1],
    "FUSED_REDUCE": [0, 1],
    "CHUNK": [0, 16, 32, 64],
    "CHUNK_V": [16, 32, 64],
    "CHUNK_WARPS": [4, 8],
    "CHUNK_TF32": [0, 1],
}
INERT = {  # the chunked form's tiles mean nothing while it is off
    "CHUNK_V": {"CHUNK": [0]},
    "CHUNK_WARPS": {"CHUNK": [0]},
    "CHUNK_TF32": {"CHUNK": [0]},
}
# BLOCK_V and num_warps size the decode step (one token per sequence); SEQ_BLOCK_V, SEQ_WARPS, PREFETCH and
# FUSED_REDUCE only the token loop (several tokens, or packed sequences). Which regime a launch is in depends on
# the shape, not on another tunable, so there is no INERT rule: on a decode shape the SEQ_* points launch the
# same kernel and the sweep records them as duplicates of the default.
# The SEQ_* defaults are the fastest of an H200 sweep (8, 16 or 32 columns x 2, 4 or 8 warps x FUSED_REDUCE,
# PREFETCH on; kb/experience/exp-h200-gated-delta-token-loop.md): narrow slices and 2 warps keep reductions short.


@triton.jit
def _gate_math(gt, bt, neg_rate, dt_bias, sp_beta, sp_threshold, GATE_FROM_A: tl.constexpr,
               BETA_FROM_B: tl.constexpr):
    """(decay, beta) from a token's loaded gate and beta inputs (through softplus and sigmoid from a and b)."""
    if GATE_FROM_A:
        x = gt + dt_bias
        xb = x * sp_beta
        soft = tl.where(xb < -15.0, tl.exp(xb), tl.log(1.0 + tl.exp(xb))) / sp_beta
        decay = tl.exp(neg_rate * tl.where(xb > sp_threshold, x, soft))
    else:
        decay = tl.exp(gt)
    if BETA_FROM_B:
        bt = tl.sigmoid(bt)
    return decay, bt


@triton.jit
def _gates(g_ptr, beta_ptr, g_off, beta_off, neg_rate, dt_bias, sp_beta, sp_threshold,
           GATE_FROM_A: tl.constexpr, BETA_FROM_B: tl.constexpr):
    """(decay, beta) of one token: exp(g) and beta as given, or from a / b through softplus and sigmoid."""
    gt = tl.load(g_ptr + g_off).to(tl.float32)
    bt = tl.load(beta_ptr + beta_off).to(tl.float32)
    return _gate_math(gt, bt, neg_rate, dt_bias, sp_beta, sp_threshold, GATE_FROM_A, BETA_FROM_B)


@triton.jit
def _l2_mul(sumsq, USE_L2NORM: tl.constexpr, L2NORM_CLAMP: tl.constexpr):
    """The factor that L2-normalises a vector with this sum of squares (1 without normalisation)."""
    if USE_L2NORM:
        if L2NORM_CLAMP:
            mul = 1.0 / tl.maximum(tl.sqrt(sumsq), 1e-6)
        else:
            mul = 1.0 / tl.sqrt(sumsq + 1e-6)
    else:
        mul = sumsq * 0.0 + 1.0
    return mul


@triton.jit
def _load_token(q_tok, k_tok, v_tok, g_tok, beta_tok, q_offs, k_offs, k_ok, v_ok, live):
    """The raw inputs of one token as fp32 (q, k, v, gate, beta); all zeros where `live` is false."""
    qv = tl.load(q_tok + q_offs, mask=k_ok & live, other=0.0).to(tl.float32)
    kv_ = tl.load(k_tok + k_offs, mask=k_ok & live, other=0.0).to(tl.float32)
    vv = tl.load(v_tok, mask=v_ok & live, other=0.0).to(tl.float32)
    gt = tl.load(g_tok, mask=live, other=0.0).to(tl.float32)
    bt = tl.load(beta_tok, mask=live, other=0.0).to(tl.float32)
    return qv, kv_, vv, gt, bt


@triton.jit
def _token_math(S, qv, kv_, vv, gt, bt, o_tok, v_ok, q_scale, neg_rate, dt_bias, sp_beta, sp_threshold,
                GATE_FROM_A: tl.constexpr, BETA_FROM_B: tl.constexpr, USE_L2NORM: tl.constexpr,
                L2NORM_CLAMP: tl.constexpr, FUSED_REDUCE: tl.constexpr):
    """One token of the loop from its loaded inputs: decay, delta update, output stored; the new slice.
    FUSED_REDUCE: the three key-dim sums (|q|^2, |k|^2, q.k) in one reduction and the two state sums (S^T k_n,
    S^T q_n, both of the decayed slice) in another (operands joined on a minor axis of 2, one tl.sum each), out =
    S^T q_n + u (k_n . q_n); otherwise four reductions in a dependent chain, out from the updated slice."""
    decay, beta = _gate_math(gt, bt, neg_rate, dt_bias, sp_beta, sp_threshold, GATE_FROM_A, BETA_FROM_B)
    if FUSED_REDUCE:
        squares, cross = tl.split(tl.sum(tl.join(tl.join(qv * qv, kv_ * kv_), tl.join(qv * kv_, qv * 0.0)), axis=0))
        qq, kk = tl.split(squares)
        qk, _ = tl.split(cross)
        q_mul = q_scale * _l2_mul(qq, USE_L2NORM, L2NORM_CLAMP)
        k_mul = _l2_mul(kk, USE_L2NORM, L2NORM_CLAMP)
        qn = qv * q_mul
        kn = kv_ * k_mul
        S = S * decay
        kvm, sq = tl.split(tl.sum(tl.join(S * kn[:, None], S * qn[:, None]), axis=0))
        u = beta * (vv - kvm)
        S = S + kn[:, None] * u[None, :]
        o = sq + u * (qk * (q_mul * k_mul))
    else:
        qn = qv * (q_scale * _l2_mul(tl.sum(qv * qv, axis=0), USE_L2NORM, L2NORM_CLAMP))
        kn = kv_ * _l2_mul(tl.sum(kv_ * kv_, axis=0), USE_L2NORM, L2NORM_CLAMP)
        S = S * decay
        kvm = tl.sum(S * kn[:, None], axis=0)
        u = beta * (vv - kvm)
        S = S + kn[:, None] * u[None, :]
        o = tl.sum(S * qn[:, None], axis=0)
    tl.store(o_tok, o.to(o_tok.dtype.element_ty), mask=v_ok)
    return S


@triton.jit
def _token_step(S, q_tok, k_tok, v_tok, o_tok, g_off, beta_off, q_offs, k_offs, k_ok, v_ok, q_scale, g_ptr,
                beta_ptr, neg_rate, dt_bias, sp_beta, sp_threshold, GATE_FROM_A: tl.constexpr,
                BETA_FROM_B: tl.constexpr, USE_L2NORM: tl.constexpr, L2NORM_CLAMP: tl.constexpr):
    """One token on a state slice held whole in registers: decay, delta update, output stored; the new slice."""
    qv = tl.load(q_tok + q_offs, mask=k_ok, other=0.0).to(tl.float32)
    kv_ = tl.load(k_tok + k_offs, mask=k_ok, other=0.0).to(tl.float32)
    gt = tl.load(g_ptr + g_off).to(tl.float32)
    bt = tl.load(beta_ptr + beta_off).to(tl.float32)
    vv = tl.load(v_tok, mask=v_ok, other=0.0).to(tl.float32)
    return _token_math(S, qv, kv_, vv, gt, bt, o_tok, v_ok, q_scale, neg_rate, dt_bias, sp_beta, sp_threshold,
                       GATE_FROM_A, BETA_FROM_B, USE_L2NORM, L2NORM_CLAMP, False)


@triton.jit
def _program_sequence(cu_ptr, idx_ptr, tokens, heads, group, IS_VARLEN: tl.constexpr, HAS_INDICES: tl.constexpr):
    """This program's (sequence, value head, query/key head, first token, end token, batch row, state row):
    grid axis 1 is sequence * heads + head; packed sequences (IS_VARLEN) are batch row 0, tokens
    cu_seqlens[n]:cu_seqlens[n+1]; the state row is the sequence, or its index in a pool (HAS_INDICES)."""
    pid_nh = tl.program_id(1)
    n = (pid_nh // heads).to(tl.int64)
    h = (pid_nh % heads).to(tl.int64)
    if IS_VARLEN:
        t_begin = tl.load(cu_ptr + n).to(tl.int64)
        t_end = tl.load(cu_ptr + n + 1).to(tl.int64)
        b = n * 0
    else:
        t_begin = n * 0
        t_end = t_begin + tokens
        b = n
    if HAS_INDICES:
        row = tl.load(idx_ptr + n).to(tl.int64)
    else:
        row = n
    return n, h, h // group, t_begin, t_end, b, row


@triton.jit
def _gate_constants(a_log_ptr, dt_bias_ptr, h, GATE_FROM_A: tl.constexpr, HAS_DT_BIAS: tl.constexpr):
    """(-exp(A_log[h]), dt_bias[h]) of a head whose gates come from A_log and a; (0, 0) otherwise."""
    neg_rate = 0.0
    dt_bias = 0.0
    if GATE_FROM_A:
        neg_rate = -tl.exp(tl.load(a_log_ptr + h).to(tl.float32))
        if HAS_DT_BIAS:
            dt_bias = tl.load(dt_bias_ptr + h).to(tl.float32)
    return neg_rate, dt_bias


@triton.jit
def _log_gates(gt, bt, neg_rate, dt_bias, sp_beta, sp_threshold, GATE_FROM_A: tl.constexpr, BETA_FROM_B: tl.constexpr):
    """(log decay, beta) of loaded gate and beta inputs: `_gate_math` without the final exp of the decay."""
    if GATE_FROM_A:
        x = gt + dt_bias
        xb = x * sp_beta
        soft = tl.where(xb < -15.0, tl.exp(xb), tl.log(1.0 + tl.exp(xb))) / sp_beta
        log_decay = neg_rate * tl.where(xb > sp_threshold, x, soft)
    else:
        log_decay = gt
    if BETA_FROM_B:
        bt = tl.sigmoid(bt)
    return log_decay, bt


@triton.jit
def _gated_delta_chunk_kernel(
    q_ptr, k_ptr, v_ptr, g_ptr, beta_ptr, a_log_ptr, dt_bias_ptr, state_ptr, final_ptr, idx_ptr, cu_ptr, out_ptr,
    tokens, heads, group, k_dim, v_dim, q_scale, sp_beta, sp_threshold,
    sq_b, sq_t, sq_h, sq_k, sk_b, sk_t, sk_h, sk_k, sv_b, sv_t, sv_h, sv_v,
    sg_b, sg_t, sg_h, sbe_b, sbe_t, sbe_h, ss_n, ss_h, ss_k, ss_v, sf_n, sf_h, sf_k, sf_v, so_b, so_t, so_h, so_v,
    BLOCK_K: tl.constexpr, BLOCK_V: tl.constexpr, CHUNK: tl.constexpr, LOG2_CHUNK: tl.constexpr,
    HAS_STATE: tl.constexpr, HAS_INDICES: tl.constexpr, IS_VARLEN: tl.constexpr, GATE_FROM_A: tl.constexpr,
    BETA_FROM_B: tl.constexpr, HAS_DT_BIAS: tl.constexpr, USE_L2NORM: tl.constexpr, L2NORM_CLAMP: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """The token loop's result by chunks of CHUNK tokens (the WY form): within a chunk, with G the cumulative
    log decay, kn/qn the normalised keys/queries and S the state entering the chunk,
        A[t, s] = beta_t exp(G_t - G_s) kn_t . kn_s  (s < t),   T = (I + A)^-1
        U = T (beta v - (beta exp(G) kn) S)                 (the chunk's delta-rule updates)
        out = (exp(G) qn) S + M (U),  M[t, s] = exp(G_t - G_s) qn_t . kn_s  (s <= t)
        S' = exp(G_last) S + (exp(G_last - G) kn)^T U
    every product a [CHUNK x ...] dot. T by doubling: A is strictly lower triangular, so (I + A)^-1 =
    (I - A)(I + A^2)(I + A^4)... with log2(CHUNK) factors (exact: A^CHUNK = 0). Rows past the sequence's end load
    zeros and a zero log decay (T's rows and columns there are the identity's), and are not stored. Grid and
    state slice as `_linear_attn_gated_delta_decode_kernel`'s; the dots in PRECISION ("tf32" or "ieee")."""
    pid_v = tl.program_id(0)
    n, h, hq, t_begin, t_end, b, row = _program_sequence(cu_ptr, idx_ptr, tokens, heads, group, IS_VARLEN,
                                                         HAS_INDICES)
    vs = pid_v * BLOCK_V + tl.arange(0, BLOCK_V)
    v_ok = vs < v_dim
    ks = tl.arange(0, BLOCK_K)
    k_ok = ks < k_dim
    kv_ok = k_ok[:, None] & v_ok[None, :]
    ts = tl.arange(0, CHUNK)
    neg_rate, dt_bias = _gate_constants(a_log_ptr, dt_bias_ptr, h, GATE_FROM_A, HAS_DT_BIAS)
    s_base = state_ptr + row * ss_n + h * ss_h
    if HAS_STATE:
        S = tl.load(s_base + (ks[:, None] * ss_k + vs[None, :] * ss_v), mask=kv_ok, other=0.0).to(tl.float32)
    else:
        S = tl.zeros((BLOCK_K, BLOCK_V), dtype=tl.float32)
    eye = (ts[:, None] == ts[None, :]).to(tl.float32)
    below = ts[:, None] > ts[None, :]
    for c0 in range(t_begin, t_end, CHUNK):
        t = c0 + ts
        live = t < t_end
        lk = live[:, None] & k_ok[None, :]
        qc = tl.load(q_ptr + b * sq_b + t[:, None] * sq_t + hq * sq_h + ks[None, :] * sq_k, mask=lk,
                     other=0.0).to(tl.float32)
        kc = tl.load(k_ptr + b * sk_b + t[:, None] * sk_t + hq * sk_h + ks[None, :] * sk_k, mask=lk,
                     other=0.0).to(tl.float32)
        vc = tl.load(v_ptr + b * sv_b + t[:, None] * sv_t + h * sv_h + vs[None, :] * sv_v,
                     mask=live[:, None] & v_ok[None, :], other=0.0).to(tl.float32)
        gt = tl.load(g_ptr + b * sg_b + t * sg_t + h * sg_h, mask=live, other=0.0).to(tl.float32)
        bt = tl.load(beta_ptr + b * sbe_b + t * sbe_t + h * sbe_h, mask=live, other=0.0).to(tl.float32)
        log_decay, beta = _log_gates(gt, bt, neg_rate, dt_bias, sp_beta, sp_threshold, GATE_FROM_A, BETA_FROM_B)
        log_decay = tl.where(live, log_decay, 0.0)  # (beta there multiplies zero keys and values)
        qn = qc * (q_scale * _l2_mul(tl.sum(qc * qc, axis=1), USE_L2NORM, L2NORM_CLAMP))[:, None]
        kn = kc * _l2_mul(tl.sum(kc * kc, axis=1), USE_L2NORM, L2NORM_CLAMP)[:, None]
        G = tl.cumsum(log_decay, axis=0)
        g_last = tl.sum(tl.where(ts == CHUNK - 1, G, 0.0), axis=0)  # rows past the end add no decay
        decay_in = tl.exp(tl.where(below | (ts[:, None] == ts[None, :]), G[:, None] - G[None, :], 0.0))
        kk = tl.dot(kn, tl.trans(kn), input_precision=PRECISION)
        qk = tl.dot(qn, tl.trans(kn), input_precision=PRECISION)
        minus_a = tl.where(below, -(beta[:, None] * decay_in * kk), 0.0)
        inv = eye + minus_a  # (I + A)^-1 = prod_j (I + (-A)^(2^j))
        power = minus_a
        for _ in tl.static_range(LOG2_CHUNK - 1):
            power = tl.dot(power, power, input_precision=PRECISION)
            inv = inv + tl.dot(inv, power, input_precision=PRECISION)
        # U = T (beta v - (beta exp(G) kn) S): the state's part first, a [CHUNK, BLOCK_V] tile, so no
        # [CHUNK, k_dim] product of T is formed
        seen = tl.dot((beta * tl.exp(G))[:, None] * kn, S, input_precision=PRECISION)
        u = tl.dot(inv, beta[:, None] * vc - seen, input_precision=PRECISION)
        mixed = tl.where(below | (ts[:, None] == ts[None, :]), decay_in * qk, 0.0)
        o = tl.dot(tl.exp(G)[:, None] * qn, S, input_precision=PRECISION) + tl.dot(mixed, u,
                                                                                   input_precision=PRECISION)
        tl.store(out_ptr + b * so_b + t[:, None] * so_t + h * so_h + vs[None, :] * so_v,
                 o.to(out_ptr.dtype.element_ty), mask=live[:, None] & v_ok[None, :])
        k_out = tl.exp(g_last - G)[:, None] * kn
        S = tl.exp(g_last) * S + tl.dot(tl.trans(k_out), u, input_precision=PRECISION)
    f_base = final_ptr + row * sf_n + h * sf_h
    tl.store(f_base + (ks[:, None] * sf_k + vs[None, :] * sf_v), S.to(final_ptr.dtype.element_ty), mask=kv_ok)


@triton.jit
def _linear_attn_gated_delta_decode_kernel(
    q_ptr, k_ptr, v_ptr, g_ptr, beta_ptr, a_log_ptr, dt_bias_ptr, state_ptr, final_ptr, idx_ptr, cu_ptr, out_ptr,
    tokens, heads, group, k_dim, v_dim, q_scale, sp_beta, sp_threshold,
    sq_b, sq_t, sq_h, sq_k, sk_b, sk_t, sk_h, sk_k, sv_b, sv_t, sv_h, sv_v,
    sg_b, sg_t, sg_h, sbe_b, sbe_t, sbe_h, ss_n, ss_h, ss_k, ss_v, sf_n, sf_h, sf_k, sf_v, so_b, so_t, so_h, so_v,
    BLOCK_K: tl.constexpr, BLOCK_V: tl.constexpr, SINGLE_PASS: tl.constexpr, HAS_STATE: tl.constexpr,
    HAS_INDICES: tl.constexpr, IS_VARLEN: tl.constexpr, GATE_FROM_A: tl.constexpr, BETA_FROM_B: tl.constexpr,
    HAS_DT_BIAS: tl.constexpr, USE_L2NORM: tl.constexpr, L2NORM_CLAMP: tl.constexpr, ONE_TOKEN: tl.constexpr,
    PREFETCH: tl.constexpr, FUSED_REDUCE: tl.constexpr,
):
    pid_v = tl.program_id(0)
    n, h, hq, t_begin, t_end, b, row = _program_sequence(cu_ptr, idx_ptr, tokens, heads, group, IS_VARLEN,
                                                         HAS_INDICES)
    vs = pid_v * BLOCK_V + tl.arange(0, BLOCK_V)
    v_ok = vs < v_dim
    vs64 = vs.to(tl.int64)
    ks0 = tl.arange(0, BLOCK_K)

    q_row = q_ptr + b * sq_b + hq * sq_h
    k_row = k_ptr + b * sk_b + hq * sk_h
    v_row = v_ptr + b * sv_b + h * sv_h + vs64 * sv_v
    o_row = out_ptr + b * so_b + h * so_h + vs64 * so_v
    g_row = b * sg_b + h * sg_h
    beta_row = b * sbe_b + h * sbe_h
    s_base = state_ptr + row * ss_n + h * ss_h
    f_base = final_ptr + row * sf_n + h * sf_h
    neg_rate, dt_bias = _gate_constants(a_log_ptr, dt_bias_ptr, h, GATE_FROM_A, HAS_DT_BIAS)

    if SINGLE_PASS:
        ks = ks0
        k_ok = ks < k_dim
        m = k_ok[:, None] & v_ok[None, :]
        if HAS_STATE:
            S = tl.load(s_base + (ks[:, None] * ss_k + vs[None, :] * ss_v), mask=m, other=0.0).to(tl.float32)
        else:
            S = tl.zeros((BLOCK_K, BLOCK_V), dtype=tl.float32)
        if ONE_TOKEN:  # a decode step: straight-line code
            S = _token_step(S, q_row + t_begin * sq_t, k_row + t_begin * sk_t, v_row + t_begin * sv_t,
                            o_row + t_begin * so_t, g_row + t_begin * sg_t, beta_row + t_begin * sbe_t, ks * sq_k,
                            ks * sk_k, k_ok, v_ok, q_scale, g_ptr, beta_ptr, neg_rate, dt_bias, sp_beta,
                            sp_threshold, GATE_FROM_A, BETA_FROM_B, USE_L2NORM, L2NORM_CLAMP)
        elif PREFETCH:  # the sequence's tokens in order, token t+1's inputs loaded before token t's math
            cq, ck, cv, cg, cb = _load_token(q_row + t_begin * sq_t, k_row + t_begin * sk_t, v_row + t_begin * sv_t,
                                             g_ptr + g_row + t_begin * sg_t, beta_ptr + beta_row + t_begin * sbe_t,
                                             ks * sq_k, ks * sk_k, k_ok, v_ok, t_begin < t_end)
            for t in range(t_begin, t_end):
                nt = t + 1  # past t_end the loads are masked off (zeros, never used)
                nq, nk, nv, ng, nb = _load_token(q_row + nt * sq_t, k_row + nt * sk_t, v_row + nt * sv_t,
                                                 g_ptr + g_row + nt * sg_t, beta_ptr + beta_row + nt * sbe_t,
                                                 ks * sq_k, ks * sk_k, k_ok, v_ok, nt < t_end)
                S = _token_math(S, cq, ck, cv, cg, cb, o_row + t * so_t, v_ok, q_scale, neg_rate, dt_bias, sp_beta,
                                sp_threshold, GATE_FROM_A, BETA_FROM_B, USE_L2NORM, L2NORM_CLAMP, FUSED_REDUCE)
                cq, ck, cv, cg, cb = nq, nk, nv, ng, nb
        else:  # the sequence's tokens in order, each token's inputs loaded at the start of its iteration
            for t in range(t_begin, t_end):
                cq, ck, cv, cg, cb = _load_token(q_row + t * sq_t, k_row + t * sk_t, v_row + t * sv_t,
                                                 g_ptr + g_row + t * sg_t, beta_ptr + beta_row + t * sbe_t,
                                                 ks * sq_k, ks * sk_k, k_ok, v_ok, t < t_end)
                S = _token_math(S, cq, ck, cv, cg, cb, o_row + t * so_t, v_ok, q_scale, neg_rate, dt_bias, sp_beta,
                                sp_threshold, GATE_FROM_A, BETA_FROM_B, USE_L2NORM, L2NORM_CLAMP, FUSED_REDUCE)
        tl.store(f_base + (ks[:, None] * sf_k + vs[None, :] * sf_v), S.to(final_ptr.dtype.element_ty), mask=m)
    else:  # one token, the state slice walked in [BLOCK_K, BLOCK_V] chunks, twice
        t = t_begin
        qq = tl.zeros((BLOCK_K,), dtype=tl.float32)
        kk = tl.zeros((BLOCK_K,), dtype=tl.float32)
        for k0 in range(0, k_dim, BLOCK_K):
            ks = k0 + ks0
            qv = tl.load(q_row + t * sq_t + ks * sq_k, mask=ks < k_dim, other=0.0).to(tl.float32)
            kv_ = tl.load(k_row + t * sk_t + ks * sk_k, mask=ks < k_dim, other=0.0).to(tl.float32)
            qq += qv * qv
            kk += kv_ * kv_
        q_mul = q_scale * _l2_mul(tl.sum(qq, axis=0), USE_L2NORM, L2NORM_CLAMP)
        k_mul = _l2_mul(tl.sum(kk, axis=0), USE_L2NORM, L2NORM_CLAMP)
        decay, beta = _gates(g_ptr, beta_ptr, g_row + t * sg_t, beta_row + t * sbe_t, neg_rate, dt_bias,
                             sp_beta, sp_threshold, GATE_FROM_A, BETA_FROM_B)
        vv = tl.load(v_row + t * sv_t, mask=v_ok, other=0.0).to(tl.float32)
        kvm = tl.zeros((BLOCK_V,), dtype=tl.float32)
        for k0 in range(0, k_dim, BLOCK_K):
            ks = k0 + ks0
            k_ok = ks < k_dim
            m = k_ok[:, None] & v_ok[None, :]
            S = tl.load(s_base + (ks[:, None] * ss_k + vs[None, :] * ss_v), mask=m, other=0.0).to(tl.float32) * decay
            kn = tl.load(k_row + t * sk_t + ks * sk_k, mask=k_ok, other=0.0).to(tl.float32) * k_mul
            kvm += tl.sum(S * kn[:, None], axis=0)
        u = beta * (vv - kvm)
        o = tl.zeros((BLOCK_V,), dtype=tl.float32)
        for k0 in range(0, k_dim, BLOCK_K):
            ks = k0 + ks0
            k_ok = ks < k_dim
            m = k_ok[:, None] & v_ok[None, :]
            S = tl.load(s_base + (ks[:, None] * ss_k + vs[None, :] * ss_v), mask=m, other=0.0).to(tl.float32) * decay
            kn = tl.load(k_row + t * sk_t + ks * sk_k, mask=k_ok, other=0.0).to(tl.float32) * k_mul
            qn = tl.load(q_row + t * sq_t + ks * sq_k, mask=k_ok, other=0.0).to(tl.float32) * q_mul
            S = S + kn[:, None] * u[None, :]
            tl.store(f_base + (ks[:, None] * sf_k + vs[None, :] * sf_v), S.to(final_ptr.dtype.element_ty), mask=m)
            o += tl.sum(S * qn[:, None], axis=0)
        tl.store(o_row + t * so_t, o.to(out_ptr.dtype.element_ty), mask=v_ok)


@triton.jit
def _copy_free_slots_kernel(src_ptr, dst_ptr, idx_ptr, n_slots, n_idx, heads, k_dim, v_dim,
                            ss_n, ss_h, ss_k, ss_v, sd_n, sd_h, sd_k, sd_v,
                            SLOTS: tl.constexpr, BLOCK: tl.constexpr, BLOCK_I: tl.constexpr, FLAT: tl.constexpr):
    """dst[slot] = src[slot] for every slot of the pool that no sequence's index names (those the main kernel
    writes), a [SLOTS, BLOCK] tile of slots and elements per program. FLAT: both pools' slots are contiguous."""
    slots = tl.program_id(0).to(tl.int64) * SLOTS + tl.arange(0, SLOTS)
    hits = tl.zeros((SLOTS,), dtype=tl.int32)
    for i0 in range(0, n_idx, BLOCK_I):
        ii = i0 + tl.arange(0, BLOCK_I)
        ids = tl.load(idx_ptr + ii, mask=ii < n_idx, other=-1).to(tl.int64)
        hits += tl.sum((ids[None, :] == slots[:, None]).to(tl.int32), axis=1)
    offs = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = ((slots < n_slots) & (hits == 0))[:, None] & (offs < heads * k_dim * v_dim)[None, :]
    if FLAT:
        x = tl.load(src_ptr + slots[:, None] * ss_n + offs[None, :], mask=m)
        tl.store(dst_ptr + slots[:, None] * sd_n + offs[None, :], x, mask=m)
    else:
        within = (offs // (k_dim * v_dim)) * ss_h + ((offs // v_dim) % k_dim) * ss_k + (offs % v_dim) * ss_v
        x = tl.load(src_ptr + slots[:, None] * ss_n + within[None, :], mask=m)
        within = (offs // (k_dim * v_dim)) * sd_h + ((offs // v_dim) % k_dim) * sd_k + (offs % v_dim) * sd_v
        tl.store(dst_ptr + slots[:, None] * sd_n + within[None, :], x, mask=m)


_INTERPRETED = type(_copy_free_slots_kernel).__name__ == "InterpretedFunction"  # Triton's CPU interpreter


def _token_strides(t, rank):
    """(batch, token, head, last) strides of a [batch, heads, d] / [batch, tokens, heads, d] tensor, and of a
    [batch, heads] / [batch, tokens, heads] gate when rank counts one axis less."""
    s = t.stride()
    return (s[0], 0, *s[1:]) if len(s) == rank - 1 else s


def _flat_slots(pool):
    """True when every slot of a [slots, heads, k_dim, v_dim] pool is one contiguous block."""
    expected = 1
    for size, stride in zip(reversed(pool.shape[1:]), reversed(pool.stride()[1:])):
        if size > 1 and stride != expected:
            return False
        expected *= size
    return True


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def _copy_free_slots(pool, final, indices):
    """final[slot] = pool[slot] for the slots no index names. One slot per program when compiled; under
    Triton's interpreter, which costs milliseconds per program, tiles of up to 2**20 elements over slots."""
    slots, heads, k_dim, v_dim = pool.shape
    per_slot = heads * k_dim * v_dim
    block = min(1 << 15 if _INTERPRETED else 1 << 14, _next_pow2(per_slot))
    tile = (min(32, _next_pow2(slots), (1 << 20) // block) if _INTERPRETED else 1, block)
    grid = (_cdiv(slots, tile[0]), _cdiv(per_slot, tile[1]))
    _copy_free_slots_kernel[grid](pool, final, indices, slots, indices.numel(), heads, k_dim, v_dim,
                                  *pool.stride(), *final.stride(), SLOTS=tile[0], BLOCK=tile[1],
                                  BLOCK_I=min(1024, _next_pow2(max(indices.numel(), 1))),
                                  FLAT=_flat_slots(pool) and _flat_slots(final))


def launch_linear_attn_gated_delta_decode(q, k, v, g=None, beta=None, state=None, state_indices=None,
                                          A_log=None, a=None, dt_bias=None, b=None, cu_seqlens=None,
                                          scale=None, use_qk_l2norm=True, l2norm_clamp=False,
                                          softplus_beta=1.0, softplus_threshold=20.0, inplace_final_state=True):
    tokens = 1 if q.dim() == 3 else q.shape[1]
    batch, q_heads, k_dim = q.shape[0], q.shape[-2], q.shape[-1]
    heads, v_dim = v.shape[-2], v.shape[-1]
    gate, strength = (g if g is not None else a), (beta if beta is not None else b)
    if gate is None or strength is None or (g is None and A_log is None) or heads % q_heads:
        raise ValueError("the gated delta rule needs g (or A_log and a), beta (or b), and heads divisible by q's")
    if state is None and state_indices is not None:
        raise ValueError("state_indices index a state pool; pass the pool as state")
    seqs = cu_seqlens.numel() - 1 if cu_seqlens is not None else batch
    # empty_like where it gives the same tensor: a third of torch.empty's host time with dtype and device keywords
    out = (torch.empty_like(v) if v.dtype == q.dtype and v.is_contiguous()
           else q.new_empty(v.shape))
    if state is None:
        final = torch.empty((seqs, heads, k_dim, v_dim), dtype=torch.float32, device=q.device)
    elif inplace_final_state:
        final = state
    else:
        final = torch.empty_like(state)
        if state_indices is not None and state.numel():
            _copy_free_slots(state, final, state_indices)
    if seqs * heads == 0:
        return out, final
    if state is not None and state_indices is None and final.shape[0] != seqs:
        raise ValueError(f"state {tuple(state.shape)} holds {state.shape[0]} sequences, not {seqs}")
    one_token = tokens == 1 and cu_seqlens is None  # the decode step; otherwise the token loop
    bv = TUNABLES["BLOCK_V"] if one_token else TUNABLES["SEQ_BLOCK_V"]
    bk = min(TUNABLES["BLOCK_K"], _next_pow2(k_dim))  # no wider than the (padded) key dim
    if bk < k_dim and (tokens > 1 or cu_seqlens is not None or state is None):
        bk = _next_pow2(k_dim)  # several tokens keep the slice in registers
    src = state if state is not None else final
    any_ptr = q  # a valid pointer for arguments a form does not use
    chunk = TUNABLES["CHUNK"]
    if chunk and not one_token and (q.shape[0] * tokens if cu_seqlens is None else q.shape[1]) >= chunk * seqs:
        bv, bk = TUNABLES["CHUNK_V"], max(16, _next_pow2(k_dim))  # sequences of a chunk or more on average
        kernel, form = _gated_delta_chunk_kernel, dict(
            CHUNK=chunk, LOG2_CHUNK=chunk.bit_length() - 1,
            PRECISION="tf32" if TUNABLES["CHUNK_TF32"] else "ieee", num_warps=TUNABLES["CHUNK_WARPS"])
    else:
        kernel, form = _linear_attn_gated_delta_decode_kernel, dict(
            SINGLE_PASS=bk >= k_dim, ONE_TOKEN=one_token, PREFETCH=bool(TUNABLES["PREFETCH"]) and not one_token,
            FUSED_REDUCE=bool(TUNABLES["FUSED_REDUCE"]) and not one_token,
            num_warps=TUNABLES["num_warps"] if one_token else TUNABLES["SEQ_WARPS"])
    grid = (_cdiv(v_dim, bv), seqs * heads)
    kernel[grid](
        q, k, v, gate, strength, A_log if A_log is not None else any_ptr, dt_bias if dt_bias is not None else any_ptr,
        src, final, state_indices if state_indices is not None else any_ptr,
        cu_seqlens if cu_seqlens is not None else any_ptr, out,
        tokens, heads, heads // q_heads, k_dim, v_dim, float(scale) if scale is not None else float(k_dim) ** -0.5,
        float(softplus_beta), float(softplus_threshold),
        *_token_strides(q, 4), *_token_strides(k, 4), *_token_strides(v, 4),
        *_token_strides(gate, 3), *_token_strides(strength, 3), *src.stride(), *final.stride(),
        *_token_strides(out, 4),
        BLOCK_K=bk, BLOCK_V=bv, HAS_STATE=state is not None,
        HAS_INDICES=state_indices is not None, IS_VARLEN=cu_seqlens is not None, GATE_FROM_A=g is None,
        BETA_FROM_B=beta is None, HAS_DT_BIAS=dt_bias is not None, USE_L2NORM=bool(use_qk_l2norm),
        L2NORM_CLAMP=bool(l2norm_clamp), **form,
    )
    return out, final


class Model(nn.Module):
    def __init__(self, heads: int | None = None, k_dim: int | None = None, v_dim: int | None = None,
                 scale: float | None = None, use_qk_l2norm: bool = True, l2norm_clamp: bool = False,
                 softplus_beta: float = 1.0, softplus_threshold: float = 20.0, inplace_final_state: bool = True):
        super().__init__()
        self.heads, self.k_dim, self.v_dim = heads, k_dim, v_dim
        self.options = dict(scale=scale, use_qk_l2norm=use_qk_l2norm, l2norm_clamp=l2norm_clamp,
                            softplus_beta=softplus_beta, softplus_threshold=softplus_threshold,
                            inplace_final_state=inplace_final_state)

    def forward(self, q, k, v, g=None, beta=None, state=None, state_indices=None, A_log=None, a=None,
                dt_bias=None, b=None, cu_seqlens=None):
        return launch_linear_attn_gated_delta_decode(q, k, v, g, beta, state, state_indices, A_log, a, dt_bias, b,
                                                     cu_seqlens, **self.options)
