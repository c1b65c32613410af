import torch
import torch.nn as nn


class Model(nn.Module):
    """Merge two partial attention results by their log-sum-exps (a prefix and a suffix pass)."""

    def forward(self, prefix_output, prefix_lse, suffix_output, suffix_lse):
        p_lse = torch.where(torch.isinf(prefix_lse), torch.full_like(prefix_lse, float("-inf")), prefix_lse)
        s_lse = torch.where(torch.isinf(suffix_lse), torch.full_like(suffix_lse, float("-inf")), suffix_lse)
        max_lse = torch.maximum(p_lse, s_lse)
        p = torch.exp(p_lse - max_lse)
        s = torch.exp(s_lse - max_lse)
        total = p + s
        out_lse = torch.log(total) + max_lse
        p_scale = (p / total).transpose(0, 1).unsqueeze(-1)
        s_scale = (s / total).transpose(0, 1).unsqueeze(-1)
        out = prefix_output.float() * p_scale + suffix_output.float() * s_scale
        return out.to(prefix_output.dtype), out_lse
