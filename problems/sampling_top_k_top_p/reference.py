"""Per-row top-k then top-p (nucleus) filtering of logits, as applied by an LLM sampler.

Semantics (value-threshold rules, canonical under ties)
--------------------------------------------------------
For each row with logits ``x`` (temperature already applied), integer ``k = top_k[b]`` and float
``p = top_p[b]``:

1. top-k: let ``t_k`` be the k-th largest value of ``x`` (counting duplicates). Keep every entry with
   ``x >= t_k`` -- **all entries tied with the k-th largest value are kept**, so more than k entries can
   survive. ``k >= vocab`` disables top-k. ``1 <= k``.
2. top-p on the survivors of step 1: ``P = softmax(x over the survivors)``; sort the survivors by value,
   descending, and let ``C_j`` be the inclusive cumulative sum of P in that order; let ``r`` be the first
   position with ``C_r >= p`` and ``t_p`` the value at position r. Keep the survivors with ``x >= t_p``
   (again every entry tied with the boundary value is kept; the kept set does not depend on how ties are
   ordered). If no position reaches p (rounding), all survivors are kept. ``p >= 1`` disables top-p;
   ``0 < p``.

The top entry always survives. Output: ``x`` where kept, ``-inf`` elsewhere (kept values are returned
unchanged, bit-exact). Probabilities are computed in ``torch.promote_types(logits.dtype, float32)``.
``input.py`` places each top_p value in the middle of the cumulative-probability span of a boundary value
(group of tied tokens), so rounding differences between an fp32 kernel and the fp64 reference cannot move
the boundary.

Inputs
------
logits  [batch, vocab]  float32 (fp16/bf16/fp64 also accepted)
top_k   [batch]         int32, or None: every row takes the init argument ``top_k`` (None there: top-k off)
top_p   [batch]         float32, or None: every row takes the init argument ``top_p`` (None there: top-p off)

Init kwargs: vocab_size (informational), top_k (int) and top_p (float), both optional: one setting for every
row, as a sampler configured once applies it (a filter with only one of the two leaves the other off);
renormalize (bool, default True): with False, step 2's P is the softmax over the whole row, not over the top-k
survivors (a sampler that sorts the full distribution once and masks both ways in it).

Output
------
out     [batch, vocab], dtype of logits
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab_size: int | None = None, top_k: int | None = None, top_p: float | None = None,
                 renormalize: bool = True):
        super().__init__()
        self.vocab_size = vocab_size
        self.top_k = top_k
        self.top_p = top_p
        self.renormalize = bool(renormalize)

    def forward(self, logits, top_k=None, top_p=None):
        B, V = logits.shape
        if top_k is None:
            top_k = torch.full((B,), V if self.top_k is None else self.top_k, device=logits.device)
        if top_p is None:
            top_p = torch.full((B,), 1.0 if self.top_p is None else self.top_p, device=logits.device)
        cdt = torch.promote_types(logits.dtype, torch.float32)
        x = logits.to(cdt)
        s = torch.sort(x, dim=-1, descending=True).values                      # [B, V]
        k = top_k.long().clamp(1, V)
        t_k = s.gather(1, (k - 1)[:, None])                                    # [B, 1]
        s_masked = s.masked_fill(s < t_k, float("-inf"))
        probs = torch.softmax(s_masked if self.renormalize else s, dim=-1)
        cum = torch.cumsum(probs, dim=-1)
        pp = top_p.to(cdt)[:, None]
        r = (cum < pp).sum(dim=-1, keepdim=True).clamp(max=V - 1)             # first index with cum >= p
        t_p = s_masked.gather(1, r)
        # p >= 1 disables top-p; if rounding kept cum below p everywhere, t_p is -inf (keeps all survivors)
        t_p = torch.where(pp >= 1, torch.full_like(t_p, float("-inf")), t_p)
        thresh = torch.maximum(t_k, t_p)
        return logits.masked_fill(x < thresh, float("-inf"))
