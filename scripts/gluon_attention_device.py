"""The Gluon path of the KB's varlen attention kernel (kb/family/attention/attention_prefill_varlen.py: paged
caches through per-page TMA copies into a shared-memory ring, warpgroup MMAs) timed over its tunables against
the kernel's AUTO, on workload shapes; --compile-only compiles every configuration for sm_90 on a CPU machine.

BLOCK_N keys a chunk (BLOCK_N / page copies), STAGES ring slots, num_warps 4 or 8 (one or two warpgroups of 64
packed GQA rows), OVERLAP (3+ stages: the next chunk's Q K^T issued before this chunk's softmax), BT_AHEAD (a
chunk's block ids read one chunk before its copies are issued), PERSIST (programs an SM of the persistent form:
one chunk stream over a program's work items; 0 off), MAXNREG (a register cap a thread; 0 the compiler's count),
SPLIT (GLUON_SPLIT: a head that is not a power of two as two power-of-two parts; such a shape takes only SPLIT 1
configurations without OVERLAP or PERSIST, which have no split form), FULL (GLUON_FULL: chunks every row sees
whole skip the masks) and LAZY (GLUON_LAZY: the accumulator rescaled only when a running max grows by more than
a factor 256); the persistent form has neither. WS (GLUON_WS: one warp issues the copies while the kernel's
warps attend; no OVERLAP, LAZY or split-head form) and PARTS (GLUON_PART_CHUNKS: a tile's keys split into parts of
that many chunks, one program each, merged by a second kernel; 0 off; no OVERLAP, WS or persistent form).

A shape is `SEQSxLEN:HEADS/KV_HEADS:HEAD_DIM:pagedN` as in scripts/varlen_configs_device.py.

    PYTHONPATH=. python3 scripts/gluon_attention_device.py 1882x256:16/4:128:paged16 --grid BLOCK_N=32,64
    PYTHONPATH=. python3 scripts/gluon_attention_device.py 8x256:16/4:128:paged16 --compile-only   # CPU, sm_90
    ... --compile-only --ptx-dir A; (change the kernel) ... --ptx-dir B; diff -r A B   # did its code change?
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

GRID = {"BLOCK_N": [32, 64], "STAGES": [2, 3, 4], "num_warps": [4, 8], "OVERLAP": [0, 1], "BT_AHEAD": [0],
        "PERSIST": [0], "MAXNREG": [0], "SPLIT": [0], "FULL": [0], "LAZY": [0], "WS": [0], "PARTS": [0]}


def _kb_kernel():
    from aka_tui.bench.problem.module_loading import import_file

    return import_file(ROOT / "kb/family/attention/attention_prefill_varlen.py", "varlen_kb_for_gluon")


def launch(q, k_cache, v_cache, cu, used, table, num_heads, num_kv_heads, scale, causal=True, BLOCK_N=64,
           STAGES=3, num_warps=4, OVERLAP=0, BT_AHEAD=0, PERSIST=0, PROGRAMS=0, MAXNREG=0, SPLIT=0, FULL=0, LAZY=0,
           WS=0, PARTS=0, kb=None):
    """out [tokens, heads, head] of causal (bottom-right) GQA attention over a paged 16-bit cache
    [blocks, page, kv_heads, head] through the KB kernel's Gluon path with these tunables (no AUTO); PROGRAMS
    fixes the persistent form's grid (0: PERSIST programs an SM)."""
    kb = kb or _kb_kernel()
    tiles = {"GLUON": 1, "GLUON_BLOCK_N": BLOCK_N, "GLUON_STAGES": STAGES, "GLUON_WARPS": num_warps,
             "GLUON_OVERLAP": OVERLAP, "GLUON_BT_AHEAD": BT_AHEAD, "GLUON_PERSIST": PERSIST,
             "GLUON_PROGRAMS": PROGRAMS, "GLUON_MAXNREG": MAXNREG, "GLUON_SPLIT": SPLIT, "SPLIT_HEAD": SPLIT,
             "GLUON_SPLIT_BLOCK_N": BLOCK_N, "GLUON_FULL": FULL, "GLUON_LAZY": LAZY,
             "GLUON_WS": WS, "GLUON_PART_CHUNKS": PARTS}
    group = num_heads // num_kv_heads
    if q.is_cuda:  # the compile-only check on the CPU has no device to ask
        assert kb._gluon_fits(q, k_cache, v_cache, table, group, q.shape[-1], tiles), "the Gluon path refuses it"
    assert STAGES >= (3 if OVERLAP else 2)
    return kb._launch_gluon(q, k_cache, v_cache, torch.empty_like(q), cu, cu, used, table, group, scale, causal,
                            tiles)


def _keep_ptx(sink: dict) -> None:
    """From now on each compiled launch's PTX goes into sink[kernel name] (the latest launch's)."""
    from triton.runtime.jit import JITFunction

    run = JITFunction.run

    def keeping(self, *args, **kwargs):
        kernel = run(self, *args, **kwargs)
        sink[self.fn.__name__] = kernel.asm["ptx"]
        return kernel

    JITFunction.run = keeping


def code_of(ptx: str) -> str:
    """PTX without what moves with the source's line numbers: `.loc`/`.file` records and the debug sections."""
    code = re.split(r"^\s*\.section\s+\.debug", ptx, maxsplit=1, flags=re.MULTILINE)[0]
    return "".join(line for line in code.splitlines(keepends=True)
                   if not line.lstrip().startswith((".loc", ".file")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="+")
    parser.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2",
                        help=f"replace one of {', '.join(GRID)} (repeatable)")
    parser.add_argument("--rep", type=int, default=100, help="do_bench repetition time in ms")
    parser.add_argument("--cudagraph", action="store_true", help="time CUDA-graph replays (do_bench_cudagraph, "
                        "median): the host's launch path out of the figure, as the evaluator's saturated timer "
                        "keeps it out; plain do_bench lets a launch path slower than a ~50 us kernel pace it")
    parser.add_argument("--json", type=Path, help="also write every shape's rows (kernel, ms, max diff) here")
    parser.add_argument("--compile-only", action="store_true", help="compile every configuration for sm_90 on "
                        "this machine (no GPU needed) and print its PTX size")
    parser.add_argument("--ptx-dir", type=Path, help="with --compile-only: also write each configuration's PTX "
                        "here, line records and debug sections left out, so that `diff -r` of two such folders "
                        "shows whether a change to the kernel's source changed its code")
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
        if args.ptx_dir:
            _keep_ptx(ptx_sink := {})
    elif not torch.cuda.is_available():
        raise SystemExit("timing needs a GPU; on the CPU use --compile-only")
    device = "cuda" if compiled is None else "cpu"

    def bench(fn) -> float:  # type: ignore[no-untyped-def]
        if args.cudagraph:
            return triton.testing.do_bench_cudagraph(fn, rep=args.rep, return_mode="median")
        return triton.testing.do_bench(fn, rep=args.rep)

    kb = _kb_kernel()
    configs = [dict(zip(GRID, values)) for values in itertools.product(*GRID.values())]
    configs = [c for c in configs if c["STAGES"] >= (3 if c["OVERLAP"] else 2)]  # OVERLAP needs a third slot
    # the persistent form has its own 2-slot stream: one configuration per (BLOCK_N, warps, PERSIST)
    configs = [c for c in configs if not c["PERSIST"] or (c["STAGES"], c["OVERLAP"], c["BT_AHEAD"], c["FULL"], c["LAZY"])
               == (2, 0, 0, 0, 0)]
    worst = 0.0
    table_rows: dict[str, list[dict]] = {}
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
        shape_configs = configs
        if dim & (dim - 1):  # only the split form takes this head
            shape_configs = [dict(c, SPLIT=1) for c in configs if not c["OVERLAP"] and not c["PERSIST"]]
            shape_configs = [dict(t) for t in dict.fromkeys(tuple(c.items()) for c in shape_configs)]
        if compiled is not None:
            for config in shape_configs:
                compiled.clear()
                launch(q, k, v, cu, used, table, heads, kv_heads, scale, kb=kb, **config)
                name = "_paged_attention_gluon_persistent_kernel" if config["PERSIST"] else \
                    "_paged_attention_gluon_kernel"
                print(config, dict(compiled).get(name))
                if args.ptx_dir:
                    args.ptx_dir.mkdir(parents=True, exist_ok=True)
                    label = "-".join(f"{key}{value}" for key, value in config.items())
                    (args.ptx_dir / f"{text.replace(':', '_').replace('/', '_')}-{label}.ptx").write_text(
                        code_of(ptx_sink[name]))
            continue
        model = kb.Model(heads, kv_heads, dim, causal=True)
        kb.TUNABLES["GLUON"] = 0
        want = model(q, k, v, cu, **extra)
        tokens, length = int(shape["seqs"]) * int(shape["len"]), int(shape["len"])
        flops = 4 * tokens * heads * dim * (length + 1) / 2
        rows = [("KB Triton kernel (AUTO, GLUON 0)",
                 bench(lambda: model(q, k, v, cu, **extra)), 0.0)]
        kb.TUNABLES["GLUON"] = 1
        err = (model(q, k, v, cu, **extra).float() - want.float()).abs().max().item()
        rows.append(("KB AUTO (its Gluon path)", bench(lambda: model(q, k, v, cu, **extra)), err))
        worst = max(worst, err)
        for config in shape_configs:
            def call(config=config):
                return launch(q, k, v, cu, used, table, heads, kv_heads, scale, kb=kb, **config)
            try:
                err = (call().float() - want.float()).abs().max().item()
                ms = bench(call)
            except Exception as exc:  # a configuration that does not build: say why and go on
                print(f"{config}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                continue
            worst = max(worst, err)
            rows.append((" ".join(f"{k}={v}" for k, v in config.items()), ms, err))
        rows.sort(key=lambda r: r[1])
        print("| kernel | ms | TFLOP/s | max abs diff vs the Triton kernel |")
        print("|---|---|---|---|")
        for name, ms, err in rows:
            print(f"| {name} | {ms:.4f} | {flops / ms / 1e9:.0f} | {err:.2e} |")
        table_rows[text] = [{"kernel": name, "ms": ms, "max_diff": err} for name, ms, err in rows]
        if args.json:
            args.json.write_text(json.dumps(table_rows, indent=1))
    if worst > 2e-2:
        print(f"outputs differ from the KB kernel's: max {worst:.2e}")
        return 1
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
