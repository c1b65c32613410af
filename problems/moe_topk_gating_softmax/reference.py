"""MoE router: softmax over expert logits, top-k selection, optional renormalisation.

Semantics (per token t):
    p[t, :]        = softmax(gating_output[t, :])               computed in compute dtype
    topk_ids[t, :] = the k experts with the largest logits, ordered by decreasing logit;
                     equal logits are ordered by LOWER expert id first (canonical tie-break)
    topk_weights[t, j] = p[t, topk_ids[t, j]]
    if renormalize:  topk_weights[t, :] /= sum_j topk_weights[t, j]

Selection is made on the logits themselves (softmax is strictly monotone, so this equals selecting on
the exact probabilities); a kernel should compare raw logits, not rounded probabilities, to reproduce
the ids bit-exactly.

Inputs:
    gating_output  [num_tokens, num_experts]  float32 or bfloat16 (float16/float32 in smoke shapes)
Init kwargs:
    top_k (int, 1 <= top_k <= num_experts), renormalize (bool)
Outputs (tuple):
    topk_weights   [num_tokens, top_k]  float32 (compute dtype = promote(input dtype, float32),
                                         i.e. float64 when the input is float64)
    topk_ids       [num_tokens, top_k]  int32
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, top_k: int = 2, renormalize: bool = True):
        super().__init__()
        self.top_k = int(top_k)
        self.renormalize = bool(renormalize)

    def forward(self, gating_output: torch.Tensor):
        ct = torch.promote_types(gating_output.dtype, torch.float32)
        logits = gating_output.to(ct)
        # Stable descending sort: among equal logits the lower expert id keeps the earlier position.
        _, order = torch.sort(logits, dim=-1, descending=True, stable=True)
        topk_ids = order[:, : self.top_k]
        probs = torch.softmax(logits, dim=-1)
        topk_weights = probs.gather(1, topk_ids)
        if self.renormalize:
            topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True)
        return topk_weights, topk_ids.to(torch.int32)


def roofline_flops(inputs, outputs, top_k: int = 2, renormalize: bool = True, **_):
    """Softmax (max, subtract, exp, sum, divide ~ 5 ops/element) plus the top-k pick and renormalisation."""
    t, e = inputs["gating_output"].shape
    return 5 * t * e + t * e + (2 * t * int(top_k) if renormalize else 0)
