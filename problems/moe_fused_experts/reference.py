"""Fused MoE experts (SwiGLU experts, top-k weighted combine).

For every token t and slot j (e = topk_ids[t, j], w = topk_weights[t, j]):
    h      = w1[e] @ hidden[t]                  [2I]   rows [0, I) are the gate, rows [I, 2I) the up projection
    a      = silu(h[:I]) * h[I:]                [I]
    y      = w2[e] @ a                          [H]
    out[t] = sum_j w * y
Inputs:
    hidden        [T, H]        bfloat16 (float16/float32 in smoke shapes)
    w1            [E, 2*I, H]   same dtype (gate rows then up rows)
    w2            [E, H, I]     same dtype
    topk_weights  [T, k]        float32
    topk_ids      [T, k]        int32, values in [0, E); the k ids of a token are distinct
    w1_scale      [E, ceil(2I/bn), ceil(H/bk)]  optional (default None): w1 holds block-quantised values
                                (fp8 e4m3, fn or fnuz), one fp32 scale per [bn, bk] block of each expert
    w2_scale      [E, ceil(H/bn), ceil(I/bk)]   optional, with w1_scale: the same for w2
    a1_scale      [T, ceil(H/g)]                optional: hidden holds values quantised per token and group
                                of g columns (fp8), one fp32 scale each
    Block sizes come from the scale shapes: the power of two whose ceil-division of the axis gives the
    scale's extent (128 for DeepSeek-V3-style 128 x 128 blocks).
Output:
    out           [T, H]        dtype of hidden, or `out_dtype` (init, a dtype name such as "float32")
Precision: both GEMMs run in the input dtype with fp32 accumulation (torch matmul), the activation is
computed in promote(dtype, float32) and rounded back to the input dtype before the down projection (as
fused kernels do), and the top-k combine is done in promote(dtype, float32). With float64 inputs every
step is float64.
With scales (or weights of another dtype than hidden), the dequantised operands (value x its scale) are
multiplied in promote(dtype, float32); the activation is rounded to the input dtype as above, except for
fp8 activations, where it stays in promote(dtype, float32) (nothing requantises it).
The eager reference loops over the experts that received at least one token; it dequantises only their
weights, one expert at a time.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, out_dtype: str | None = None):
        super().__init__()
        self.out_dtype = out_dtype  # the output's dtype name ("float32"); default: the input's dtype

    def forward(self, hidden, w1, w2, topk_weights, topk_ids, w1_scale=None, w2_scale=None, a1_scale=None):
        T, H = hidden.shape
        E, two_i, _ = w1.shape
        inter = two_i // 2
        k = topk_ids.shape[1]
        dt = hidden.dtype
        fp8 = dt.itemsize == 1                                             # fp8 activations
        ct = torch.float32 if fp8 else torch.promote_types(dt, torch.float32)
        scaled = (fp8 or w1_scale is not None or w2_scale is not None or a1_scale is not None
                  or w1.dtype != dt or w2.dtype != dt)
        act_dt = ct if fp8 else dt                                         # nothing requantises fp8 activations

        flat_ids = topk_ids.reshape(-1).to(torch.int64)                  # [T*k], pair p = t*k + j
        order = torch.argsort(flat_ids, stable=True)                       # pairs grouped by expert
        counts = torch.bincount(flat_ids, minlength=E).tolist()            # one host sync
        x = hidden
        if scaled:
            x = hidden.to(ct)
            if a1_scale is not None:
                x = x * _expand(a1_scale.to(ct), (T, H), row_scales=False)
        x_sorted = x[order // k]                                           # [T*k, H]
        w_sorted = topk_weights.reshape(-1).to(ct)[order]                  # [T*k]

        y_sorted = torch.empty(T * k, H, dtype=ct, device=hidden.device)
        start = 0
        for e, cnt in enumerate(counts):
            if cnt == 0:
                continue
            end = start + cnt
            w1e = _dequantised(w1[e], w1_scale[e] if w1_scale is not None else None, ct) if scaled else w1[e]
            h = x_sorted[start:end] @ w1e.t()                              # [cnt, 2I]
            a = (F.silu(h[:, :inter].to(ct)) * h[:, inter:].to(ct)).to(act_dt)
            if scaled:
                y = a.to(ct) @ _dequantised(w2[e], w2_scale[e] if w2_scale is not None else None, ct).t()
            else:
                y = a @ w2[e].t()                                          # [cnt, H]
            y_sorted[start:end] = y.to(ct) * w_sorted[start:end, None]
            start = end

        y_pairs = torch.empty_like(y_sorted)
        y_pairs[order] = y_sorted
        out = y_pairs.view(T, k, H).sum(dim=1)                             # fixed-order sum over slots
        return out.to(getattr(torch, self.out_dtype) if self.out_dtype else dt)


def _block(size, groups):
    """The power-of-two block (at least 16) whose ceil-division of `size` gives `groups` scales."""
    if groups < 1:
        raise ValueError("a scale tensor without groups")
    block = 16
    while -(-size // block) > groups:
        block *= 2
    if -(-size // block) != groups:
        raise ValueError(f"{groups} scale groups do not tile {size} in power-of-two blocks")
    return block


def _expand(scale, shape, row_scales=True):
    """A [rows/bn, cols/bk] (or, row_scales False, [rows, cols/g]) scale grid expanded to `shape`."""
    rows, cols = shape
    if row_scales:
        scale = scale.repeat_interleave(_block(rows, scale.shape[0]), dim=0)[:rows]
    return scale.repeat_interleave(_block(cols, scale.shape[1]), dim=1)[:, :cols]


def _dequantised(w, scale, ct):
    """One expert's weight matrix as values times their block scales, in ct."""
    w = w.to(ct)
    return w if scale is None else w * _expand(scale.to(ct), tuple(w.shape))


def _used_experts(topk_ids, num_experts):
    return int(torch.bincount(topk_ids.reshape(-1).to(torch.int64), minlength=num_experts).gt(0).sum())


def roofline_flops(inputs, outputs, **_):
    """2*T*k*(H*2I + I*H) for the two GEMMs plus the SwiGLU (~4 per intermediate element) and the
    weighted combine (2 per output element per slot)."""
    T, H = inputs["hidden"].shape
    _, two_i, _ = inputs["w1"].shape
    inter = two_i // 2
    k = inputs["topk_ids"].shape[1]
    return 2 * T * k * (H * two_i + inter * H) + 4 * T * k * inter + 2 * T * k * H


def roofline_bytes(inputs, outputs, **_):
    """Hidden, routing tensors, and the weights (with their block scales) of only the experts that receive at
    least one token, the activation scales; the output written once."""
    hidden, w1, w2 = inputs["hidden"], inputs["w1"], inputs["w2"]
    used = _used_experts(inputs["topk_ids"], w1.shape[0])
    per_expert = w1[0].numel() * w1.element_size() + w2[0].numel() * w2.element_size()
    for name in ("w1_scale", "w2_scale"):
        scale = inputs.get(name)
        if scale is not None:
            per_expert += scale[0].numel() * scale.element_size()
    read = (hidden.numel() * hidden.element_size() + used * per_expert
            + inputs["topk_weights"].numel() * inputs["topk_weights"].element_size()
            + inputs["topk_ids"].numel() * inputs["topk_ids"].element_size())
    if inputs.get("a1_scale") is not None:
        read += inputs["a1_scale"].numel() * inputs["a1_scale"].element_size()
    out = outputs if isinstance(outputs, torch.Tensor) else hidden
    written = hidden.numel() * out.element_size()
    return read, written
