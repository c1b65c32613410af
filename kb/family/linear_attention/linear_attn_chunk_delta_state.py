"""Reference Triton kernel: the state pass of the chunked gated delta rule (Gated DeltaNet prefill).

The chunked form splits a sequence into chunks of `chunk_size` tokens. Inside a chunk the delta rule's
rank-1 updates are folded beforehand (the WY representation) into `w` [tokens, heads, k_dim] and
`u` [tokens, heads, v_dim]; what is left is a recurrence over chunks, per (sequence, head), on the state
S [k_dim, v_dim] (fp32), with g the log decay cumulated inside each chunk::

    h[c]      = S                                         (the state entering chunk c, in k's dtype)
    v_new     = u - w @ S                                 (S rounded to k's dtype for the product)
    S         = exp(g_last) * S + k^T @ (v_new * exp(g_last - g))   (exp of a positive exponent reads 0;
                                                                    v_new scaled is rounded to k's dtype)

Returns (h [batch, chunks, heads, k_dim, v_dim] in k's dtype, v_new like u, final_state). Grid
(cdiv(v_dim, BLOCK_V), batch * heads): a program owns S[:, v0:v0+BLOCK_V] of one (sequence, head) in
registers for the whole sequence; both products are tensor-core dots ([chunk, k_dim] x [k_dim, BLOCK_V] and
[k_dim, chunk] x [chunk, BLOCK_V]). k may have fewer heads than w/u (value head h reads key head
h // (heads // k_heads)); with more (no model has that, but a probe shrunk for the CPU can), value head h reads
key head h. The state comes from `initial_state` per sequence or from a pool of slots at
`initial_state_indices` (zeros when None); final states are written in place, or into a new pool (a copy
kernel moves the slots no sequence owns) with `inplace_final_state=False` (the default, as a chunked prefill
returns its final states).
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_V": 32, "num_warps": 4, "num_stages": 2}
SEARCH_SPACE = {
    "BLOCK_V": [16, 32, 64],
    "num_warps": [2, 4, 8],
    "num_stages": [1, 2, 3],
}


@triton.jit
def _chunk_delta_state_kernel(
    k_ptr, w_ptr, u_ptr, g_ptr, state_ptr, final_ptr, idx_ptr, h_ptr, vnew_ptr,
    tokens, heads, group, k_heads, k_dim, v_dim, chunk, n_chunks,
    sk_b, sk_t, sk_h, sk_k, sw_b, sw_t, sw_h, sw_k, su_b, su_t, su_h, su_v, sg_b, sg_t, sg_h,
    ss_n, ss_h, ss_k, ss_v, sf_n, sf_h, sf_k, sf_v, sh_b, sh_c, sh_h, sh_k, sh_v, sn_b, sn_t, sn_h, sn_v,
    BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_V: tl.constexpr, HAS_G: tl.constexpr,
    HAS_STATE: tl.constexpr, HAS_INDICES: tl.constexpr, IEEE: tl.constexpr, DOT_F32: tl.constexpr,
):
    pid_v = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = (pid_bh // heads).to(tl.int64)
    h = (pid_bh % heads).to(tl.int64)
    hk = tl.minimum(h // group, k_heads - 1)
    if HAS_INDICES:
        row = tl.load(idx_ptr + b).to(tl.int64)
    else:
        row = b
    ks = tl.arange(0, BLOCK_K)
    k_ok = ks < k_dim
    vs = pid_v * BLOCK_V + tl.arange(0, BLOCK_V)
    v_ok = vs < v_dim
    kv_ok = k_ok[:, None] & v_ok[None, :]
    in_chunk = tl.arange(0, BLOCK_T)
    lo_ty = k_ptr.dtype.element_ty  # the products' operands are rounded to k's dtype
    dot_ty = tl.float32 if DOT_F32 else lo_ty
    if HAS_STATE:
        S = tl.load(state_ptr + row * ss_n + h * ss_h + ks[:, None] * ss_k + vs[None, :] * ss_v, mask=kv_ok,
                    other=0.0).to(tl.float32)
    else:
        S = tl.zeros((BLOCK_K, BLOCK_V), dtype=tl.float32)
    k_base = k_ptr + b * sk_b + hk * sk_h
    w_base = w_ptr + b * sw_b + h * sw_h
    u_base = u_ptr + b * su_b + h * su_h
    n_base = vnew_ptr + b * sn_b + h * sn_h
    h_base = h_ptr + b * sh_b + h * sh_h + ks[:, None] * sh_k + vs[None, :] * sh_v
    for c in range(0, n_chunks):
        t0 = c * chunk
        ts = t0 + in_chunk
        t_ok = (in_chunk < chunk) & (ts < tokens)
        ts64 = ts.to(tl.int64)
        S_lo = S.to(lo_ty)
        tl.store(h_base + c * sh_c, S_lo.to(h_ptr.dtype.element_ty), mask=kv_ok)
        w_blk = tl.load(w_base + ts64[:, None] * sw_t + ks[None, :] * sw_k, mask=t_ok[:, None] & k_ok[None, :],
                        other=0.0).to(lo_ty)
        u_blk = tl.load(u_base + ts64[:, None] * su_t + vs[None, :] * su_v, mask=t_ok[:, None] & v_ok[None, :],
                        other=0.0).to(tl.float32)
        if IEEE:
            wS = tl.dot(w_blk.to(dot_ty), S_lo.to(dot_ty), input_precision="ieee")
        else:
            wS = tl.dot(w_blk.to(dot_ty), S_lo.to(dot_ty))
        v_new = u_blk - wS
        tl.store(n_base + ts64[:, None] * sn_t + vs[None, :] * sn_v, v_new.to(vnew_ptr.dtype.element_ty),
                 mask=t_ok[:, None] & v_ok[None, :])
        if HAS_G:
            last = tl.minimum(t0 + chunk, tokens) - 1
            g_last = tl.load(g_ptr + b * sg_b + last.to(tl.int64) * sg_t + h * sg_h).to(tl.float32)
            g_blk = tl.load(g_ptr + b * sg_b + ts64 * sg_t + h * sg_h, mask=t_ok, other=0.0).to(tl.float32)
            diff = g_last - g_blk
            weight = tl.where(t_ok & (diff <= 0.0), tl.exp(tl.minimum(diff, 0.0)), 0.0)
            S = S * tl.exp(g_last)
        else:
            weight = tl.where(t_ok, 1.0, 0.0)
        v_scaled = (v_new * weight[:, None]).to(lo_ty)
        k_blk = tl.load(k_base + ts64[:, None] * sk_t + ks[None, :] * sk_k, mask=t_ok[:, None] & k_ok[None, :],
                        other=0.0).to(dot_ty)
        if IEEE:
            S += tl.dot(tl.trans(k_blk), v_scaled.to(dot_ty), input_precision="ieee")
        else:
            S += tl.dot(tl.trans(k_blk), v_scaled.to(dot_ty))
    tl.store(final_ptr + row * sf_n + h * sf_h + ks[:, None] * sf_k + vs[None, :] * sf_v,
             S.to(final_ptr.dtype.element_ty), mask=kv_ok)


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


# Triton's CPU interpreter multiplies bf16 dot operands wrongly (values of order 1e10 from N(0, 1) inputs):
# under it the rounded operands go through fp32 (the same values, exact products). Compiled kernels use the
# operands' own dtype on the tensor cores.
_INTERPRETED = type(_chunk_delta_state_kernel).__name__ == "InterpretedFunction"


def _check(k, w, u, g, initial_state, initial_state_indices, chunk_size):
    """One line naming what does not fit (a wrong call fails here, not inside the kernel)."""
    if k.dim() != 4 or w.dim() != 4 or u.dim() != 4:
        raise ValueError("k, w [batch, tokens, heads, k_dim] and u [batch, tokens, heads, v_dim] are 4-D")
    batch, tokens, k_heads, k_dim = k.shape
    heads = u.shape[2]
    if w.shape != (batch, tokens, heads, k_dim) or u.shape[:2] != (batch, tokens) or \
            (heads % k_heads and heads > k_heads):
        raise ValueError(f"k {tuple(k.shape)}, w {tuple(w.shape)}, u {tuple(u.shape)} do not fit")
    if g is not None and (g.shape != (batch, tokens, heads) or not g.is_floating_point()):
        raise ValueError(f"g {tuple(g.shape)} is not [batch, tokens, heads]")
    if chunk_size < 1 or not (k.is_floating_point() and w.is_floating_point() and u.is_floating_point()):
        raise ValueError("chunk_size >= 1 and floating k, w, u")
    if initial_state is None:
        if initial_state_indices is not None:
            raise ValueError("initial_state_indices index a pool; pass the pool as initial_state")
        return
    if initial_state.dim() != 4 or initial_state.shape[1:] != (heads, k_dim, u.shape[3]) or \
            not initial_state.is_floating_point():
        raise ValueError(f"initial_state {tuple(initial_state.shape)} is not [n, heads, k_dim, v_dim]")
    if initial_state_indices is None:
        if initial_state.shape[0] != batch:
            raise ValueError(f"initial_state holds {initial_state.shape[0]} sequences, not {batch}")
    elif initial_state_indices.shape != (batch,) or initial_state_indices.is_floating_point():
        raise ValueError(f"initial_state_indices {tuple(initial_state_indices.shape)} is not [batch] integers")


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


def launch_chunk_delta_state(k, w, u, g=None, initial_state=None, initial_state_indices=None, chunk_size=64,
                             inplace_final_state=False):
    _check(k, w, u, g, initial_state, initial_state_indices, chunk_size)
    batch, tokens, k_heads, k_dim = k.shape
    heads, v_dim = u.shape[2], u.shape[3]
    n_chunks = _cdiv(tokens, chunk_size)
    h_out = torch.empty((batch, n_chunks, heads, k_dim, v_dim), dtype=k.dtype, device=k.device)
    v_new = torch.empty(u.shape, dtype=u.dtype, device=u.device)
    if initial_state is None:
        final = torch.empty((batch, heads, k_dim, v_dim), dtype=torch.float32, device=k.device)
    elif inplace_final_state:
        final = initial_state
    else:
        final = torch.empty_like(initial_state)
        if initial_state_indices is not None and initial_state.numel():
            _copy_free_slots(initial_state, final, initial_state_indices)
    if batch * heads == 0 or k_dim * v_dim == 0:
        return h_out, v_new, final
    # Column slices compute the same values whatever their width; under the interpreter, whose cost is per
    # program and per operation, the widest slice (the transfer search runs this kernel as its own semantics)
    bv = min(128, _next_pow2(v_dim)) if _INTERPRETED else TUNABLES["BLOCK_V"]
    src = initial_state if initial_state is not None else final
    any_ptr = k  # a valid pointer for arguments a form does not use
    g_strides = g.stride() if g is not None else (0, 0, 0)
    grid = (_cdiv(v_dim, bv), batch * heads)
    _chunk_delta_state_kernel[grid](
        k, w, u, g if g is not None else any_ptr, src, final,
        initial_state_indices if initial_state_indices is not None else any_ptr, h_out, v_new,
        tokens, heads, max(heads // k_heads, 1), k_heads, k_dim, v_dim, chunk_size, n_chunks,
        *k.stride(), *w.stride(), *u.stride(), *g_strides, *src.stride(), *final.stride(), *h_out.stride(),
        *v_new.stride(),
        BLOCK_T=max(16, _next_pow2(chunk_size)), BLOCK_K=max(16, _next_pow2(k_dim)),
        BLOCK_V=bv, HAS_G=g is not None, HAS_STATE=initial_state is not None,
        HAS_INDICES=initial_state_indices is not None, IEEE=k.dtype == torch.float32, DOT_F32=_INTERPRETED,
        num_warps=TUNABLES["num_warps"], num_stages=TUNABLES["num_stages"],
    )
    return h_out, v_new, final


class Model(nn.Module):
    EXAMPLE_CALL = {"init": {"chunk_size": 64},
                    "forward": {"k": ["bfloat16", [1, 128, 2, 128]], "w": ["bfloat16", [1, 128, 4, 128]],
                                "u": ["bfloat16", [1, 128, 4, 128]], "g": ["float32", [1, 128, 4]],
                                "initial_state": ["float32", [1, 4, 128, 128]]}}

    def __init__(self, chunk_size: int = 64, inplace_final_state: bool = False):
        super().__init__()
        self.chunk_size = int(chunk_size)
        self.inplace_final_state = bool(inplace_final_state)

    def forward(self, k, w, u, g=None, initial_state=None, initial_state_indices=None):
        return launch_chunk_delta_state(k, w, u, g, initial_state, initial_state_indices, self.chunk_size,
                                        self.inplace_final_state)
