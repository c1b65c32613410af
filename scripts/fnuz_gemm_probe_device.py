"""Probe: GEMM throughput with float8_e4m3fnuz operands on an NVIDIA GPU, whose tensor cores cannot read fnuz.

out[M, N] = sum_g (x[:, g] @ w[:, g]^T) * xs[m, g] * ws[n // 128, g], 128-wide K groups, fp32 out; x and w hold
fnuz codes (uint8). Variants (each exact up to fp32 summation order unless noted):
  inloop  both tiles decoded to fp16 in the K loop, tokens x weights (the fused-experts kernel's form);
  swap    the weight tile decoded in registers as the MMA's A operand (register-sourced wgmma), the
          activations decoded once by a pre-pass to fp16 and read as B from shared memory;
  pass    both operands decoded to fp16 before timing (not an option for weights per call: the MMA ceiling);
  fold    as swap, with the weight scale folded into the decoded tile and the activation scale into the
          pre-pass (fp16 products: not exact), one accumulator chained over K (no per-group promotion).
Prints TFLOP/s per variant and shape (do_bench median), and the largest deviation from the fp32 reference.

    PYTHONPATH=. python3 scripts/fnuz_gemm_probe_device.py      (on a CUDA GPU)
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl


@triton.jit
def _dec(bits):
    u = bits.to(tl.uint16)
    return (((u & 0x7F) << 7) | ((u & 0x80) << 8)).to(tl.float16, bitcast=True) * 128.0


@triton.jit
def _pre_kernel(src, dst, scale, K, G, FOLD: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    v = _dec(tl.load(src + row * K + offs)).to(tl.float32)
    if FOLD:
        v = v * tl.load(scale + row * G + offs // 128)
    tl.store(dst + row * K + offs, v.to(tl.float16))


@triton.jit
def _inloop_kernel(x, xs, w, ws, out, M, N, K, G, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], tl.float32)
    for g in range(0, G):
        part = tl.zeros([BM, BN], tl.float32)
        for kk in tl.static_range(0, 128, BK):
            a = _dec(tl.load(x + rm[:, None] * K + (g * 128 + kk + rk)[None, :]))
            b = _dec(tl.load(w + rn[None, :] * K + (g * 128 + kk + rk)[:, None]))
            part = tl.dot(a, b, part)
        sa = tl.load(xs + rm * G + g)
        sb = tl.load(ws + (pn * BN // 128) * G + g)
        acc += part * sa[:, None] * sb
    tl.store(out + rm[:, None] * N + rn[None, :], acc)


@triton.jit
def _swap_kernel(x16, xs, w, ws, out, M, N, K, G, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                 FOLD: tl.constexpr, PASS: tl.constexpr):
    pn = tl.program_id(0)
    pm = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BN, BM], tl.float32)
    for g in range(0, G):
        sb = tl.load(ws + (pn * BN // 128) * G + g)
        if FOLD:
            for kk in tl.static_range(0, 128, BK):
                a = (_dec(tl.load(w + rn[:, None] * K + (g * 128 + kk + rk)[None, :])) * sb).to(tl.float16)
                b = tl.load(x16 + rm[None, :] * K + (g * 128 + kk + rk)[:, None])
                acc = tl.dot(a, b, acc)
        else:
            part = tl.zeros([BN, BM], tl.float32)
            for kk in tl.static_range(0, 128, BK):
                if PASS:
                    a = tl.load(w + rn[:, None] * K + (g * 128 + kk + rk)[None, :])
                else:
                    a = _dec(tl.load(w + rn[:, None] * K + (g * 128 + kk + rk)[None, :]))
                b = tl.load(x16 + rm[None, :] * K + (g * 128 + kk + rk)[:, None])
                part = tl.dot(a, b, part)
            sa = tl.load(xs + rm * G + g)
            acc += part * sa[None, :] * sb
    tl.store(out + rm[None, :] * N + rn[:, None], acc)


def _fnuz(shape, gen) -> torch.Tensor:
    v = torch.randn(shape, generator=gen, device="cuda") * 60
    return v.clamp(-240, 240).to(torch.float8_e4m3fnuz)


def _pre(codes: torch.Tensor, scale: torch.Tensor, fold: bool) -> torch.Tensor:
    rows, k = codes.shape
    dst = torch.empty(rows, k, dtype=torch.float16, device=codes.device)
    _pre_kernel[(rows, k // 256)](codes.view(torch.uint8), dst, scale, k, k // 128, FOLD=fold, BLOCK=256)
    return dst


def run_shape(m: int, n: int, k: int) -> None:
    gen = torch.Generator(device="cuda").manual_seed(0)
    x, w = _fnuz((m, k), gen), _fnuz((n, k), gen)
    g = k // 128
    xs = torch.rand(m, g, generator=gen, device="cuda") * 1e-3 + 1e-4
    ws = torch.rand(n // 128, g, generator=gen, device="cuda") * 1e-2 + 1e-3
    ref = ((x.float().view(m, g, 128) * xs[:, :, None]).view(m, k)
           @ (w.float().view(n // 128, 128, g, 128) * ws[:, None, :, None]).view(n, k).T)
    out = torch.empty(m, n, dtype=torch.float32, device="cuda")
    xu, wu = x.view(torch.uint8), w.view(torch.uint8)
    flops = 2.0 * m * n * k

    def record(name, fn):
        try:
            fn()
        except triton.runtime.errors.OutOfResources as exc:
            print(f"{m}x{n}x{k}  {name:28s} not launched: {str(exc).splitlines()[0][:80]}", flush=True)
            return
        torch.cuda.synchronize()
        err = ((out - ref).abs().max() / ref.abs().max()).item()
        ms = triton.testing.do_bench(fn, warmup=50, rep=300)
        print(f"{m}x{n}x{k}  {name:28s} {flops / ms / 1e9:7.1f} TFLOP/s  max rel err {err:.2e}", flush=True)

    for bm, bn, bk, nw, st in [(128, 128, 64, 8, 3), (128, 128, 128, 8, 3), (128, 256, 64, 8, 3)]:
        record(f"inloop {bm}x{bn}x{bk} w{nw} s{st}", lambda: _inloop_kernel[(m // bm, n // bn)](
            xu, xs, wu, ws, out, m, n, k, g, BM=bm, BN=bn, BK=bk, num_warps=nw, num_stages=st))
    for bn, bm, bk, nw, st in [(128, 128, 64, 8, 3), (128, 128, 128, 8, 3), (128, 256, 64, 8, 3),
                               (64, 128, 128, 4, 4), (128, 64, 128, 4, 4)]:
        for mode in ("swap", "pass", "fold"):
            fixed = (_pre(x, xs, False), _pre(w, ws, False)) if mode == "pass" else None

            def fn(bn=bn, bm=bm, bk=bk, nw=nw, st=st, mode=mode, fixed=fixed):
                xin, win = fixed if fixed else (_pre(x, xs, mode == "fold"), wu)
                _swap_kernel[(n // bn, m // bm)](xin, xs, win, ws, out, m, n, k, g, BM=bm, BN=bn, BK=bk,
                                                 FOLD=mode == "fold", PASS=mode == "pass",
                                                 num_warps=nw, num_stages=st)
            record(f"{mode} {bn}x{bm}x{bk} w{nw} s{st}", fn)


def main() -> int:
    shapes = [(16384, 1536, 2048), (16384, 2048, 768), (8192, 4096, 7168), (8192, 7168, 2048)]
    for m, n, k in shapes:
        run_shape(m, n, k)
    return 0


if __name__ == "__main__":
    sys.exit(main())
