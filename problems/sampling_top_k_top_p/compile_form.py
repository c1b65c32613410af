"""The reference's semantics in a form torch.compile can compile: the cumulative sum over the vocabulary in
two levels.

Inductor (torch 2.11, H200) fails to generate code for the reference's single cumsum over a 151936-wide row
(its split scan: `InductorError: TypeError: list indices must be integers or slices, not NoneType`), while
sort, gather and the count compile. Here the row is cut into CHUNK-wide pieces: a cumsum inside each piece, a
cumsum of the pieces' totals, and their sum; every scan is short. Used only by the torch.compile baselines,
which check it against the reference before timing it.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

CHUNK = 128


def _chunked_cumsum(x: torch.Tensor) -> torch.Tensor:
    """Inclusive cumsum along the last axis of a [B, V] tensor, as two short scans."""
    B, V = x.shape
    padded = F.pad(x, (0, -V % CHUNK))
    pieces = padded.view(B, -1, CHUNK)
    inner = torch.cumsum(pieces, dim=-1)
    before = torch.cumsum(inner[..., -1], dim=-1) - inner[..., -1]
    return (inner + before[..., None]).view(B, -1)[:, :V]


class Model(nn.Module):
    def __init__(self, vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, logits, top_k, top_p):
        B, V = logits.shape
        cdt = torch.promote_types(logits.dtype, torch.float32)
        x = logits.to(cdt)
        s = torch.sort(x, dim=-1, descending=True).values
        k = top_k.long().clamp(1, V)
        t_k = s.gather(1, (k - 1)[:, None])
        s_masked = s.masked_fill(s < t_k, float("-inf"))
        cum = _chunked_cumsum(torch.softmax(s_masked, dim=-1))
        pp = top_p.to(cdt)[:, None]
        r = (cum < pp).sum(dim=-1, keepdim=True).clamp(max=V - 1)
        t_p = s_masked.gather(1, r)
        t_p = torch.where(pp >= 1, torch.full_like(t_p, float("-inf")), t_p)
        thresh = torch.maximum(t_k, t_p)
        return logits.masked_fill(x < thresh, float("-inf"))
