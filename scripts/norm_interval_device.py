"""Where a decode-size RMSNorm's per-call interval goes (a CUDA GPU): the evaluator's own timing protocol
(`aka_tui.bench.measure.timing.time_cuda`: L2 flushed before every call, events around it, GPU-saturated pass)
applied to the same kernel launched different ways and to its peers, in shuffled interleaved rounds.

  ours            the KB launcher (Triton's launch path, kernel[grid])
  ours_handle     the same compiled kernel through its compiled handle (CompiledKernel.run): the same device
                  work without Triton's host path, so a difference to `ours` is not in the kernel
  ours_w16        the KB kernel at 16 warps (inductor's launch geometry for these rows)
  torch.compile   the problem's reference compiled (inductor)
  compile_triton  the same compiled with inductor's static CUDA launcher off (Triton's launcher, as ours)
  liger           Liger-Kernel's RMSNorm (when the package is importable)

With --forms, also:
  inductor_kernel the kernel inductor generated for the compiled reference, launched through Triton's launcher
                  with inductor's chosen config (kernel code against everything around it)
  two_pass_*      scripts/norm_forms_kernels.py: the two-pass loop of that kernel with one property switched
                  at a time (chunk width R, width a constexpr or an argument, 32/64-bit offsets, tl.where, warps)

    PYTHONPATH=. python3 scripts/norm_interval_device.py [ROWSxCOLS ...] [--rounds N] [--forms]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="*", default=["256x4096", "128x2880"])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--forms", action="store_true", help="add inductor's kernel and the two-pass forms")
    parser.add_argument("--sets", type=int, default=1,
                        help="input sets the timed calls rotate over, as the evaluator's timing sets (default 1; "
                             "ours_handle and ours_w16 keep the first)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch
    from triton.runtime import driver

    from aka_tui.bench.measure.timing import Timers, time_cuda
    from aka_tui.bench.problem.module_loading import import_file

    timers = Timers.capture()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    kernel = import_file(ROOT / "kb/family/norm/rms_norm.py", "interval_kernel")
    reference = import_file(ROOT / "problems/rms_norm/reference.py", "interval_reference")
    try:
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    except ImportError:
        LigerRMSNormFunction = None
    stream = driver.active.get_current_stream(driver.active.get_current_device())
    for spec in args.shapes:
        rows, cols = (int(v) for v in spec.split("x"))
        x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        few_rows = rows <= kernel.FEW_ROWS_PER_SM * kernel._sm_count(x.device)  # as the launcher decides it
        plan = kernel._plan(cols, few_rows, dict(kernel.TUNABLES))
        rows_per, block, single, warps, stages, early_mode, const_cols = plan
        grid = (-(-rows // rows_per),)
        early = kernel._early_weights(early_mode, single, grid[0], x.device)  # as the launcher decides it
        constexprs = dict(ROWS=rows_per, BLOCK=block, SINGLE_TILE=single, EARLY_WEIGHTS=early, N_COLS=const_cols)
        kargs = (x, w, y, rows, cols, cols, cols, 1e-5)
        compiled = kernel._rms_norm_kernel[grid](*kargs, **constexprs, num_warps=warps, num_stages=stages)
        full = (*kargs, *constexprs.values())
        model = torch.compile(reference.Model(cols, 1e-5).cuda(), dynamic=False)
        calls = {
            "ours": lambda p: kernel.launch_rms_norm(p["x"], p["w"], 1e-5),
            "ours_handle": lambda p: compiled.run(grid[0], 1, 1, stream, compiled.function, compiled.packed_metadata,
                                                  None, None, None, *full),
            "ours_w16": lambda p: kernel._rms_norm_kernel[grid](p["x"], p["w"], y, rows, cols, cols, cols, 1e-5,
                                                                **constexprs, num_warps=16, num_stages=stages),
            "torch.compile": lambda p: model(p["x"], p["w"]),
        }
        import torch._inductor.config as inductor_config
        try:
            with inductor_config.patch(use_static_cuda_launcher=False, fx_graph_cache=False):
                triton_launched = torch.compile(reference.Model(cols, 1e-5).cuda(), dynamic=False)
                triton_launched(x, w)
            calls["compile_triton"] = lambda p: triton_launched(p["x"], p["w"])
        except Exception as exc:  # an experiment's variant: say why and go on
            print(f"  compile_triton: {type(exc).__name__}: {exc}")
        if LigerRMSNormFunction is not None:
            calls["liger"] = lambda p: LigerRMSNormFunction.apply(p["x"], p["w"], 1e-5, 0.0, "gemma", False, None)
        if args.forms:
            calls.update(_forms(rows, cols, model, x, w))
        print(f"### {rows} x {cols} bf16: {warps} warps, {rows_per} row(s) a program, block {block}; "
              f"kernel registers {compiled.n_regs}, shared {compiled.metadata.shared} B")
        reference_out = model(x, w)
        for name, call in calls.items():
            out = call({"x": x, "w": w})
            if name not in ("ours_handle", "ours_w16") and out is not None:
                err = (out.float() - reference_out.float()).abs().max().item()
                print(f"  {name}: max |diff| to compile {err:.3e}")
        sets = [{"x": x, "w": w}] + [{"x": torch.randn_like(x), "w": torch.randn_like(w)} for _ in range(args.sets - 1)]
        times: dict[str, list[float]] = {name: [] for name in calls}
        host: dict[str, list[float]] = {name: [] for name in calls}
        order = list(calls)
        for _ in range(args.rounds):
            random.shuffle(order)
            for name in order:
                stats = time_cuda(calls[name], sets, timers, l2)
                times[name].append(stats.median_ms * 1e3)
                host[name].append((stats.host_call_ms or 0.0) * 1e3)
        print(f"| launch ({len(sets)} input set(s)) | interval µs (median of {args.rounds} rounds) | min | max | "
              f"host µs a call |")
        print("|---|---|---|---|---|")
        for name in calls:
            v = times[name]
            print(f"| {name} | {statistics.median(v):.2f} | {min(v):.2f} | {max(v):.2f} | "
                  f"{statistics.median(host[name]):.1f} |")
        print()
    return 0


def _forms(rows: int, cols: int, model, x, w) -> dict:  # type: ignore[no-untyped-def]
    """Inductor's generated kernel for `model` (compiled and run once already) and the two-pass forms."""
    import torch
    from torch._inductor.codecache import PyCodeCache

    sys.path.insert(0, str(ROOT / "scripts"))
    import norm_forms_kernels as forms

    def two_pass(R: int, const_n: int, wide: int, where: int, warps: int):  # type: ignore[no-untyped-def]
        def call(p):  # type: ignore[no-untyped-def]
            out = torch.empty_like(p["x"])
            forms.rms_two_pass[(rows,)](p["x"], p["w"], out, cols, 1e-5, N=cols, R=R, CONST_N=const_n, WIDE=wide,
                                        WHERE=where, num_warps=warps, num_stages=1)
            return out
        return call

    calls = {"two_pass_R2048_argN_16w": two_pass(2048, 0, 0, 1, 16),
             "two_pass_R2048_constN_16w": two_pass(2048, 1, 0, 1, 16),
             "two_pass_R2048_constN_i64_16w": two_pass(2048, 1, 1, 1, 16),
             "two_pass_R2048_constN_accumulate_16w": two_pass(2048, 1, 0, 0, 16),
             "two_pass_R2048_constN_8w": two_pass(2048, 1, 0, 1, 8),
             "two_pass_R4096_constN_16w": two_pass(4096, 1, 0, 1, 16)}
    model(x, w)  # compiled (and its kernel loaded) before the search
    generated = [getattr(m, name) for m in list(getattr(PyCodeCache, "modules", [])) for name in dir(m)
                 if name.startswith("triton_") and getattr(getattr(m, name), "launchers", None)
                 and f"r0_numel = {cols}" in getattr(getattr(m, name).fn, "src", "")]  # this width's kernel
    if not generated:
        print("  inductor_kernel: not found among the compiled modules")
        return calls
    kernel = generated[-1]
    config = kernel.launchers[0].config
    kwargs = dict(config.kwargs)
    print(f"  inductor_kernel: {kernel.fn.__name__} {kwargs}, {config.num_warps} warps, {config.num_stages} stages")

    def generated_call(p):  # type: ignore[no-untyped-def]
        out = torch.empty_like(p["x"])
        kernel.fn[(-(-rows // kwargs.get("XBLOCK", 1)),)](p["x"], p["w"], out, rows, cols, **kwargs,
                                                          num_warps=config.num_warps, num_stages=config.num_stages)
        return out

    calls["inductor_kernel"] = generated_call
    return calls


if __name__ == "__main__":
    sys.exit(main())
