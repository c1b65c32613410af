"""Knock-out probes: what bounds a KB kernel, measured, for the fp8 block-scale GEMM and MLA decode.

Each probe times variants of one KB kernel that drop or change one part of the work, side by side with the
evaluator's timer (`time_cuda`: L2 flushed before every call, GPU-saturated pass) on the problem's own
timing inputs. A variant's output is wrong by design; only its time is used. The difference between the
kernel and a variant is the cost of the part the variant drops.

fp8   gemm_fp8_blockscale (largest and weighted full shapes): the KB kernel (per-K-step promotion with a
      per-row a scale); the same tiles promoting with one scalar per step (isolates the per-row scale);
      the same tiles chaining the fp32 accumulator through `tl.dot(a, b, acc)` with no per-step promotion
      (what Triton pipelines as async wgmma: the cost of promotion); cuBLAS block-wise (`torch._scaled_mm`,
      the library this kernel is compared with) and row-wise. TFLOP/s of each.
mla   attention_mla_decode (every full shape): the KB kernel; the same kernel without the P @ V dot; without
      any math (the tile loads only); a copy of the roofline's bytes. Each at PARTITION 256, 512 and 1024
      (how the context is split over programs). T_SOL / T of each.

MLA decode's knock-outs are the KB kernel's own `KNOCKOUT` constexpr / `knockout=` argument (the evaluator never
sets it); the fp8 variants are kernels here that share the KB kernel's tile order.

    PYTHONPATH=. python3 scripts/bound_probes.py OUT.json [fp8] [mla]      (on a CUDA GPU, from the checkout)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

from aka_tui.bench.measure.timing import Timers, time_cuda
from aka_tui.bench.problem.inputs import timing_input_sets
from aka_tui.bench.problem.lookup import default_suite_dir, load_suite
from aka_tui.bench.problem.module_loading import import_file
from aka_tui.bench.roofline.bound import bound
from aka_tui.bench.roofline.calibrate import time_copy
from aka_tui.bench.roofline.hardware import detect_profile
from aka_tui.knowledge.store import default_kb_dir

KB_FAMILY = default_kb_dir() / "family"
FP8_KB = import_file(KB_FAMILY / "gemm" / "gemm_fp8_blockscale.py", "probe_kb")
_tile_of = FP8_KB._tile_of  # the KB kernel's tile order, so the probe kernels differ from it only where named


@triton.jit
def _fp8_probe_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, out_ptr, M, N, K, stride_am, stride_asm, stride_bn, stride_bsn,
                      stride_om, GROUP: tl.constexpr, CHAINED: tl.constexpr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """The KB kernel's tiles and swizzle. CHAINED: acc = dot(a, b, acc), scaled once at the end; else
    acc += dot(a, b) * one scalar per K step (the b block's scale)."""
    pid_m, pid_n = _tile_of(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = (offs_m % M).to(tl.int64)
    cols = (offs_n % N).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + cols[None, :] * stride_bn + offs_k[:, None]
    sb_ptrs = bs_ptr + ((pid_n * BLOCK_N) // GROUP).to(tl.int64) * stride_bsn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        if CHAINED:
            acc = tl.dot(a, b, acc)
        else:
            acc += tl.dot(a, b) * tl.load(sb_ptrs + k0 // GROUP)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    if CHAINED:
        acc = acc * tl.load(as_ptr + rows * stride_asm)[:, None] * tl.load(sb_ptrs)
    tl.store(out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=(offs_m < M)[:, None] & (offs_n < N)[None, :])


def _fp8_probe(cfg: dict, chained: bool):
    def run(i: dict) -> torch.Tensor:
        a, b, sa, sb = i["a"], i["b"], i["a_scale"], i["b_scale"]
        (m, k), n = a.shape, b.shape[0]
        out = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
        grid = (triton.cdiv(m, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)
        _fp8_probe_kernel[grid](a, sa, b, sb, out, m, n, k, a.stride(0), sa.stride(0), b.stride(0), sb.stride(0),
                                out.stride(0), GROUP=128, CHAINED=chained, BLOCK_M=cfg["BLOCK_M"],
                                BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"],
                                num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        return out
    return run


def _timed(fn, sets, timers, l2) -> float:
    return time_cuda(fn, sets, timers, l2).median_ms


def probe_fp8(suite, timers, l2) -> list[dict]:
    from aka_tui.bench.compare.library.run import FP8_FORMS, call_scaled_mm, probe_scaled_mm, scaled_mm_scales

    problem = suite.problems["gemm_fp8_blockscale"]
    kb = FP8_KB
    inputs_mod = import_file(problem.input_path, "probe_inputs")
    cfg = dict(kb.TUNABLES)
    shapes = problem.shapes_for("full")
    chosen = {max(shapes, key=lambda s: problem.roofline[s.shape_id].flops).shape_id}
    chosen |= {s.shape_id for s in shapes if s.weight > 0}
    forms = {f.kind: f for f in FP8_FORMS if probe_scaled_mm(f, "cuda")[0]}
    rows = []
    for shape in [s for s in shapes if s.shape_id in chosen]:
        sets = timing_input_sets(problem, inputs_mod, shape, "cuda", 3, memory_fraction=0.125)
        a = sets[0]["a"]
        flops = 2.0 * a.shape[0] * sets[0]["b"].shape[0] * a.shape[1]
        variants = {"kb kernel (per-step promotion, row scales)": lambda i: kb.launch_gemm_fp8_blockscale(
                        i["a"], i["a_scale"], i["b"], i["b_scale"], torch.bfloat16),
                    "same tiles, per-step promotion, scalar scale": _fp8_probe(cfg, chained=False),
                    "same tiles, chained accumulator, no promotion": _fp8_probe(cfg, chained=True)}
        for kind in ("blockwise", "rowwise"):
            if kind in forms:
                form = forms[kind]
                prepared = []
                for i in sets:
                    sa, sb = scaled_mm_scales(form, i["a_scale"], i["b_scale"], i["b"].shape[0], 128)
                    prepared.append({"a": i["a"], "bt": i["b"].t(), "sa": sa, "sb": sb})
                variants[f"cuBLAS {kind} ({form.label})"] = (
                    lambda p, form=form: call_scaled_mm(form, p["a"], p["bt"], p["sa"], p["sb"], torch.bfloat16),
                    prepared)
        for name, v in variants.items():
            fn, vsets = v if isinstance(v, tuple) else (v, sets)
            try:
                ms = _timed(fn, vsets, timers, l2)
                rows.append({"probe": "fp8", "shape": shape.shape_id, "variant": name, "ms": ms,
                             "tflops": flops / (ms * 1e-3) / 1e12})
            except Exception as exc:  # noqa: BLE001 - a variant that fails is reported, the others still run
                rows.append({"probe": "fp8", "shape": shape.shape_id, "variant": name, "error": repr(exc)[:200]})
        del sets
        torch.cuda.empty_cache()
    return rows


def probe_mla(suite, timers, l2) -> list[dict]:
    problem = suite.problems["attention_mla_decode"]
    kb = import_file(KB_FAMILY / "attention" / "attention_mla_decode.py", "probe_kb_mla")
    inputs_mod = import_file(problem.input_path, "probe_inputs_mla")
    profile = detect_profile("cuda")
    default_partition = kb.TUNABLES["PARTITION"]
    rows = []
    for shape in problem.shapes_for("full"):
        entry = problem.roofline[shape.shape_id]
        t_sol_ms = bound(entry, profile).t_sol_s * 1e3
        sets = timing_input_sets(problem, inputs_mod, shape, "cuda", 3, memory_fraction=0.125)
        kw = shape.init_kwargs
        scale = kw["softmax_scale"]

        def call(i, knockout):
            return kb.launch_attention_mla_decode(i["q"], i["kv_cache"], i["block_tables"], i["seq_lens"],
                                                  kw["num_heads"], kw["kv_lora_rank"], kw["rope_dim"],
                                                  kw["block_size"], scale, knockout=knockout)
        copy_ms = time_copy(entry.bytes_total, timers, l2, sets=2).median_ms
        rows.append({"probe": "mla", "shape": shape.shape_id, "variant": "copy of the roofline bytes",
                     "ms": copy_ms, "t_sol_over_t": t_sol_ms / copy_ms})
        for partition in (256, 512, 1024):
            kb.TUNABLES["PARTITION"] = partition
            for knockout, name in ((0, "kb kernel"), (2, "no P @ V dot"), (1, "tile loads only")):
                try:
                    ms = _timed(lambda i, k=knockout: call(i, k), sets, timers, l2)
                    rows.append({"probe": "mla", "shape": shape.shape_id, "variant": f"{name}, PARTITION {partition}",
                                 "ms": ms, "t_sol_over_t": t_sol_ms / ms,
                                 "tbps": entry.bytes_total / (ms * 1e-3) / 1e12})
                except Exception as exc:  # noqa: BLE001
                    rows.append({"probe": "mla", "shape": shape.shape_id,
                                 "variant": f"{name}, PARTITION {partition}", "error": repr(exc)[:200]})
        kb.TUNABLES["PARTITION"] = default_partition
        del sets
        torch.cuda.empty_cache()
    return rows


def main(argv: list[str]) -> int:
    if not torch.cuda.is_available():
        print("bound_probes.py needs a CUDA GPU")
        return 2
    out, which = Path(argv[0]), argv[1:] or ["fp8", "mla"]
    timers = Timers.capture()
    l2 = detect_profile("cuda").l2_bytes
    suite = load_suite(default_suite_dir())
    rows: list[dict] = []
    for name in which:
        rows += {"fp8": probe_fp8, "mla": probe_mla}[name](suite, timers, l2)
        out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    for r in rows:
        figure = f"{r['tflops']:8.1f} TFLOP/s" if "tflops" in r else ""
        if "t_sol_over_t" in r:
            figure = f"T_SOL/T {r['t_sol_over_t']:.3f}"
        time = f"{r['ms'] * 1e3:9.1f} us" if "ms" in r else f"ERROR {r['error']}"
        print(f"{r['probe']:4s} {r['shape'][:40]:40s} {r['variant'][:48]:48s} {time} {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
