"""A varlen causal attention kernel over a paged KV cache written in Gluon (Triton's explicit-layout dialect), timed
against the KB's Triton kernel (kb/family/attention/attention_prefill_varlen.py) on workload shapes.

Why a second kernel: on batches of short sequences in 16-slot pages the KB kernel is latency-bound (~1.6 TB/s of
the minimum traffic, 0.3 of the roofline), and Triton's own pipelining cannot stream a chunk that spans several
pages (a TMA box is one block; 16-key chunks lost 13-19%, BENCHMARKS session 32). Here every K/V chunk of BLOCK_N
keys is BLOCK_N / page TMA copies into one shared-memory slot of a STAGES-deep ring, all signalling one mbarrier,
so the next chunks' pages are in flight while this chunk's two warpgroup MMAs run; Q is loaded while the first
chunks arrive. Each warpgroup (4 warps) owns 64 packed GQA rows of the tile (BLOCK_M = 16 * num_warps); with two,
a CTA barrier precedes each copy into a slot the other warpgroup may still be reading. Rows of V past the sequence's end are zeroed in shared memory
before they are used (a stale slot may hold NaN). With OVERLAP (3+ stages) the next chunk's Q K^T is issued
before this chunk's softmax and its P V left in flight into the next step, so the tensor cores and the softmax
overlap within a warpgroup. Work split and tile order are the KB kernel's (its tile-prefix and tile-map kernels
are reused).

A shape is `SEQSxLEN:HEADS/KV_HEADS:HEAD_DIM:pagedN` as in scripts/varlen_configs_device.py.

    PYTHONPATH=. python3 scripts/gluon_attention_device.py 1882x256:16/4:128:paged16 --grid BLOCK_N=32,64
    PYTHONPATH=. python3 scripts/gluon_attention_device.py 8x256:16/4:128:paged16 --compile-only   # CPU, sm_90
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia import hopper
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

LOG2E = 1.4426950408889634
GRID = {"BLOCK_N": [32, 64], "STAGES": [2, 3, 4], "num_warps": [4, 8], "OVERLAP": [0, 1]}
# a CTA-wide barrier: `barrier` in newer Gluon, `thread_barrier` in older releases
_cta_sync = gl.barrier if hasattr(gl, "barrier") else gl.thread_barrier
# newer Gluon gives an asynchronous MMA's result its own type, which a loop-carried accumulator must have on entry
_MMA_INIT = gl.constexpr(hasattr(hopper, "warpgroup_mma_init"))
_mma_init = getattr(hopper, "warpgroup_mma_init", None)


@gluon.jit
def _as_accumulator(acc):
    if _MMA_INIT:
        acc = _mma_init(acc)
    return acc


@gluon.jit
def _issue_chunk(k_desc, v_desc, k_ring, v_ring, bars, bt_ptr, b, s_bt, kv_len, kv_col, chunk,
                 STAGES: gl.constexpr, BLOCK_N: gl.constexpr, BOX: gl.constexpr, PAGE: gl.constexpr):
    """TMA copies of chunk `chunk`'s K and V rows into ring slot chunk % STAGES, one box of BOX keys at a time
    (a box never spans two blocks); boxes past the sequence's end read its first box instead (any valid block:
    their keys are masked and their V rows zeroed), so the slot always receives the bytes its barrier expects."""
    slot = chunk % STAGES
    bar = bars.index(slot)
    mbarrier.expect(bar, 2 * (BLOCK_N // BOX) * k_desc.block_type.nbytes)
    for j in gl.static_range(BLOCK_N // BOX):
        key = chunk * BLOCK_N + j * BOX
        key = gl.where(key < kv_len, key, 0)
        block = gl.load(bt_ptr + b * s_bt + key // PAGE)
        row = block * PAGE + key % PAGE
        tma.async_copy_global_to_shared(k_desc, [row, kv_col], bar, k_ring.index(slot).slice(j * BOX, BOX))
        tma.async_copy_global_to_shared(v_desc, [row, kv_col], bar, v_ring.index(slot).slice(j * BOX, BOX))


@gluon.jit
def _zero_rows_from(tile, first, BLOCK_N: gl.constexpr, HEAD: gl.constexpr, num_warps: gl.constexpr):
    """Rows first.. of a [BLOCK_N, HEAD] shared tile set to zero (then fenced for the MMA that reads it)."""
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [num_warps, 1], [1, 0])
    values = tile.load(layout)
    rows = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, layout))
    tile.store(gl.where((rows < first)[:, None], values, gl.zeros_like(values)))
    fence_async_shared()


@gluon.jit
def _online_softmax(s, keys, last_key, kv_len, qk_scale, m_i, l_i, CAUSAL: gl.constexpr):
    """One chunk of the online softmax: P (unnormalised), the rescale of what came before, and the running
    (max, sum) after keys `keys` whose scores are s; a key past the sequence, or past a row's last key when
    causal, is out."""
    visible = (keys < kv_len)[None, :]
    if CAUSAL:
        visible = visible & (keys[None, :] <= last_key[:, None])
    s = gl.where(visible, s * qk_scale, float("-inf"))
    m_new = gl.maximum(m_i, gl.max(s, axis=1))
    m_base = gl.where(m_new == float("-inf"), 0.0, m_new)  # a row with no key yet stays at zero weight
    alpha = gl.exp2(m_i - m_base)
    p = gl.exp2(s - m_base[:, None])
    return p, alpha, m_new, l_i * alpha + gl.sum(p, axis=1)


@gluon.jit
def _issue_pv(acc, p, alpha, v_tile, chunk, kv_len, BLOCK_N: gl.constexpr, HEAD: gl.constexpr,
              o_layout: gl.constexpr, p_layout: gl.constexpr, num_warps: gl.constexpr):
    """The accumulator rescaled by alpha, then P V of a chunk issued (not waited for); a chunk the sequence ends in
    has V's rows past the end zeroed first."""
    if (chunk + 1) * BLOCK_N > kv_len:
        _zero_rows_from(v_tile, kv_len - chunk * BLOCK_N, BLOCK_N, HEAD, num_warps)
    acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    return warpgroup_mma(gl.convert_layout(p.to(gl.bfloat16), p_layout), v_tile, acc, is_async=True)


@gluon.jit
def _paged_attention_kernel(q_ptr, out_ptr, k_desc, v_desc, bt_ptr, cu_ptr, used_ptr, prefix_ptr, map_ptr,
                            batch, group, tile_tokens, qk_scale, s_bt, sq_t, sq_h, so_t, so_h,
                            Q_LAYOUT: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                            HEAD: gl.constexpr, BOX: gl.constexpr, PAGE: gl.constexpr, STAGES: gl.constexpr,
                            CAUSAL: gl.constexpr, OVERLAP: gl.constexpr, num_warps: gl.constexpr):
    pid = gl.program_id(0)
    kv_head = gl.program_id(1)
    if pid < gl.load(prefix_ptr + batch):  # surplus programs of the grid's bound store nothing
        b = gl.load(map_ptr + pid)
        first_tile = gl.load(prefix_ptr + b)
        n_tiles = gl.load(prefix_ptr + b + 1) - first_tile
        q_start = gl.load(cu_ptr + b)
        q_len = gl.load(cu_ptr + b + 1) - q_start
        kv_len = gl.load(used_ptr + b)
        m_start = (n_tiles - 1 - (pid - first_tile)) * tile_tokens  # heaviest (last) tile first
        shift = kv_len - q_len  # causal, bottom-right aligned: query i sees keys j <= i + shift
        if CAUSAL:
            n_end = gl.minimum(kv_len, m_start + tile_tokens + shift)
        else:
            n_end = kv_len
        n_chunks = (n_end + BLOCK_N - 1) // BLOCK_N
        kv_col = kv_head * HEAD

        k_ring = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BLOCK_N, HEAD], k_desc.layout)
        v_ring = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BLOCK_N, HEAD], v_desc.layout)
        bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for ring_slot in gl.static_range(STAGES):
            mbarrier.init(bars.index(ring_slot), count=1)
        for first in gl.static_range(STAGES - 1):  # the first chunks in flight before Q is read
            if first < n_chunks:
                _issue_chunk(k_desc, v_desc, k_ring, v_ring, bars, bt_ptr, b, s_bt, kv_len, kv_col, first,
                             STAGES, BLOCK_N, BOX, PAGE)

        # Q: rows are (token, head of the KV head's group) pairs, loaded by pointers, kept in shared memory
        q_layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [num_warps, 1], [1, 0])
        rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, q_layout))
        cols = gl.arange(0, HEAD, layout=gl.SliceLayout(0, q_layout))
        tokens = m_start + rows // group
        rows_ok = (rows < tile_tokens * group) & (tokens < q_len)
        q_rows = (q_start + tokens).to(gl.int64) * sq_t + (kv_head * group + rows % group) * sq_h
        q = gl.load(q_ptr + q_rows[:, None] + cols[None, :], mask=rows_ok[:, None], other=0.0)
        q_smem = gl.allocate_shared_memory(gl.bfloat16, [BLOCK_M, HEAD], Q_LAYOUT, q)
        fence_async_shared()

        s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                           instr_shape=[16, BLOCK_N, 16])
        o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                           instr_shape=[16, HEAD, 16])
        p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
        s_rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, s_layout))
        s_cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        s_last = m_start + s_rows // group + shift  # the last key each row sees (causal)
        m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
        l_i = gl.zeros([BLOCK_M], gl.float32, layout=gl.SliceLayout(1, s_layout))
        acc = gl.zeros([BLOCK_M, HEAD], gl.float32, layout=o_layout)
        s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=s_layout)
        if OVERLAP:  # chunk i+1's Q K^T in flight while chunk i's softmax runs (STAGES >= 3)
            mbarrier.wait(bars.index(0), 0, pred=n_chunks > 0)
            s_cur = warpgroup_mma(q_smem, k_ring.index(0).permute((1, 0)), s_zero, use_acc=False, is_async=True)
            acc = _as_accumulator(acc)
            for chunk in range(n_chunks):
                slot = chunk % STAGES
                nxt = chunk + 1  # past the end: a discarded product of a slot no copy is writing
                mbarrier.wait(bars.index(nxt % STAGES), (nxt // STAGES) & 1, pred=nxt < n_chunks)
                s_next = warpgroup_mma(q_smem, k_ring.index(nxt % STAGES).permute((1, 0)), s_zero, use_acc=False,
                                       is_async=True)
                s, acc = warpgroup_mma_wait(num_outstanding=1, deps=(s_cur, acc))  # all but chunk i+1's Q K^T
                if num_warps > 4:
                    _cta_sync()
                ahead = chunk + STAGES - 1  # into chunk i-1's slot, whose P V just completed
                if ahead < n_chunks:
                    _issue_chunk(k_desc, v_desc, k_ring, v_ring, bars, bt_ptr, b, s_bt, kv_len, kv_col, ahead,
                                 STAGES, BLOCK_N, BOX, PAGE)
                p, alpha, m_i, l_i = _online_softmax(s, chunk * BLOCK_N + s_cols, s_last, kv_len, qk_scale, m_i,
                                                     l_i, CAUSAL)
                acc = _issue_pv(acc, p, alpha, v_ring.index(slot), chunk, kv_len, BLOCK_N, HEAD, o_layout, p_layout,
                                num_warps)
                s_cur = s_next
            acc, s_cur = warpgroup_mma_wait(num_outstanding=0, deps=(acc, s_cur))
        else:
            for chunk in range(n_chunks):
                ahead = chunk + STAGES - 1  # into the slot the previous chunk freed (its MMAs were waited for)
                if num_warps > 4:  # by every warpgroup: the other one may still be reading that slot
                    _cta_sync()
                if ahead < n_chunks:
                    _issue_chunk(k_desc, v_desc, k_ring, v_ring, bars, bt_ptr, b, s_bt, kv_len, kv_col, ahead,
                                 STAGES, BLOCK_N, BOX, PAGE)
                slot = chunk % STAGES
                mbarrier.wait(bars.index(slot), (chunk // STAGES) & 1)
                s = warpgroup_mma(q_smem, k_ring.index(slot).permute((1, 0)), s_zero, use_acc=False, is_async=True)
                s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))
                p, alpha, m_i, l_i = _online_softmax(s, chunk * BLOCK_N + s_cols, s_last, kv_len, qk_scale, m_i,
                                                     l_i, CAUSAL)
                acc = _issue_pv(acc, p, alpha, v_ring.index(slot), chunk, kv_len, BLOCK_N, HEAD, o_layout, p_layout,
                                num_warps)
                acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        for ring_slot in gl.static_range(STAGES):
            mbarrier.invalidate(bars.index(ring_slot))

        l_o = gl.convert_layout(gl.where(l_i == 0.0, 1.0, l_i), gl.SliceLayout(1, o_layout))
        # through Q's blocked layout (16-byte runs of a row a thread) rather than the MMA's 4-byte pairs
        o = gl.convert_layout((acc / l_o[:, None]).to(gl.bfloat16), q_layout)
        o_off = (q_start + tokens).to(gl.int64) * so_t + (kv_head * group + rows % group) * so_h
        gl.store(out_ptr + o_off[:, None] + cols[None, :], o, mask=rows_ok[:, None])


def _kb_kernel():
    from aka_tui.bench.problem.module_loading import import_file

    return import_file(ROOT / "kb/family/attention/attention_prefill_varlen.py", "varlen_kb_for_gluon")


def launch(q, k_cache, v_cache, cu, used, table, num_heads, num_kv_heads, scale, causal=True, BLOCK_N=64,
           STAGES=3, num_warps=4, OVERLAP=0, kb=None):
    """out [tokens, heads, head] of causal (bottom-right) GQA attention over a paged bf16 cache
    [blocks, page, kv_heads, head] with packed slots and heads; heads of 16..256 that are powers of two. Each
    warpgroup (4 warps) owns 64 of the tile's rows."""
    kb = kb or _kb_kernel()
    BLOCK_M = 16 * num_warps
    total, heads, dim = q.shape
    batch = cu.numel() - 1
    group = num_heads // num_kv_heads
    assert q.dtype == torch.bfloat16 and dim == triton.next_power_of_2(dim) and BLOCK_M >= group
    assert q.stride(-1) == 1 and k_cache.is_contiguous() and v_cache.is_contiguous()
    out = torch.empty_like(q)
    page = k_cache.shape[1]
    box = min(page, BLOCK_N)
    assert page % box == 0 and BLOCK_N % box == 0 and STAGES >= (3 if OVERLAP else 2)
    kv_layout = gl.NVMMASharedLayout.get_default_for([box, dim], gl.bfloat16)
    descs = []
    for cache in (k_cache, v_cache):
        flat = cache.view(-1, num_kv_heads * dim)
        descs.append(TensorDescriptor(flat, list(flat.shape), list(flat.stride()), [box, dim], kv_layout))
    tile_tokens = BLOCK_M // group
    prefix = torch.empty(batch + 1, dtype=torch.int32, device=q.device)
    kb._tile_prefix_kernel[(1,)](cu, prefix, batch, tile_tokens, CHUNK=1024, num_warps=4)
    grid = (-(-total // tile_tokens) + batch, num_kv_heads)
    tile_map = torch.empty(grid[0], dtype=torch.int32, device=q.device)
    kb._tile_map_kernel[(batch,)](prefix, tile_map, CHUNK=256, num_warps=4)
    _paged_attention_kernel[grid](
        q, out, descs[0], descs[1], table, cu, used, prefix, tile_map,
        batch, group, tile_tokens, scale * LOG2E, table.stride(0), q.stride(0), q.stride(1), out.stride(0),
        out.stride(1),
        Q_LAYOUT=gl.NVMMASharedLayout.get_default_for([BLOCK_M, dim], gl.bfloat16), BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N, HEAD=dim, BOX=box, PAGE=page, STAGES=STAGES, CAUSAL=bool(causal), OVERLAP=bool(OVERLAP),
        num_warps=num_warps)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="+")
    parser.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                        help=f"replace one of {', '.join(GRID)} (repeatable)")
    parser.add_argument("--rep", type=int, default=100, help="do_bench repetition time in ms")
    parser.add_argument("--compile-only", action="store_true", help="compile every configuration for sm_90 on "
                        "this machine (no GPU needed) and print its PTX size")
    args = parser.parse_args()
    for item in args.grid:
        key, _, values = item.partition("=")
        if key not in GRID or not values:
            raise SystemExit(f"--grid {item!r}: write KEY=V1,V2 with KEY one of {', '.join(GRID)}")
        GRID[key] = [int(v) for v in values.split(",")]
    from varlen_configs_device import inputs, parse_shape

    compiled = None
    if args.compile_only:
        from aka_tui.bench.evaluator.target_compile import install_compile_only

        compiled = install_compile_only(90)
    elif not torch.cuda.is_available():
        raise SystemExit("timing needs a GPU; on the CPU use --compile-only")
    device = "cuda" if compiled is None else "cpu"
    kb = _kb_kernel()
    configs = [dict(zip(GRID, values)) for values in itertools.product(*GRID.values())]
    worst = 0.0
    for text in args.shapes:
        shape = parse_shape(text)
        if not shape["page"]:
            raise SystemExit(f"{text}: this kernel reads a paged cache; add :pagedN")
        torch.manual_seed(0)
        (q, k, v, cu), extra = inputs(shape, "cuda" if device == "cuda" else "cpu")
        q, k, v = q.to(torch.bfloat16), k.to(torch.bfloat16), v.to(torch.bfloat16)
        heads, kv_heads, dim = int(shape["heads"]), int(shape["kv_heads"]), int(shape["dim"])
        scale = dim ** -0.5
        table, used = extra["block_table"], extra["seqused_k"]
        print(f"\n### {text} ({device})\n")
        if compiled is not None:
            for config in configs:
                compiled.clear()
                launch(q, k, v, cu, used, table, heads, kv_heads, scale, kb=kb, **config)
                print(config, dict(compiled).get("_paged_attention_kernel"))
            continue
        model = kb.Model(heads, kv_heads, dim, causal=True)
        want = model(q, k, v, cu, **extra)
        tokens, length = int(shape["seqs"]) * int(shape["len"]), int(shape["len"])
        flops = 4 * tokens * heads * dim * (length + 1) / 2
        rows = [("KB kernel (AUTO)", triton.testing.do_bench(lambda: model(q, k, v, cu, **extra), rep=args.rep),
                 0.0)]
        for config in configs:
            def call(config=config):
                return launch(q, k, v, cu, used, table, heads, kv_heads, scale, kb=kb, **config)
            try:
                err = (call().float() - want.float()).abs().max().item()
                ms = triton.testing.do_bench(call, rep=args.rep)
            except Exception as exc:  # a configuration that does not build: say why and go on
                print(f"{config}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                continue
            worst = max(worst, err)
            rows.append((" ".join(f"{k}={v}" for k, v in config.items()), ms, err))
        rows.sort(key=lambda r: r[1])
        print("| kernel | ms | TFLOP/s | max abs diff vs KB |")
        print("|---|---|---|---|")
        for name, ms, err in rows:
            print(f"| {name} | {ms:.4f} | {flops / ms / 1e9:.0f} | {err:.2e} |")
    if worst > 2e-2:
        print(f"outputs differ from the KB kernel's: max {worst:.2e}")
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
