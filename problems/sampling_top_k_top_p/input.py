"""Inputs for sampling_top_k_top_p.

logits: N(0, 3^2) rounded to bfloat16 and returned in ``dtype`` -- real logits come out of a bf16 LM head,
so ties among the 100k+ vocabulary entries are common and the tie rules matter.
top_k: per row, disabled (k = vocab) with probability 0.3, otherwise drawn from typical settings
{1, 5, 20, 40, 50, 64, 100, 1000}.
top_p: per row, disabled (1.0) with probability 0.25, otherwise a target drawn from U(0.5, 0.98) and then
moved to the middle of the cumulative-probability span (computed in float64 after the row's top-k) of
the group of tied values the target falls in, so that the boundary is at least half a group's mass away;
if that group's mass is below 1e-4 the nearest earlier group with mass >= 1e-4 is used.
"""

import torch

TOP_K_CHOICES = [1, 5, 20, 40, 50, 64, 100, 1000]
MIN_GROUP_MASS = 1e-4


def _snap_top_p(logits: torch.Tensor, top_k: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    x = logits.to(torch.float64)
    B, V = x.shape
    s = torch.sort(x, dim=-1, descending=True).values
    t_k = s.gather(1, (top_k.long().clamp(1, V) - 1)[:, None])
    s = s.masked_fill(s < t_k, float("-inf"))
    probs = torch.softmax(s, dim=-1)
    cum = torch.cumsum(probs, dim=-1)
    excl = cum - probs
    pos = torch.arange(V, device=x.device).expand(B, V)
    new_group = torch.ones_like(s, dtype=torch.bool)
    new_group[:, 1:] = s[:, 1:] != s[:, :-1]
    start = torch.where(new_group, pos, torch.zeros_like(pos)).cummax(dim=-1).values
    last_of_group = torch.ones_like(new_group)
    last_of_group[:, :-1] = new_group[:, 1:]
    # group span [lo, hi]: mass before the group's first entry, cumulative mass after its last entry
    lo = excl.gather(1, start)
    hi_at_end = torch.where(last_of_group, cum, torch.full_like(cum, float("inf")))
    hi = hi_at_end.flip(-1).cummin(dim=-1).values.flip(-1)  # cum at the group's last entry
    valid = torch.isfinite(s) & (hi - lo >= MIN_GROUP_MASS)
    r0 = (cum < target[:, None]).sum(dim=-1).clamp(max=V - 1)
    # last valid position at or before r0 (position 0's group always qualifies unless it is tiny)
    cand = torch.where(valid & (pos <= r0[:, None]), pos, torch.full_like(pos, -1)).max(dim=-1).values
    cand = cand.clamp(min=0)
    lo_c = lo.gather(1, cand[:, None]).squeeze(1)
    hi_c = hi.gather(1, cand[:, None]).squeeze(1)
    return (0.5 * (lo_c + hi_c)).clamp(max=0.999)


def _make_inputs(batch: int, vocab_size: int, dtype: str = "float32", device: str = "cuda") -> dict[str, torch.Tensor]:
    dt = getattr(torch, dtype)
    logits = (torch.randn(batch, vocab_size, device=device) * 3.0).to(torch.bfloat16).to(dt)
    choices = torch.tensor(TOP_K_CHOICES, device=device)
    k = choices[torch.randint(0, len(TOP_K_CHOICES), (batch,), device=device)].clamp(max=vocab_size)
    k = torch.where(torch.rand(batch, device=device) < 0.3, torch.full_like(k, vocab_size), k)
    top_k = k.to(torch.int32)
    target = torch.rand(batch, device=device, dtype=torch.float64) * 0.48 + 0.5
    p = _snap_top_p(logits, top_k, target)
    p = torch.where(torch.rand(batch, device=device) < 0.25, torch.ones_like(p), p)
    return {"logits": logits, "top_k": top_k, "top_p": p.to(torch.float32)}
