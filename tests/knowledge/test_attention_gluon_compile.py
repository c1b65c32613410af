"""The Gluon path of the KB's varlen attention kernel compiles for sm_90 on this machine in each of its forms:
TMA copies per page into a ring of shared-memory slots, two warpgroup MMAs a chunk, Q kept in shared memory; with
OVERLAP the next chunk's Q K^T in flight during the softmax; with BT_AHEAD a chunk's block ids read one chunk
early; bf16 and fp16; a head split into two power-of-two parts (72 as 64 + 16, 192 as 128 + 64); the persistent form
(one chunk stream over a program's work items); FULL (unmasked chunks without masks) and LAZY (the accumulator
rescaled only when a running max grows by more than a factor 256), plain, with OVERLAP and with a split head;
keys in parts merged by a second kernel (plain and with a split head); WS (one warp issues the copies while the
kernel's warps attend) at two ring depths and with a split head; a batch of one sequence, whose tiles the kernel counts itself."""

from __future__ import annotations

from tests.conftest import REPO
from tests.knowledge.hopper_compile import run_compile_script

_COMPILE = """
import sys
import torch
sys.path.insert(0, sys.argv[1])
from aka_tui.bench.evaluator.target_compile import install_compile_only
compiled = install_compile_only(90)
import gluon_attention_device as g
seqs, length, page, heads, kv_heads, dim = 3, 100, 16, 8, 2, 64
blocks = seqs * -(-length // page)
cu = torch.arange(0, seqs * length + 1, length, dtype=torch.int32)
table = torch.randperm(blocks).view(seqs, -1).to(torch.int32)
used = torch.full((seqs,), length, dtype=torch.int32)
for dtype, overlap, ahead in ((torch.bfloat16, 0, 0), (torch.bfloat16, 1, 0), (torch.bfloat16, 0, 1),
                              (torch.float16, 0, 0)):
    q = torch.randn(seqs * length, heads, dim, dtype=dtype)
    k = torch.randn(blocks, page, kv_heads, dim, dtype=dtype)
    compiled.clear()
    g.launch(q, k, k, cu, used, table, heads, kv_heads, dim ** -0.5, BLOCK_N=32, STAGES=3, OVERLAP=overlap,
             BT_AHEAD=ahead)
    print(dict(compiled)["_paged_attention_gluon_kernel"])
for heads, kv_heads, dim in ((16, 16, 72), (16, 2, 192)):  # a head split into two parts
    qs = torch.randn(seqs * length, heads, dim, dtype=torch.bfloat16)
    ks = torch.randn(blocks, page, kv_heads, dim, dtype=torch.bfloat16)
    compiled.clear()
    g.launch(qs, ks, ks, cu, used, table, heads, kv_heads, dim ** -0.5, BLOCK_N=32, STAGES=2, SPLIT=1, MAXNREG=128)
    print(dict(compiled)["_paged_attention_gluon_kernel"])
for warps, maxnreg in ((4, 0), (8, 128)):  # the persistent form
    compiled.clear()
    g.launch(q, k, k, cu, used, table, heads, kv_heads, dim ** -0.5, BLOCK_N=32, STAGES=2, num_warps=warps,
             PERSIST=3, MAXNREG=maxnreg)
    print(dict(compiled)["_paged_attention_gluon_persistent_kernel"])
for full, lazy, overlap, split in ((1, 0, 0, 0), (0, 1, 0, 0), (1, 1, 0, 0), (1, 1, 1, 0), (1, 1, 0, 1)):
    h, kvh, d = (16, 16, 72) if split else (8, 2, 64)
    qf = torch.randn(seqs * length, h, d, dtype=torch.bfloat16)
    kf = torch.randn(blocks, page, kvh, d, dtype=torch.bfloat16)
    compiled.clear()
    g.launch(qf, kf, kf, cu, used, table, h, kvh, d ** -0.5, BLOCK_N=32, STAGES=3, OVERLAP=overlap, SPLIT=split,
             MAXNREG=128, FULL=full, LAZY=lazy)
    print(dict(compiled)["_paged_attention_gluon_kernel"])
for split in (0, 1):  # keys in parts, merged by a second kernel
    h, kvh, d = (16, 16, 72) if split else (8, 2, 64)
    qp = torch.randn(seqs * length, h, d, dtype=torch.bfloat16)
    kp = torch.randn(blocks, page, kvh, d, dtype=torch.bfloat16)
    compiled.clear()
    g.launch(qp, kp, kp, cu, used, table, h, kvh, d ** -0.5, BLOCK_N=32, STAGES=2, SPLIT=split, MAXNREG=128,
             FULL=1, PARTS=2)
    print(dict(compiled)["_paged_attention_gluon_kernel"], dict(compiled).get("_parts_combine_kernel", 0))
for stages in (2, 4):  # warp-specialised: a copy warp and the attending warps
    compiled.clear()
    g.launch(q, k, k, cu, used, table, heads, kv_heads, dim ** -0.5, BLOCK_N=32, STAGES=stages, MAXNREG=128,
             FULL=1, WS=1)
    print(dict(compiled)["_paged_attention_gluon_kernel"])
compiled.clear()  # (q, k: the first loop's last, fp16) three sequences: the prefix kernel runs first
g.launch(q, k, k, cu, used, table, heads, kv_heads, dim ** -0.5, BLOCK_N=32, STAGES=3)
many = int("_tile_prefix_map_kernel" in dict(compiled))
compiled.clear()  # a batch of one sequence: the kernel counts its own tiles, no prefix kernel
g.launch(q[:length], k, k, cu[:2], used[:1], table[:1], heads, kv_heads, dim ** -0.5, BLOCK_N=32, STAGES=3)
print(dict(compiled)["_paged_attention_gluon_kernel"], many, int("_tile_prefix_map_kernel" in dict(compiled)))
for ws in (0, 1):  # a split head (64 + 16) without and with the copy warp
    qw = torch.randn(seqs * length, 16, 72, dtype=torch.bfloat16)
    kw = torch.randn(blocks, page, 16, 72, dtype=torch.bfloat16)
    compiled.clear()
    g.launch(qw, kw, kw, cu, used, table, 16, 16, 72 ** -0.5, BLOCK_N=64, STAGES=2, SPLIT=1, MAXNREG=128, FULL=1,
             WS=ws)
    print(dict(compiled)["_paged_attention_gluon_kernel"])
"""


def test_gluon_paged_attention_compiles_for_hopper() -> None:
    run = run_compile_script(_COMPILE, str(REPO / "scripts"))
    lines = [int(n) for n in run.stdout.split()]
    assert len(lines) == 24 and min(lines[:20] + lines[22:]) > 100, run.stdout
    assert len(set(lines[:3])) == 3, run.stdout  # OVERLAP and BT_AHEAD: each its own loop
    assert lines[4] > lines[0] and lines[5] > lines[0], run.stdout  # the split head's second rings and MMAs
    assert lines[6] != lines[0], run.stdout  # the persistent form is its own kernel
    full, lazy, both = lines[8:11]
    assert len({full, lazy, both, lines[0]}) == 4, run.stdout  # each its own code
    assert both > full and both > lazy, run.stdout  # the growth test and the skipped rescale, beside both softmaxes
    parts, combine, parts_split, combine_split = lines[13:17]
    assert not {parts, parts_split} & set(lines[:13]), run.stdout  # the parts' stores: their own code
    assert combine > 100 and combine_split > 100, run.stdout  # the merging kernel compiled too
    ws2, ws4 = lines[17:19]
    assert ws2 != ws4 and not {ws2, ws4} & set(lines[:13]), run.stdout  # its own code, and its own at each ring depth
    one_seq, many_prefix, one_seq_prefix = lines[19:22]
    assert (many_prefix, one_seq_prefix) == (1, 0), run.stdout  # one launch for a single sequence
    assert one_seq != lines[3], run.stdout  # its tile count from cu_seqlens: its own code
    split_plain, split_ws = lines[22:24]
    assert split_plain != split_ws, run.stdout  # the copy warp's form of a split head is its own code
