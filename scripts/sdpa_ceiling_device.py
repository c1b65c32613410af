"""What PyTorch's own attention kernels reach on a dense batch of equal-length sequences (a GPU): a reference
point for a Triton attention kernel's figure on the same sizes (are we below the flash kernels the
framework ships, or level with them?).

Times `torch.nn.functional.scaled_dot_product_attention` under each SDPA backend that accepts the problem
(flash, memory-efficient, cuDNN), bf16, `triton.testing.do_bench` median with the L2 flushed, and prints
the time, the causal-aware FLOP rate (4 * batch * heads * seq^2 * head_dim, halved when causal) and the
rate of the minimum traffic (q, k, v read once, the output written once).

    PYTHONPATH=. python3 scripts/sdpa_ceiling_device.py --batch 1882 --seq 256 --heads 16 --kv-heads 4 \
        --head-dim 128 [--batch 300 ...] [--no-causal]

Several --batch values give one row each (the other sizes are shared).
"""

from __future__ import annotations

import argparse


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, action="append", required=True)
    parser.add_argument("--seq", type=int, required=True)
    parser.add_argument("--heads", type=int, required=True)
    parser.add_argument("--kv-heads", type=int, required=True)
    parser.add_argument("--head-dim", type=int, required=True)
    parser.add_argument("--no-causal", action="store_true")
    parser.add_argument("--rep", type=int, default=50, help="do_bench milliseconds")
    args = parser.parse_args()

    import torch
    import torch.nn.functional as F
    import triton
    from torch.nn.attention import SDPBackend, sdpa_kernel

    causal = not args.no_causal
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                "cudnn": SDPBackend.CUDNN_ATTENTION}
    print("| batch | seq | heads/kv | head | causal | backend | ms | TFLOP/s | TB/s of min traffic |")
    print("|---|---|---|---|---|---|---|---|---|")
    for batch in args.batch:
        shape_q = (batch, args.heads, args.seq, args.head_dim)
        shape_kv = (batch, args.kv_heads, args.seq, args.head_dim)
        q = torch.randn(shape_q, dtype=torch.bfloat16, device="cuda")
        k = torch.randn(shape_kv, dtype=torch.bfloat16, device="cuda")
        v = torch.randn(shape_kv, dtype=torch.bfloat16, device="cuda")
        flops = 4 * batch * args.heads * args.seq ** 2 * args.head_dim / (2 if causal else 1)
        traffic = 2 * (2 * q.numel() + k.numel() + v.numel())
        gqa = args.heads != args.kv_heads
        group = args.heads // args.kv_heads
        for name, backend in backends.items():
            # GQA as the backend takes it: enable_gqa, else K/V expanded to every query head (more traffic)
            for label, kk, vv, flag in ((name, k, v, gqa),
                                        (f"{name}, kv expanded", k.repeat_interleave(group, 1),
                                         v.repeat_interleave(group, 1), False)):
                def call(kk=kk, vv=vv, flag=flag, backend=backend):
                    with sdpa_kernel(backend):
                        return F.scaled_dot_product_attention(q, kk, vv, is_causal=causal, enable_gqa=flag)
                try:
                    call()
                    torch.cuda.synchronize()
                    ms = triton.testing.do_bench(call, rep=args.rep)
                except RuntimeError as exc:  # the backend does not take this problem
                    print(f"| {batch} | {args.seq} | {args.heads}/{args.kv_heads} | {args.head_dim} | {causal} "
                          f"| {label} | - | not available: {str(exc).splitlines()[0][:80]} | - |")
                    if gqa:
                        continue
                    break
                print(f"| {batch} | {args.seq} | {args.heads}/{args.kv_heads} | {args.head_dim} | {causal} "
                      f"| {label} | {ms:.4f} | {flops / ms / 1e9:.1f} | {traffic / ms / 1e9:.2f} |")
                break
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
