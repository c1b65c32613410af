"""The compiler seed's decompositions of reductions inductor leaves to the library (the table is
`seed_decompositions.seed_decompositions`), so that they become the candidate's own kernels:

- a scatter_reduce (sum, prod, mean, amax, amin; with or without the destination's own values) and an
  index_reduce (the same over whole slices picked by a 1-D index) compare every target position with every
  index: each target reduces the sources that name it, one fused reduction inductor writes itself. Targets no
  index names keep their values. That is positions x indices comparisons: a real start, not a fast one;
- a kthvalue is the k-th of the stable ranking (`seed_decompositions.rank_sort`);
- a histc is adds at each element's bin (the bin as CUDA's kernel computes it, elements outside the range
  counted nowhere, the maximum in the last bin); with no range given, the data's minimum and maximum;
- a cdist is the p-norm of the pairwise differences, one reduction over the feature axis (no GEMM: the direct
  form, exact where the library's GEMM form for p = 2 rounds);
- an embedding_bag (sum or mean, per-sample weights, a padding index) gathers the rows and adds each into its bag
  (fp32 atomic adds; a bag is the last offset at or before the row), the mean over the rows kept.

Every decomposition returns `NotImplemented` for the cases it does not cover, which leaves the op to inductor.
"""

from __future__ import annotations

from typing import Any

import torch

from aka_tui.agent.seed_decompositions import rank_sort

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _neutral(reduce: str, dtype: torch.dtype) -> float | int | bool:
    """The value a position contributes to `reduce` where its index names another target."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.is_floating_point:
        return float("-inf") if reduce == "amax" else float("inf")
    info = torch.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def scatter_reduce_by_comparison(input: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor,  # noqa: A002
                                 reduce: str, *, include_self: bool = True) -> Any:
    """aten.scatter_reduce.two: target t along `dim` reduces src where index == t; NotImplemented for a scalar, a
    complex or boolean tensor, or an unknown reduction."""
    if (reduce not in _REDUCTIONS or input.dim() == 0 or input.is_complex() or input.dtype == torch.bool
            or index.numel() == 0):
        return NotImplemented
    dim = dim % input.dim()
    src = src[tuple(slice(0, size) for size in index.shape)]  # the part the index covers
    region = tuple(slice(None) if d == dim else slice(0, size) for d, size in enumerate(index.shape))
    base = input[region].movedim(dim, -1)  # [..., targets]
    names = index.movedim(dim, -1).unsqueeze(-2)  # [..., 1, sources]
    values = src.movedim(dim, -1).unsqueeze(-2)
    targets = torch.arange(base.shape[-1], device=input.device).view(-1, 1)
    hit = names == targets  # [..., targets, sources]
    picked = torch.where(hit, values, torch.full_like(values, _neutral(reduce, src.dtype)))
    count = hit.sum(-1)
    touched = count > 0
    wider = torch.promote_types(src.dtype, torch.float32) if src.is_floating_point() else torch.int64
    if reduce in ("sum", "mean"):
        acc = picked.sum(-1, dtype=wider)
    elif reduce == "prod":
        acc = picked.prod(-1, dtype=wider)
    else:
        acc = picked.amax(-1) if reduce == "amax" else picked.amin(-1)
    wide = base.to(acc.dtype)
    if reduce == "sum":
        out = wide + acc if include_self else torch.where(touched, acc, wide)
    elif reduce == "prod":
        out = wide * acc if include_self else torch.where(touched, acc, wide)
    elif reduce == "mean":
        total, n = (wide + acc, count + 1) if include_self else (acc, count.clamp(min=1))
        mean = total / n if base.is_floating_point() else torch.div(total, n, rounding_mode="floor")
        out = torch.where(touched, mean, wide)
    else:
        both = torch.maximum(wide, acc) if reduce == "amax" else torch.minimum(wide, acc)
        out = torch.where(touched, both if include_self else acc, wide)
    out = out.to(input.dtype).movedim(-1, dim)
    if out.shape == input.shape:
        return out
    whole = input.clone()
    whole[region] = out
    return whole


def index_reduce_by_comparison(input: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor,  # noqa: A002
                               reduce: str, *, include_self: bool = True) -> Any:
    """aten.index_reduce: slice index[j] along `dim` reduces source's slice j, the scatter_reduce of the index
    broadcast over the slices."""
    if index.dim() != 1 or input.dim() == 0:
        return NotImplemented
    dim = dim % input.dim()
    shape = [1] * source.dim()
    shape[dim] = index.numel()
    names = index.view(shape).expand(source.shape)
    return scatter_reduce_by_comparison(input, dim, names, source, reduce, include_self=include_self)


def kthvalue_by_rank(input: torch.Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:  # noqa: A002
    """aten.kthvalue (the k-th smallest and its index) from the stable ranking."""
    if input.dim() == 0 or input.is_complex():
        return NotImplemented
    dim = dim % input.dim()
    values, indices = rank_sort(input, dim)
    value, index = values.narrow(dim, k - 1, 1), indices.narrow(dim, k - 1, 1)
    return (value, index) if keepdim else (value.squeeze(dim), index.squeeze(dim))


def histc_by_adds(input: torch.Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Any:  # noqa: A002
    """aten.histc: counts of the elements in each of `bins` equal bins over [min, max] (the data's own range
    where min == max), as a float tensor of the input's dtype."""
    if not input.is_floating_point() or bins <= 0:
        return NotImplemented
    x = input.reshape(-1)
    if min == max:
        lo, hi = x.amin(), x.amax()
        same = lo == hi
        lo, hi = torch.where(same, lo - 1, lo), torch.where(same, hi + 1, hi)
    else:
        lo, hi = torch.tensor(float(min), dtype=x.dtype, device=x.device), \
            torch.tensor(float(max), dtype=x.dtype, device=x.device)
    inside = (x >= lo) & (x <= hi)
    place = ((x - lo) * bins / (hi - lo)).to(torch.int64).clamp(0, bins - 1)
    counts = torch.zeros(bins, dtype=torch.float32, device=x.device)
    counts = counts.index_put((place,), inside.to(torch.float32), accumulate=True)
    return counts.to(input.dtype)


def cdist_directly(x1: torch.Tensor, x2: torch.Tensor, p: float, compute_mode: int | None = None) -> Any:
    """aten._cdist_forward: the p-norm of every pair's difference ([..., r1, r2]); p = 0 counts differing
    features, p = inf takes the largest."""
    if x1.dim() < 2 or x1.is_complex() or not x1.is_floating_point():
        return NotImplemented
    diff = (x1.unsqueeze(-2).float() - x2.unsqueeze(-3).float()).abs()  # [..., r1, r2, features]
    if p == 0:
        out = (diff != 0).sum(-1).float()
    elif p == float("inf"):
        out = diff.amax(-1)
    elif p == 1:
        out = diff.sum(-1)
    elif p == 2:
        out = (diff * diff).sum(-1).sqrt()
    else:
        out = diff.pow(p).sum(-1).pow(1.0 / p)
    return out.to(x1.dtype)


def embedding_bag_by_adds(weight: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor,
                          scale_grad_by_freq: bool = False, mode: int = 0, sparse: bool = False,
                          per_sample_weights: torch.Tensor | None = None, include_last_offset: bool = False,
                          padding_idx: int = -1) -> Any:
    """aten._embedding_bag_forward_only / _embedding_bag in sum (0) or mean (1) mode over 1-D indices: (the bags,
    each index's bag, each bag's size, zeros where max mode keeps its argmax); NotImplemented for max mode."""
    if mode not in (0, 1) or indices.dim() != 1 or offsets.dim() != 1:
        return NotImplemented
    bags = offsets.numel() - 1 if include_last_offset else offsets.numel()
    position = torch.arange(indices.numel(), device=indices.device)
    bag_of = torch.searchsorted(offsets[:bags].to(torch.int64), position, right=True) - 1
    keep = bag_of >= 0
    if include_last_offset:
        keep = keep & (position < offsets[-1])
    if padding_idx >= 0:
        keep = keep & (indices != padding_idx)
    rows = weight[indices].float()
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.float().unsqueeze(-1)
    rows = torch.where(keep.unsqueeze(-1), rows, torch.zeros_like(rows))
    target = torch.where(keep, bag_of, torch.zeros_like(bag_of))
    sums = torch.zeros(bags, weight.shape[-1], dtype=torch.float32, device=weight.device)
    sums = sums.index_put((target,), rows, accumulate=True)
    sizes = torch.zeros(bags, dtype=torch.int32, device=weight.device).index_put(  # int64 adds: a library call
        (target,), keep.to(torch.int32), accumulate=True).to(torch.int64)
    if mode == 1:
        sums = sums / sizes.clamp(min=1).unsqueeze(-1).float()
    return sums.to(weight.dtype), bag_of, sizes, torch.zeros_like(sizes)
