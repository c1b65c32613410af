"""A/B of the varlen attention KB kernel before/after passing strides in 16-byte units (head 72 vs 80 vs 128).

Run from the repository root on a GPU after `mkdir -p tmp_ab && git show c0cd0d4:kb/family/attention/attention_prefill_varlen.py
> tmp_ab/varlen_before.py` (the kernel before the change); PYTHONPATH=. python3 this file."""
import sys, torch, triton
from pathlib import Path
sys.path.insert(0, ".")
from aka_tui.bench.problem.module_loading import import_file
before = import_file(Path("tmp_ab/varlen_before.py"), "before")
after = import_file(Path("kb/family/attention/attention_prefill_varlen.py"), "after")
torch.manual_seed(0)
rows = []
for H, D, T, causal in [(16, 72, 8136, False), (16, 72, 17296, False), (16, 80, 17296, False), (32, 128, 16742, False),
                        (16, 72, 17296, True), (4, 72, 2024, False)]:
    q = torch.randn(T, H, D, device="cuda", dtype=torch.bfloat16)
    k, v = torch.randn_like(q), torch.randn_like(q)
    cu = torch.tensor([0, T], dtype=torch.int32, device="cuda")
    flops = 4 * T * T * H * D * (0.5 if causal else 1.0)
    res = []
    for name, mod in (("before", before), ("after", after)):
        m = mod.Model(H, H, D, causal=causal)
        out = m(q, k, v, cu)
        ms = triton.testing.do_bench(lambda: m(q, k, v, cu), warmup=50, rep=300)
        res.append((name, ms, out))
    err = (res[0][2].float() - res[1][2].float()).abs().max().item()
    rows.append((H, D, T, causal, res[0][1], res[1][1], flops / res[0][1] / 1e9, flops / res[1][1] / 1e9, err))
print("| H | D | T | causal | before ms | after ms | before TFLOP/s | after TFLOP/s | max|diff| |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.3f} | {r[5]:.3f} | {r[6]:.0f} | {r[7]:.0f} | {r[8]:.2e} |")
