"""Reference Triton kernel for sampling_top_k_top_p (top-k then top-p filtering, value-threshold tie rules).

One program per row; no sort. Both thresholds are found by a radix search over an order-preserving int32
key of the fp32 value (key = bits, or bits ^ 0x7FFFFFFF for negatives; -0.0 is folded to +0.0 first so
key order equals float order, ties included). Both thresholds are "the largest key t with f(t) >= target"
for a function f that only decreases as t grows, so the answer is always an element's value:

  top-k: f(t) = #{x : key(x) >= t},                              target = k     (skipped if k >= vocab)
  top-p: f(t) = sum exp(x - max) over survivors with key >= t,   target = p * Z (skipped if p >= 1)
         (Z = the same sum over all survivors; the first sorted position whose inclusive cumulative
         probability reaches p lies in the largest value group whose tail mass still reaches p.)

Each of the 32 / RADIX_BITS rounds fixes RADIX_BITS bits of the threshold: it evaluates f at the
2^RADIX_BITS candidate keys (prefix | digit << shift) in one pass over the row ([BLOCK_V, 2^RADIX_BITS]
compares) and keeps the largest digit that still meets the target. Then a final pass writes
x where key(x) >= max(t_k, t_p), else -inf; kept values are the loaded bits, unchanged.
Passes over the row: 1 (max) + 32/R (top-k) + 1 (Z) + 32/R (top-p) + 1 (write).
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"BLOCK_V": 1024, "RADIX_BITS": 4, "num_warps": 8}
SEARCH_SPACE = {
    "BLOCK_V": [256, 512, 1024, 2048, 4096],
    "RADIX_BITS": [1, 2, 4],
    "num_warps": [2, 4, 8, 16],
}


@triton.jit
def _ordered_key(x):
    """int32 key with the order of the fp32 values (x already has -0.0 folded to +0.0)."""
    bits = x.to(tl.int32, bitcast=True)
    return tl.where(bits < 0, bits ^ 0x7FFFFFFF, bits)


@triton.jit
def _sampling_top_k_top_p_kernel(
    logits_ptr, top_k_ptr, top_p_ptr, out_ptr, vocab, s_lb, s_lv, s_ob, s_ov,
    BLOCK_V: tl.constexpr, RADIX_BITS: tl.constexpr,
):
    NUM_PIVOTS: tl.constexpr = 1 << RADIX_BITS
    ROUNDS: tl.constexpr = 32 // RADIX_BITS
    row = tl.program_id(0).to(tl.int64)
    x_row = logits_ptr + row * s_lb
    o_row = out_ptr + row * s_ob
    offs0 = tl.arange(0, BLOCK_V)
    digits = tl.arange(0, NUM_PIVOTS).to(tl.int64)
    k = tl.maximum(tl.load(top_k_ptr + row), 1)  # the reference clamps k to [1, vocab]
    p = tl.load(top_p_ptr + row).to(tl.float32)

    # pass: row max (the top entry always survives top-k, so it is also the survivors' max)
    mx_vec = tl.full((BLOCK_V,), float("-inf"), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        offs = v0 + offs0
        x = tl.load(x_row + offs.to(tl.int64) * s_lv, mask=offs < vocab, other=float("-inf")).to(tl.float32)
        mx_vec = tl.maximum(mx_vec, x)
    mx = tl.max(mx_vec, axis=0)

    # top-k threshold key: largest t with count(key >= t) >= k
    key_k = -2147483648  # below every non-NaN key: keeps all
    if k < vocab:
        prefix = tl.zeros((), dtype=tl.int64)  # in unsigned key space [0, 2^32)
        for r in range(ROUNDS):
            shift = 32 - RADIX_BITS * (r + 1)
            piv = (prefix + (digits << shift) - 2147483648).to(tl.int32)
            cnt = tl.zeros((NUM_PIVOTS,), dtype=tl.int32)
            for v0 in range(0, vocab, BLOCK_V):
                offs = v0 + offs0
                ok = offs < vocab
                x = tl.load(x_row + offs.to(tl.int64) * s_lv, mask=ok, other=0.0).to(tl.float32)
                key = _ordered_key(tl.where(x == 0.0, 0.0, x))
                hit = (key[:, None] >= piv[None, :]) & ok[:, None]
                cnt += tl.sum(hit.to(tl.int32), axis=0)
            n_ok = tl.sum((cnt >= k).to(tl.int64), axis=0)
            prefix = prefix + ((tl.maximum(n_ok, 1) - 1) << shift)
        key_k = (prefix - 2147483648).to(tl.int32)

    # top-p threshold key over the survivors: largest t with mass(key >= t) >= p * Z
    key_p = -2147483648
    if p < 1.0:
        z_vec = tl.zeros((BLOCK_V,), dtype=tl.float32)
        for v0 in range(0, vocab, BLOCK_V):
            offs = v0 + offs0
            ok = offs < vocab
            x = tl.load(x_row + offs.to(tl.int64) * s_lv, mask=ok, other=0.0).to(tl.float32)
            key = _ordered_key(tl.where(x == 0.0, 0.0, x))
            z_vec += tl.where(ok & (key >= key_k), tl.exp(x - mx), 0.0)
        target = p * tl.sum(z_vec, axis=0)
        prefix = tl.zeros((), dtype=tl.int64)
        for r in range(ROUNDS):
            shift = 32 - RADIX_BITS * (r + 1)
            piv = (prefix + (digits << shift) - 2147483648).to(tl.int32)
            mass = tl.zeros((NUM_PIVOTS,), dtype=tl.float32)
            for v0 in range(0, vocab, BLOCK_V):
                offs = v0 + offs0
                ok = offs < vocab
                x = tl.load(x_row + offs.to(tl.int64) * s_lv, mask=ok, other=0.0).to(tl.float32)
                key = _ordered_key(tl.where(x == 0.0, 0.0, x))
                w = tl.where(ok & (key >= key_k), tl.exp(x - mx), 0.0)
                mass += tl.sum(tl.where(key[:, None] >= piv[None, :], w[:, None], 0.0), axis=0)
            n_ok = tl.sum((mass >= target).to(tl.int64), axis=0)
            prefix = prefix + ((tl.maximum(n_ok, 1) - 1) << shift)
        # the top group always survives (also for p <= 0): never above the row max
        key_p = tl.minimum((prefix - 2147483648).to(tl.int32), _ordered_key(tl.where(mx == 0.0, 0.0, mx)))

    thresh = tl.maximum(key_k, key_p)
    for v0 in range(0, vocab, BLOCK_V):
        offs = v0 + offs0
        ok = offs < vocab
        raw = tl.load(x_row + offs.to(tl.int64) * s_lv, mask=ok, other=0.0)
        x = raw.to(tl.float32)
        key = _ordered_key(tl.where(x == 0.0, 0.0, x))
        res = tl.where(key >= thresh, raw, float("-inf"))
        tl.store(o_row + offs.to(tl.int64) * s_ov, res.to(out_ptr.dtype.element_ty), mask=ok)


def launch_sampling_top_k_top_p(logits, top_k, top_p):
    batch, vocab = logits.shape
    out = torch.empty_like(logits)
    if batch == 0 or vocab == 0:
        return out
    _sampling_top_k_top_p_kernel[(batch,)](
        logits, top_k, top_p, out, vocab, *logits.stride(), *out.stride(),
        BLOCK_V=TUNABLES["BLOCK_V"], RADIX_BITS=TUNABLES["RADIX_BITS"], num_warps=TUNABLES["num_warps"],
    )
    return out


class Model(nn.Module):
    def __init__(self, vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, logits, top_k, top_p):
        return launch_sampling_top_k_top_p(logits, top_k, top_p)
