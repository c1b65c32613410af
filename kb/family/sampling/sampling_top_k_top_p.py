"""Reference Triton kernel for sampling_top_k_top_p (top-k then top-p filtering, value-threshold tie rules).

No sort. Both thresholds are "the largest value t with f(t) >= target" for an f that only decreases as t
grows: top-k f(t) = #{x >= t}, target k; top-p f(t) = sum exp(x - max) over the top-k survivors with
x >= t, target p * (the same sum over all survivors). The answer is always an element's value, tie groups
are kept whole, and the output is x where x >= max(t_k, t_p), else -inf (kept values are the loaded
bits). Values are compared through an order-preserving int32 key (bits, or -(bits & 0x7FFFFFFF) for
negatives; +-0 share key 0). Key >> 16 numbers the bf16 grid ("steps"); a lattice cell is TOPK_CELL or
TOPP_CELL steps, aligned the same way in every slice, so per-slice statistics at cell edges add up.

SPLIT_ROWS=1 (default): each row is cut into NS = cdiv(vocab, SLICE) slices, one program per (row, slice);
per-row results travel through small workspaces to the next launch, which recombines them (no program
waits on another, so any grid size is safe). Five launches:
  1 scan    (NS x rows) the slice in registers: slice max; top-k rows count the values at or above the
            lowest value of the TOPK_PIVOTS cells below the max, top-p-only rows sum exp(x - max) there
            (TOPP_PIVOTS cells) and in total. Rows with both filters off are copied here.
  2 select  (rows) shift each slice's pivots onto the row max's cell and add them: exact counts / masses at
            the row's pivots. The cell that holds t_k (or t_p) bounds the candidates [lo, hi); count and
            mass above hi are known exactly. With top-p after top-k every survivor is a candidate (hi = top).
  3 pass    (NS x rows) read the slice again: write x where key >= lo, else -inf, and compact the keys in
            [lo, hi) with their indices (int64 entries) to a workspace.
  4 search  (rows) exact search on the compacted keys: SEARCH_PIVOTS pivots per pass, the bracket snapped to
            the smallest / largest key inside it, early exit once one distinct key is left.
  5 pass    (NS x rows) write -inf at the compacted entries below the threshold.
EARLY_WRITE=1 (off by default: it raises launch 1's registers): a top-k row's slice lists its values at or
above the cell of its own k-th largest (that value bounds the row's t_k from below) when they are at most
CAND_CAP, writes the rest as -inf in launch 1, and launch 2 searches the lists directly when every slice
of the row has one; launch 3 then only fixes the listed entries.
Bytes (fp32, B rows of V): launch 1 reads 4BV, launch 3 reads 4BV and writes 4BV (1.5x the roofline's read
+ write), plus 8 bytes per candidate written, read by launches 4 and 5, and the -inf fix-ups. Per element,
launch 1 costs a compare and an add per top-k pivot (about 0.65 warp-instructions per value at 3 pivots),
or a compare, select and add per top-p pivot plus an exp. A threshold below the pivot window (values spread
over many more cells) makes every lower value a candidate: still exact, but slow. The candidate workspace is
sized for that worst case (8 bytes per logit); the other workspaces hold a few values per slice.

H200 (2026-11-30): 4.6 ms -> 0.43 ms on qwen_b256_v151936 against the one-program-per-row kernel. With 3
top-k pivots one of the three timing input sets ran 2.84 ms: a row whose max (18.25) sat in a higher cell
than the rest of the suite put its k = 1000 threshold (~7.4) below the window, so every lower value became a
candidate for one search program; 4 pivots reach one cell further and that set runs 0.435 ms (0.99x on the
other sets), hence TOPK_PIVOTS 4 (scripts/input_set_times.py times each input set alone). H200 (2026-12-03):
8 search pivots a pass instead of 16, 0.453 -> 0.407 ms on that shape (a pass's compare tile is its cost;
32 pivots and 512-1024 wide candidate blocks were slower still).

SPLIT_ROWS=0: the earlier design, one program per row, 2^RADIX_BITS-pivot radix search passes over the row:
1 (max) + 32/R (top-k) + 1 (Z) + 32/R (top-p) + 1 (write) passes, every one from HBM on large batches.
NaN logits are not handled by either path.
"""

import math

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {"SPLIT_ROWS": 1, "SLICE": 8192, "MIN_PROGRAMS": 528, "TOPK_CELL": 64, "TOPK_PIVOTS": 4,
            "TOPP_CELL": 32, "TOPP_PIVOTS": 12, "EARLY_WRITE": 0, "CAND_CAP": 512, "SEARCH_PIVOTS": 8,
            "SEARCH_BLOCK": 256, "num_warps": 8, "BLOCK_V": 1024, "RADIX_BITS": 4}
SEARCH_SPACE = {
    "SPLIT_ROWS": [0, 1],
    "SLICE": [2048, 4096, 8192, 16384],
    "MIN_PROGRAMS": [0, 264, 528, 1056],
    "TOPK_CELL": [16, 32, 64, 128],
    "TOPK_PIVOTS": [2, 3, 4, 6, 8],
    "TOPP_CELL": [16, 32, 64],
    "TOPP_PIVOTS": [4, 6, 8, 12, 16],
    "EARLY_WRITE": [0, 1],
    "CAND_CAP": [128, 256, 512, 1024, 2048],
    "SEARCH_PIVOTS": [4, 8, 16, 32],
    "SEARCH_BLOCK": [128, 256, 512],
    "num_warps": [2, 4, 8, 16],
    "BLOCK_V": [256, 512, 1024, 2048, 4096],
    "RADIX_BITS": [1, 2, 4],
}
# Tunables with no effect (the offline search skips them): the split-row path ignores the one-program-per-row
# kernel's chunk and digit width and vice versa; the candidate lists only exist with EARLY_WRITE.
INERT = {
    "BLOCK_V": {"SPLIT_ROWS": [1]},
    "RADIX_BITS": {"SPLIT_ROWS": [1]},
    "SLICE": {"SPLIT_ROWS": [0]},
    "MIN_PROGRAMS": {"SPLIT_ROWS": [0]},
    "TOPK_CELL": {"SPLIT_ROWS": [0]},
    "TOPP_CELL": {"SPLIT_ROWS": [0]},
    "TOPK_PIVOTS": {"SPLIT_ROWS": [0]},
    "TOPP_PIVOTS": {"SPLIT_ROWS": [0]},
    "EARLY_WRITE": {"SPLIT_ROWS": [0]},
    "CAND_CAP": {"EARLY_WRITE": [0]},
    "SEARCH_PIVOTS": {"SPLIT_ROWS": [0]},
    "SEARCH_BLOCK": {"SPLIT_ROWS": [0]},
}

_MIN_SLICE = 1024  # the launcher halves SLICE down to this to reach MIN_PROGRAMS programs (small batches)
_PASS_BLOCK = 2048  # launch 3 streams its slice in chunks of this many values (8 per thread at 8 warps)
_KEY_LO = tl.constexpr(-2147483647)  # below every key of a non-NaN float: "keep everything"
_KEY_HI = tl.constexpr(2147483647)
# row states (row_i[:, 0])
_COPIED = tl.constexpr(0)    # both filters off: launch 1 copied the row
_DONE = tl.constexpr(1)      # threshold found on the EARLY_WRITE lists in launch 2; launch 3 fixes the lists
_GENERAL = tl.constexpr(2)   # launch 3 writes and compacts the candidates, launch 4 searches them
_SEARCHED = tl.constexpr(3)  # threshold found in launch 4; launch 5 fixes the candidates
_MASS_SLACK = tl.constexpr(1e-4)  # relative widening of the bracket targets (fp32 sums are good to ~1e-6)


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


@triton.jit
def _sortable_key(x):
    """int32 key with the order of the fp32 values; +0.0 and -0.0 both map to 0; bf16 values have zero low 16 bits."""
    bits = x.to(tl.int32, bitcast=True)
    return tl.where(bits >= 0, bits, -(bits & 0x7FFFFFFF))


@triton.jit
def _key_value(key):
    """The fp32 value of a key (inverse of _sortable_key)."""
    bits = tl.where(key >= 0, key, (-key) | (-2147483648))
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _cell_key(cell, SHIFT: tl.constexpr):
    """Lowest key of lattice cell `cell`, clamped to the keys of -inf and +inf."""
    return tl.minimum(tl.maximum(cell.to(tl.int64) << SHIFT, -0x7F800000), 0x7F800000).to(tl.int32)


@triton.jit
def _pack(key, idx):
    """One int64 candidate entry: key in the high word, index in the row in the low word."""
    return (key.to(tl.int64) << 32) | (idx.to(tl.int64) & 0xFFFFFFFF)


@triton.jit
def _scan_kernel(
    logits_ptr, top_k_ptr, top_p_ptr, out_ptr, part_f_ptr, part_i_ptr, lat_ptr, list_ptr,
    vocab, num_slices, s_lb, s_lv, s_ob, s_ov,
    SLICE: tl.constexpr, SHIFT_K: tl.constexpr, NPK: tl.constexpr, SHIFT_P: tl.constexpr, NPM: tl.constexpr,
    NPW: tl.constexpr, CAP: tl.constexpr, EARLY_WRITE: tl.constexpr,
):
    row = tl.program_id(1).to(tl.int64)
    ws = row * num_slices + tl.program_id(0)
    offs = tl.program_id(0) * SLICE + tl.arange(0, SLICE)  # int32: vocab < 2^31
    valid = offs < vocab
    raw = tl.load(logits_ptr + row * s_lb + offs.to(tl.int64) * s_lv, mask=valid, other=float("-inf"))
    o_ptrs = out_ptr + row * s_ob + offs.to(tl.int64) * s_ov
    k = tl.maximum(tl.load(top_k_ptr + row), 1)
    p = tl.load(top_p_ptr + row).to(tl.float32)
    if (k >= vocab) & (p >= 1.0):
        tl.store(o_ptrs, raw, mask=valid)
    else:
        x = raw.to(tl.float32)
        m = tl.max(x, axis=0)
        # pivot j = lowest value of lattice cell base - j, base = the cell of the slice max
        jj = tl.arange(0, NPW)
        z = 0.0
        if k < vocab:  # counts at NPK pivots
            base = _sortable_key(m) >> SHIFT_K
            lat = tl.zeros((NPW,), tl.float32)
            for j in tl.static_range(NPK):
                piv = _key_value(_cell_key(base - j, SHIFT_K))
                lat = tl.where(jj == j, tl.sum((valid & (x >= piv)).to(tl.int32), axis=0).to(tl.float32), lat)
        else:  # top-p only: masses at NPM pivots, relative to the slice max
            base = _sortable_key(m) >> SHIFT_P
            w = tl.where(valid & (x != float("-inf")), tl.exp(x - m), 0.0)  # an all -inf slice: m = -inf
            z = tl.sum(w, axis=0)
            lat = tl.zeros((NPW,), tl.float32)
            for j in tl.static_range(NPM):
                piv = _key_value(_cell_key(base - j, SHIFT_P))
                lat = tl.where(jj == j, tl.sum(tl.where(x >= piv, w, 0.0), axis=0), lat)
        tl.store(lat_ptr + ws * NPW + jj, lat)
        tl.store(part_f_ptr + ws * 2, m)
        tl.store(part_f_ptr + ws * 2 + 1, z)
        tl.store(part_i_ptr + ws * 2, base)
        n_list = -1
        if EARLY_WRITE:
            if k < vocab:
                # the slice's k-th largest value is <= the row's t_k, so values below its cell are dropped
                j_loc = tl.min(tl.where((lat >= k) & (jj < NPK), jj, NPK), axis=0)
                n_loc = tl.sum(tl.where(jj == j_loc, lat, 0.0), axis=0).to(tl.int32)
                if (j_loc < NPK) & (n_loc <= CAP):
                    keep = valid & (x >= _key_value(_cell_key(base - j_loc, SHIFT_K)))
                    tl.store(o_ptrs, tl.where(keep, raw, float("-inf")).to(out_ptr.dtype.element_ty), mask=valid)
                    pos = tl.cumsum(keep.to(tl.int32), axis=0) - 1
                    tl.store(list_ptr + ws * CAP + pos, _pack(_sortable_key(x), offs), mask=keep)
                    n_list = n_loc
        tl.store(part_i_ptr + ws * 2 + 1, n_list)


@triton.jit
def _search_pass(key_row, n_row, stride, num_slices, lo, hi, piv, floor, mx,
                 COUNT: tl.constexpr, NP: tl.constexpr, CBLOCK: tl.constexpr, N_STRIDE: tl.constexpr):
    """One pass over the candidates (num_slices segments of n_row[s * N_STRIDE] packed entries, `stride` apart):
    f at each pivot (count, or sum of exp(value - mx) over keys >= floor) and the smallest / largest key in [lo, hi]."""
    if COUNT:
        acc = tl.zeros((NP,), tl.int32)
    else:
        acc = tl.zeros((NP,), tl.float32)
    c_min = tl.full((), _KEY_HI, tl.int32)
    c_max = tl.full((), _KEY_LO, tl.int32)
    for s in range(num_slices):
        n = tl.load(n_row + s * N_STRIDE)
        for c0 in range(0, n, CBLOCK):
            ci = c0 + tl.arange(0, CBLOCK)
            ok = ci < n
            key = (tl.load(key_row + s * stride + ci, mask=ok, other=0) >> 32).to(tl.int32)
            inside = ok & (key >= lo) & (key <= hi)
            c_min = tl.minimum(c_min, tl.min(tl.where(inside, key, _KEY_HI), axis=0))
            c_max = tl.maximum(c_max, tl.max(tl.where(inside, key, _KEY_LO), axis=0))
            ge = key[:, None] >= piv[None, :]
            if COUNT:
                acc += tl.sum((ge & ok[:, None]).to(tl.int32), axis=0)
            else:
                w = tl.where(ok & (key >= floor), tl.exp(_key_value(key) - mx), 0.0)
                acc += tl.sum(tl.where(ge, w[:, None], 0.0), axis=0)
    return acc, c_min, c_max


@triton.jit
def _search_threshold(key_row, n_row, stride, num_slices, lo, hi, target, floor, mx,
                      COUNT: tl.constexpr, NP: tl.constexpr, CBLOCK: tl.constexpr, N_STRIDE: tl.constexpr,
                      ROUNDS: tl.constexpr):
    """Largest key t in [lo, hi] with f(t) >= target, assuming f(lo) >= target (else lo)."""
    step = tl.arange(0, NP).to(tl.int64) + 1
    for _ in range(ROUNDS):
        if lo < hi:
            span = hi.to(tl.int64) - lo.to(tl.int64)
            piv = (lo.to(tl.int64) + (span * step + NP) // (NP + 1)).to(tl.int32)  # NP pivots in (lo, hi]
            acc, c_min, c_max = _search_pass(key_row, n_row, stride, num_slices, lo, hi, piv, floor, mx,
                                             COUNT, NP, CBLOCK, N_STRIDE)
            good = acc >= target
            new_lo = tl.max(tl.where(good, piv, lo), axis=0)
            new_hi = tl.min(tl.where(good, hi, piv - 1), axis=0)
            if c_min >= c_max:  # at most one distinct key left in [lo, hi]: it is the answer
                lo = tl.where(c_min == c_max, c_min, lo)
                hi = lo
            else:  # no key lies in [lo, c_min) or (c_max, hi]: f is flat there
                lo = tl.maximum(new_lo, c_min)
                hi = tl.minimum(new_hi, c_max)
    return lo


@triton.jit
def _exact_thresholds(key_row, n_row, stride, num_slices, k_on, k_rest, p_on, p, z_all, count_base, mass_base, mx,
                      NP: tl.constexpr, CBLOCK: tl.constexpr, N_STRIDE: tl.constexpr, ROUNDS: tl.constexpr):
    """max(t_k, t_p) from candidate keys that hold every value in the thresholds' range; count_base / mass_base
    describe the values above the candidates (for top-k rows with top-p they must be 0: all survivors listed)."""
    no_piv = tl.full((NP,), _KEY_HI, tl.int32)
    no_count, k_min, k_max = _search_pass(key_row, n_row, stride, num_slices, _KEY_LO, _KEY_HI, no_piv, _KEY_LO,
                                          mx, True, NP, CBLOCK, N_STRIDE)
    t_k = tl.full((), _KEY_LO, tl.int32)
    z_surv = z_all
    if k_on:
        t_k = _search_threshold(key_row, n_row, stride, num_slices, k_min, k_max, k_rest - count_base, _KEY_LO, mx,
                                True, NP, CBLOCK, N_STRIDE, ROUNDS)
        if p_on:
            at_tk = tl.full((NP,), t_k, tl.int32)
            z_cand, z_min, z_max = _search_pass(key_row, n_row, stride, num_slices, _KEY_LO, _KEY_LO, at_tk, t_k,
                                                mx, False, NP, CBLOCK, N_STRIDE)
            z_surv = mass_base + tl.max(z_cand, axis=0)
    t_p = tl.full((), _KEY_LO, tl.int32)
    if p_on:
        t_p = _search_threshold(key_row, n_row, stride, num_slices, tl.maximum(k_min, t_k), k_max,
                                p * z_surv - mass_base, t_k, mx, False, NP, CBLOCK, N_STRIDE, ROUNDS)
    return tl.maximum(t_k, t_p)


@triton.jit
def _select_kernel(
    top_k_ptr, top_p_ptr, part_f_ptr, part_i_ptr, lat_ptr, list_ptr, row_i_ptr, row_f_ptr, vocab, num_slices,
    SHIFT_K: tl.constexpr, NPK: tl.constexpr, SHIFT_P: tl.constexpr, NPM: tl.constexpr, NPW: tl.constexpr,
    CAP: tl.constexpr, SB: tl.constexpr, SNP: tl.constexpr, CBLOCK: tl.constexpr, ROUNDS: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    k = tl.maximum(tl.load(top_k_ptr + row), 1)
    p = tl.load(top_p_ptr + row).to(tl.float32)
    k_on = k < vocab
    p_on = p < 1.0
    if k_on | p_on:
        sl = tl.arange(0, SB)
        m_vec = tl.full((SB,), float("-inf"), tl.float32)
        b_vec = tl.full((SB,), _KEY_LO, tl.int32)
        n_min = tl.full((SB,), _KEY_HI, tl.int32)
        for s0 in range(0, num_slices, SB):
            ok = s0 + sl < num_slices
            ws = row * num_slices + s0 + sl
            m_vec = tl.maximum(m_vec, tl.load(part_f_ptr + ws * 2, mask=ok, other=float("-inf")))
            b_vec = tl.maximum(b_vec, tl.load(part_i_ptr + ws * 2, mask=ok, other=_KEY_LO))
            n_min = tl.minimum(n_min, tl.load(part_i_ptr + ws * 2 + 1, mask=ok, other=_KEY_HI))
        mx = tl.max(m_vec, axis=0)
        base = tl.max(b_vec, axis=0)
        if k_on & (tl.min(n_min, axis=0) >= 0):  # n_list is -1 without EARLY_WRITE
            # every slice listed its values at or above its own k-th largest: t_k and t_p are exact on the lists
            thresh = _exact_thresholds(list_ptr + row * num_slices * CAP, part_i_ptr + row * num_slices * 2 + 1,
                                       CAP, num_slices, k_on, k, p_on, p, tl.zeros((), tl.float32),
                                       tl.zeros((), tl.int32), tl.zeros((), tl.float32), mx, SNP, CBLOCK, 2, ROUNDS)
            tl.store(row_i_ptr + row * 8, _DONE)
            tl.store(row_i_ptr + row * 8 + 1, thresh)
        else:
            # the row's exact counts (top-k) or masses (top-p only) at its pivots j = 0 .. NP-1 (lowest values of
            # cells base - j); slice s holds row pivot j as its pivot j - (base - base_s), or has nothing there
            jj = tl.arange(0, NPW)
            lat = tl.zeros((NPW,), tl.float32)
            z_vec = tl.zeros((SB,), tl.float32)
            for s0 in range(0, num_slices, SB):
                ok = s0 + sl < num_slices
                ws = row * num_slices + s0 + sl
                src = jj[None, :] - (base - tl.load(part_i_ptr + ws * 2, mask=ok, other=0))[:, None]
                part = tl.load(lat_ptr + (ws * NPW)[:, None] + src, mask=ok[:, None] & (src >= 0), other=0.0)
                if k_on:
                    lat += tl.sum(part, axis=0)
                else:
                    scale = tl.where(ok, tl.exp(tl.load(part_f_ptr + ws * 2, mask=ok, other=0.0) - mx), 0.0)
                    z_vec += scale * tl.load(part_f_ptr + ws * 2 + 1, mask=ok, other=0.0)
                    lat += tl.sum(part * scale[:, None], axis=0)
            z_all = tl.sum(z_vec, axis=0)
            # candidates: keys in [lo, hi); above hi: count_above values with mass_above (exact)
            lo = tl.full((), _KEY_LO, tl.int32)
            hi = tl.full((), _KEY_HI, tl.int32)
            count_above = tl.zeros((), tl.int32)
            mass_above = tl.zeros((), tl.float32)
            if k_on:
                j_k = tl.min(tl.where((lat >= k) & (jj < NPK), jj, NPK), axis=0)
                if j_k < NPK:
                    lo = _cell_key(base - j_k, SHIFT_K)
                if p >= 1.0:  # with top-p, every survivor must be a candidate
                    if j_k > 0:
                        hi = _cell_key(base - j_k + 1, SHIFT_K)
                        count_above = tl.sum(tl.where(jj == j_k - 1, lat, 0.0), axis=0).to(tl.int32)
            else:
                # first pivot whose mass reaches p * Z, widened by a relative slack for fp32 rounding
                j_lo = tl.min(tl.where((lat >= p * z_all * (1.0 - _MASS_SLACK)) & (jj < NPM), jj, NPM), axis=0)
                j_hi = tl.min(tl.where((lat >= p * z_all * (1.0 + _MASS_SLACK)) & (jj < NPM), jj, NPM), axis=0)
                if j_hi < NPM:
                    lo = _cell_key(base - j_hi, SHIFT_P)
                if j_lo > 0:
                    hi = _cell_key(base - j_lo + 1, SHIFT_P)
                    mass_above = tl.sum(tl.where(jj == j_lo - 1, lat, 0.0), axis=0)
            tl.store(row_i_ptr + row * 8, _GENERAL)
            tl.store(row_i_ptr + row * 8 + 2, lo)
            tl.store(row_i_ptr + row * 8 + 3, hi)
            tl.store(row_i_ptr + row * 8 + 4, count_above)
            tl.store(row_f_ptr + row * 4, mx)
            tl.store(row_f_ptr + row * 4 + 1, z_all)
            tl.store(row_f_ptr + row * 4 + 2, mass_above)
    else:
        tl.store(row_i_ptr + row * 8, _COPIED)


@triton.jit
def _drop_listed(o_row, s_ov, seg, n, below, LBLOCK: tl.constexpr):
    """Write -inf at the listed positions (packed entries seg[0:n]) whose key is below `below`."""
    for c0 in range(0, n, LBLOCK):
        li = c0 + tl.arange(0, LBLOCK)
        lm = li < n
        entry = tl.load(seg + li, mask=lm, other=0)
        ninf = tl.full((LBLOCK,), float("-inf"), o_row.dtype.element_ty)
        below_mask = lm & ((entry >> 32).to(tl.int32) < below)
        tl.store(o_row + entry.to(tl.int32).to(tl.int64) * s_ov, ninf, mask=below_mask)


@triton.jit
def _pass_kernel(
    logits_ptr, out_ptr, part_i_ptr, list_ptr, row_i_ptr, cand_ptr, cand_n_ptr,
    vocab, num_slices, s_lb, s_lv, s_ob, s_ov,
    SLICE: tl.constexpr, CAP: tl.constexpr, EARLY_WRITE: tl.constexpr, LBLOCK: tl.constexpr, PBLOCK: tl.constexpr,
    PHASE: tl.constexpr,
):
    row = tl.program_id(1).to(tl.int64)
    ws = row * num_slices + tl.program_id(0)
    o_row = out_ptr + row * s_ob
    state = tl.load(row_i_ptr + row * 8)
    if PHASE == 1:
        if state == _SEARCHED:  # fix the compacted candidates
            _drop_listed(o_row, s_ov, cand_ptr + ws * SLICE, tl.load(cand_n_ptr + ws),
                         tl.load(row_i_ptr + row * 8 + 1), LBLOCK)
    elif state == _DONE:  # every slice is listed; launch 1 wrote the rest
        _drop_listed(o_row, s_ov, list_ptr + ws * CAP, tl.load(part_i_ptr + ws * 2 + 1),
                     tl.load(row_i_ptr + row * 8 + 1), LBLOCK)
    elif state == _GENERAL:
        lo = tl.load(row_i_ptr + row * 8 + 2)
        hi = tl.load(row_i_ptr + row * 8 + 3)
        n_list = -1
        if EARLY_WRITE:
            n_list = tl.load(part_i_ptr + ws * 2 + 1)
        if n_list >= 0:  # listed slice (launch 1 wrote it): drop listed keys below lo, compact [lo, hi)
            _drop_listed(o_row, s_ov, list_ptr + ws * CAP, n_list, lo, LBLOCK)
            n_cand = tl.zeros((), tl.int32)
            for c0 in range(0, n_list, LBLOCK):
                li = c0 + tl.arange(0, LBLOCK)
                lm = li < n_list
                entry = tl.load(list_ptr + ws * CAP + li, mask=lm, other=0)
                key = (entry >> 32).to(tl.int32)
                cand = lm & (key >= lo) & (key < hi)
                pos = n_cand + tl.cumsum(cand.to(tl.int32), axis=0) - 1
                tl.store(cand_ptr + ws * SLICE + pos, entry, mask=cand)
                n_cand += tl.sum(cand.to(tl.int32), axis=0)
        else:  # write the slice: keys >= hi kept, < lo dropped, [lo, hi) kept for now and compacted
            n_cand = tl.zeros((), tl.int32)
            x_row = logits_ptr + row * s_lb
            offs = tl.program_id(0) * SLICE + tl.arange(0, PBLOCK)
            raw_next = tl.load(x_row + offs.to(tl.int64) * s_lv, mask=offs < vocab, other=float("-inf"))
            for c0 in range(0, SLICE, PBLOCK):
                offs = tl.program_id(0) * SLICE + c0 + tl.arange(0, PBLOCK)
                valid = offs < vocab
                raw = raw_next
                nxt = offs + PBLOCK  # the next chunk's load is in flight while this one is processed
                raw_next = tl.load(x_row + nxt.to(tl.int64) * s_lv, mask=(nxt < vocab) & (c0 + PBLOCK < SLICE),
                                   other=float("-inf"))
                key = _sortable_key(raw.to(tl.float32))
                tl.store(o_row + offs.to(tl.int64) * s_ov,
                         tl.where(key >= lo, raw, float("-inf")).to(out_ptr.dtype.element_ty), mask=valid)
                cand = valid & (key >= lo) & (key < hi)
                pos = n_cand + tl.cumsum(cand.to(tl.int32), axis=0) - 1
                tl.store(cand_ptr + ws * SLICE + pos, _pack(key, offs), mask=cand)
                n_cand += tl.sum(cand.to(tl.int32), axis=0)
        tl.store(cand_n_ptr + ws, n_cand)


@triton.jit
def _search_kernel(
    top_k_ptr, top_p_ptr, row_i_ptr, row_f_ptr, cand_ptr, cand_n_ptr, vocab, num_slices,
    SLICE: tl.constexpr, SNP: tl.constexpr, CBLOCK: tl.constexpr, ROUNDS: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    if tl.load(row_i_ptr + row * 8) == _GENERAL:
        k = tl.maximum(tl.load(top_k_ptr + row), 1)
        p = tl.load(top_p_ptr + row).to(tl.float32)
        thresh = _exact_thresholds(cand_ptr + row * num_slices * SLICE, cand_n_ptr + row * num_slices, SLICE,
                                   num_slices, k < vocab, k, p < 1.0, p, tl.load(row_f_ptr + row * 4 + 1),
                                   tl.load(row_i_ptr + row * 8 + 4), tl.load(row_f_ptr + row * 4 + 2),
                                   tl.load(row_f_ptr + row * 4), SNP, CBLOCK, 1, ROUNDS)
        tl.store(row_i_ptr + row * 8 + 1, thresh)
        tl.store(row_i_ptr + row * 8, _SEARCHED)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(n: int) -> int:
    """triton.next_power_of_2 in plain Python: Triton's host helpers cost microseconds a call."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def _split_layout(batch: int, vocab: int, cfg: dict) -> tuple[int, int, int]:
    """(SLICE, slices per row, num_warps) for a shape: halve the slice until the grid has MIN_PROGRAMS programs."""
    slice_len = min(cfg["SLICE"], max(_next_pow2(vocab), _MIN_SLICE))
    while slice_len > _MIN_SLICE and batch * _cdiv(vocab, slice_len) < cfg["MIN_PROGRAMS"]:
        slice_len //= 2
    warps = max(1, min(cfg["num_warps"], slice_len // 256))  # at least 8 values per thread
    return slice_len, _cdiv(vocab, slice_len), warps


def _launch_split_rows(logits, top_k, top_p, out, cfg: dict) -> None:
    batch, vocab = logits.shape
    slice_len, num_slices, warps = _split_layout(batch, vocab, cfg)
    npk, npm = cfg["TOPK_PIVOTS"], cfg["TOPP_PIVOTS"]
    npw = _next_pow2(max(npk, npm))
    cap, early = min(cfg["CAND_CAP"], slice_len), bool(cfg["EARLY_WRITE"])
    lattice = dict(SHIFT_K=16 + int(math.log2(cfg["TOPK_CELL"])), NPK=npk,
                   SHIFT_P=16 + int(math.log2(cfg["TOPP_CELL"])), NPM=npm, NPW=npw)
    snp, cblock = cfg["SEARCH_PIVOTS"], cfg["SEARCH_BLOCK"]
    rounds = 2 + math.ceil(32 / math.log2(snp + 1))
    dev, n_ws = logits.device, batch * num_slices
    part_f = torch.empty((n_ws, 2), dtype=torch.float32, device=dev)
    part_i = torch.empty((n_ws, 2), dtype=torch.int32, device=dev)
    lat = torch.empty((n_ws, npw), dtype=torch.float32, device=dev)
    lists = torch.empty((n_ws, cap) if early else (1,), dtype=torch.int64, device=dev)
    row_i = torch.empty((batch, 8), dtype=torch.int32, device=dev)
    row_f = torch.empty((batch, 4), dtype=torch.float32, device=dev)
    cand = torch.empty((n_ws, slice_len), dtype=torch.int64, device=dev)
    cand_n = torch.empty((n_ws,), dtype=torch.int32, device=dev)
    strides = (*logits.stride(), *out.stride())
    grid = (num_slices, batch)  # a row's slices are neighbours in launch order
    _scan_kernel[grid](logits, top_k, top_p, out, part_f, part_i, lat, lists, vocab, num_slices, *strides,
                       SLICE=slice_len, CAP=cap, EARLY_WRITE=early, num_warps=warps, **lattice)
    _select_kernel[(batch,)](top_k, top_p, part_f, part_i, lat, lists, row_i, row_f, vocab, num_slices,
                             CAP=cap, SB=8, SNP=snp, CBLOCK=cblock, ROUNDS=rounds, num_warps=8, **lattice)
    pass_args = (logits, out, part_i, lists, row_i, cand, cand_n, vocab, num_slices, *strides)
    pass_meta = dict(SLICE=slice_len, CAP=cap, EARLY_WRITE=early, LBLOCK=256, PBLOCK=min(slice_len, _PASS_BLOCK),
                     num_warps=warps)
    _pass_kernel[grid](*pass_args, PHASE=0, **pass_meta)
    _search_kernel[(batch,)](top_k, top_p, row_i, row_f, cand, cand_n, vocab, num_slices,
                             SLICE=slice_len, SNP=snp, CBLOCK=cblock, ROUNDS=rounds, num_warps=8)
    _pass_kernel[grid](*pass_args, PHASE=1, **pass_meta)


def launch_sampling_top_k_top_p(logits, top_k, top_p, cfg: dict | None = None):
    cfg = TUNABLES if cfg is None else cfg
    batch, vocab = logits.shape
    out = logits.new_empty((batch, vocab))
    if batch == 0 or vocab == 0:
        return out
    if cfg["SPLIT_ROWS"]:
        _launch_split_rows(logits, top_k, top_p, out, cfg)
    else:
        _sampling_top_k_top_p_kernel[(batch,)](
            logits, top_k, top_p, out, vocab, *logits.stride(), *out.stride(),
            BLOCK_V=cfg["BLOCK_V"], RADIX_BITS=cfg["RADIX_BITS"], num_warps=cfg["num_warps"],
        )
    return out


@triton.jit
def _whole_row_p_kernel(x_ptr, y_ptr, p_ptr, out_ptr, vocab, s_xb, s_xv, s_yb, s_yv, BLOCK: tl.constexpr):
    """Per row: p * Z_all / Z_surv, the top-p fraction of the top-k survivors' mass (y: x or -inf) that equals p
    of the whole row's softmax mass (one online-softmax pass over x and y); p >= 1 stays 1 (off)."""
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    m = tl.full((), float("-inf"), tl.float32)
    z_all = tl.zeros((), tl.float32)
    z_surv = tl.zeros((), tl.float32)
    for v0 in range(0, vocab, BLOCK):
        o = (v0 + offs).to(tl.int64)
        ok = o < vocab
        x = tl.load(x_ptr + row * s_xb + o * s_xv, mask=ok, other=float("-inf")).to(tl.float32)
        y = tl.load(y_ptr + row * s_yb + o * s_yv, mask=ok, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a block of -inf so far: nothing to add yet
        scale = tl.exp(m - m_safe)
        z_all = z_all * scale + tl.sum(tl.exp(x - m_safe), axis=0)
        z_surv = z_surv * scale + tl.sum(tl.exp(y - m_safe), axis=0)
        m = m_new
    p = tl.load(p_ptr + row).to(tl.float32)
    tl.store(out_ptr + row, tl.where(p >= 1.0, 1.0, p * z_all / z_surv))


class Model(nn.Module):
    """Per-row top_k / top_p tensors, or one setting for every row from the init arguments (None: that filter
    off, k = vocab or p = 1); the per-row tensors of a setting are made once per batch size and device.
    renormalize=False: top-p measures the whole row's softmax, not the top-k survivors' (the filter runs twice:
    top-k alone, to weigh the survivors, then both filters with p scaled by Z_all / Z_surv per row)."""

    def __init__(self, vocab_size: int | None = None, top_k: int | None = None, top_p: float | None = None,
                 renormalize: bool = True):
        super().__init__()
        self.vocab_size = vocab_size
        self.top_k = top_k
        self.top_p = top_p
        self.renormalize = bool(renormalize)
        self._settings: dict = {}

    def _rows(self, logits, name: str, value):
        batch, vocab = logits.shape
        key = (name, value, batch, vocab, logits.device)
        rows = self._settings.get(key)
        if rows is None:
            if name == "top_k":
                rows = torch.full((batch,), vocab if value is None else value, dtype=torch.int32, device=logits.device)
            else:
                rows = torch.full((batch,), 1.0 if value is None else value, dtype=torch.float32, device=logits.device)
            self._settings[key] = rows
        return rows

    def forward(self, logits, top_k=None, top_p=None):
        if top_k is None:
            top_k = self._rows(logits, "top_k", self.top_k)
        if top_p is None:
            top_p = self._rows(logits, "top_p", self.top_p)
        if self.renormalize:
            return launch_sampling_top_k_top_p(logits, top_k, top_p)
        survivors = launch_sampling_top_k_top_p(logits, top_k, self._rows(logits, "top_p", None))
        scaled = torch.empty(logits.shape[0], dtype=torch.float32, device=logits.device)
        if logits.shape[0] and logits.shape[1]:
            _whole_row_p_kernel[(logits.shape[0],)](logits, survivors, top_p, scaled, logits.shape[1],
                                                    *logits.stride(), *survivors.stride(), BLOCK=1024, num_warps=4)
        return launch_sampling_top_k_top_p(logits, top_k, scaled)
