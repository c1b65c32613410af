"""Decompositions the compiler seed adds to inductor's own, so that more references lower to Triton.

Inductor keeps some aten ops as calls into a library (`extern_kernels.*`), which a seed cannot own. Where such an
op has a cheap formulation in ops inductor fuses into its own kernels, the capture decomposes it first:

- a depthwise convolution (groups = input channels = output channels, not transposed, 1-D or 2-D, at most
  `MAX_TAPS` taps) is a sum over its taps of a strided slice of the padded input times one weight per channel,
  accumulated in float32 as a convolution library does; inductor fuses it (with the bias and whatever follows)
  into one pointwise kernel.

- any other convolution (dense or grouped, not transposed, 1-D or 2-D, at most `MAX_TAPS` taps) is a matrix
  product over its windows: the strided slices of the padded input for each tap are stacked beside the input
  channels (an im2col copy inductor writes as its own kernel) and multiplied by the weight viewed as
  [groups, out per group, in per group x taps]; inductor calls a library GEMM for that product, which the seed
  computes with its own (`seed_gemm.py`). The windows cost `taps` times the input's memory: a real start for
  the loop to improve, not a fast convolution.

- a top-k of a floating tensor with k at most `MAX_TOPK` is k rounds of selection along the dimension: each
  round takes the largest value not yet taken (NaN first, as torch.topk ranks it) and the first position
  holding it, then marks that position taken. Each round is a pair of row reductions inductor writes as its
  own kernels, so the seed owns the whole computation; its cost grows with k (k passes over the row), which is
  the loop's to improve. Ties go to the lower index; `sorted=False` gets the sorted order (any order is allowed).
  A wider top-k, or one of integers, is the first k places of the ranking below (the same values, ties and NaN
  order), n comparisons an element whatever k is.

- a sort (of any real dtype: floating, integer or bool) is a ranking: each element's place is the number of
  elements ahead of it (larger for a descending sort, smaller for an ascending one; NaN ahead of every number when
  descending and behind when ascending, as torch.sort places it; equal values keep their order: a stable sort),
  computed as one row reduction of comparisons that inductor writes as its own kernel, and the values and indices
  are scattered to their places. That costs n comparisons an element (n^2 a row, no n x n tensor is formed): a
  real starting point for references that sort (top-p filters), not a fast sort. A median is the lower middle
  place of that ranking (the index of the first of equal values, as torch gives it on the CPU), or NaN at the
  first NaN's index for a slice holding one.

- a scatter without a reduction of int64 or bool values moves them in a carrier dtype inductor scatters in its
  own kernels: int64 as the bits of float64 (a bitcast view: no arithmetic touches them), bool as uint8. On a GPU
  inductor leaves int64 and bool scatters to ATen (an atomic-add limit that a plain scatter, which adds nothing,
  does not have), and does not on the CPU: the same rewrite on both keeps a seed checked on the CPU the same
  program on the GPU (a sort's indices are such a scatter).

- the ops whose output size depends on the data (repeat_interleave, nonzero, masked_select, boolean indexing,
  bincount, unique) are in `seed_data_dependent.py`.

Every decomposition returns `NotImplemented` for the cases it does not cover, which leaves the op to inductor.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

import torch
import torch.nn.functional as F

MAX_TAPS = 64  # taps of a depthwise kernel (all spatial dimensions together) still unrolled into a sum
MAX_TOPK = 64  # rounds of selection a top-k is still unrolled into


def depthwise_convolution(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, stride: Any,
                          padding: Any, dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Any:
    """aten.convolution for a depthwise convolution as a sum of shifted slices; NotImplemented otherwise."""
    spatial = input.dim() - 2
    if transposed or spatial not in (1, 2) or weight.dim() != input.dim():
        return NotImplemented
    channels = input.shape[1]
    # One input channel per group and one output channel per group (symbolic sizes compare without a guard
    # when they are the same symbol, as in `groups=weight.shape[0]`).
    if weight.shape[1] != 1 or weight.shape[0] != groups or channels != groups or groups == 1:
        return NotImplemented
    taps = [int(t) for t in weight.shape[2:]]
    if _count(taps) > MAX_TAPS:
        return NotImplemented
    w = weight.float()
    # Sizes stay symbolic (a traced program serves every length); only the taps are unrolled.
    _, windows = _tap_windows(_padded(input, padding).float(), taps, stride, dilation)
    out: torch.Tensor | None = None
    for offsets, window in zip(itertools.product(*(range(t) for t in taps)), windows):
        tap = w[(slice(None), 0) + offsets].reshape([1, channels] + [1] * spatial)
        term = window * tap
        out = term if out is None else out + term
    assert out is not None  # at least one tap
    if bias is not None:
        out = out + bias.float().reshape([1, channels] + [1] * spatial)
    return out.to(input.dtype)


def _tap_windows(x: torch.Tensor, taps: list[int], stride: Any, dilation: Any) -> tuple[list[Any], list[torch.Tensor]]:
    """The output's spatial sizes and, per tap (in the weight's order), the strided slice of the padded input
    `x` that tap multiplies."""
    spatial = len(taps)
    sizes = [(x.shape[2 + d] - int(dilation[d]) * (taps[d] - 1) - 1) // int(stride[d]) + 1 for d in range(spatial)]
    windows = []
    for offsets in itertools.product(*(range(t) for t in taps)):
        window = x
        for d, k in enumerate(offsets):
            start = k * int(dilation[d])
            end = start + (sizes[d] - 1) * int(stride[d]) + 1
            window = window.narrow(2 + d, start, end - start)
            if int(stride[d]) != 1:
                index = [slice(None)] * window.dim()
                index[2 + d] = slice(None, None, int(stride[d]))
                window = window[tuple(index)]
        windows.append(window)
    return sizes, windows


def _padded(input: torch.Tensor, padding: Any) -> torch.Tensor:  # noqa: A002
    pads: list[int] = []
    for p in reversed([int(p) for p in padding]):  # F.pad takes the last dimension first
        pads += [p, p]
    return F.pad(input, pads)


def convolution_as_products(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,  # noqa: A002
                            stride: Any, padding: Any, dilation: Any, transposed: bool, output_padding: Any,
                            groups: int) -> Any:
    """aten.convolution: a depthwise one as a sum over its taps, any other as a GEMM over its windows (im2col);
    NotImplemented for a transposed convolution, more than 2 spatial dimensions or more than MAX_TAPS taps."""
    depthwise = depthwise_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                                      groups)
    if depthwise is not NotImplemented:
        return depthwise
    spatial = input.dim() - 2
    if transposed or spatial not in (1, 2) or weight.dim() != input.dim():
        return NotImplemented
    taps = [int(t) for t in weight.shape[2:]]
    if _count(taps) > MAX_TAPS:
        return NotImplemented
    batch, channels = input.shape[0], input.shape[1]
    out_channels = weight.shape[0]
    sizes, windows = _tap_windows(_padded(input, padding), taps, stride, dilation)
    # [batch, groups, in per group, taps, positions]: each group's input channels beside their taps, as the
    # weight's [out, in per group, *taps] flattens
    cols = torch.stack([w.reshape(batch, groups, channels // groups, -1) for w in windows], dim=3)
    cols = cols.reshape(batch, groups, (channels // groups) * len(windows), -1)
    kernel = weight.reshape(groups, out_channels // groups, -1)
    out = torch.matmul(kernel.unsqueeze(0), cols)  # [batch, groups, out per group, positions]
    out = out.reshape([batch, out_channels] + sizes)
    if bias is not None:
        out = out + bias.reshape([1, out_channels] + [1] * spatial)
    return out


def _count(taps: list[int]) -> int:
    count = 1
    for t in taps:
        count *= t
    return count


def selection_topk(input: torch.Tensor, k: int, dim: int = -1, largest: bool = True,
                   sorted: bool = True) -> Any:  # noqa: A002 - aten.topk's own argument names
    """aten.topk as k rounds of selection (values, int64 indices), or the first k of the stable ranking for k
    above MAX_TOPK or an integer or bool tensor (no float key holds every int64 exactly); NotImplemented for a
    symbolic k, a k longer than the dimension or a complex tensor."""
    if not isinstance(k, int) or k <= 0 or input.is_complex() or input.dim() == 0:
        return NotImplemented
    if k > MAX_TOPK or not input.is_floating_point():
        if k > input.shape[dim]:
            return NotImplemented  # torch.topk's own error
        ranked = rank_sort(input, dim, descending=largest)
        return tuple(t.narrow(dim, 0, k) for t in ranked)
    dim = dim % input.dim()
    key = input.float() if largest else -input.float()
    n = input.shape[dim]
    view = [1] * input.dim()
    view[dim] = -1
    index = torch.arange(n, device=input.device).view(view)
    nan = torch.isnan(key)
    taken = torch.zeros_like(key, dtype=torch.bool)
    values, indices = [], []
    for _ in range(k):
        free = ~taken
        best = torch.where(free & ~nan, key, float("-inf")).amax(dim, keepdim=True)
        number = free & ~nan & (key == best)
        if largest:  # NaN outranks every number
            free_nan = free & nan
            hit = torch.where(free_nan.any(dim, keepdim=True), free_nan, number)
        else:  # and so comes after every number when the smallest are wanted
            hit = torch.where(number.any(dim, keepdim=True), number, free & nan)
        position = torch.where(hit, index, n).amin(dim, keepdim=True)
        values.append(torch.gather(input, dim, position))
        indices.append(position)
        taken = taken | (index == position)
    return torch.cat(values, dim), torch.cat(indices, dim)


def rank_sort(input: torch.Tensor, dim: int = -1, descending: bool = False) -> Any:  # noqa: A002
    """aten.sort as a stable ranking (values, int64 indices); NotImplemented for a complex tensor or a scalar."""
    if input.is_complex() or input.dim() == 0:
        return NotImplemented
    dim = dim % input.dim()
    n = input.shape[dim]
    x = input.movedim(dim, -1)
    mine, other = x.unsqueeze(-1), x.unsqueeze(-2)  # [..., n, 1] the element ranked, [..., 1, n] the rest
    position = torch.arange(n, device=input.device)
    ahead = (other > mine) if descending else (other < mine)
    tie = other == mine
    if input.is_floating_point():  # NaN: ahead of every number when descending, behind when ascending
        nan_mine, nan_other = torch.isnan(mine), torch.isnan(other)
        ahead = ahead | ((nan_other & ~nan_mine) if descending else (nan_mine & ~nan_other))
        tie = tie | (nan_other & nan_mine)
    rank = (ahead | (tie & (position.view(1, n) < position.view(n, 1)))).sum(-1)
    values = torch.empty_like(x).scatter(-1, rank, x)
    indices = torch.empty(x.shape, dtype=torch.int64, device=input.device).scatter(-1, rank,
                                                                                   position.expand(x.shape))
    return values.movedim(-1, dim), indices.movedim(-1, dim)


def _rank_sort_stable(input: torch.Tensor, *, stable: bool | None = None, dim: int = -1,  # noqa: A002
                      descending: bool = False) -> Any:
    return rank_sort(input, dim, descending)


def median_by_rank(input: torch.Tensor, dim: int, keepdim: bool = False) -> Any:  # noqa: A002
    """aten.median.dim (the lower median and its index) from the stable ranking; NotImplemented for other than
    a floating tensor of at least one dimension."""
    if not input.is_floating_point() or input.dim() == 0:
        return NotImplemented
    dim = dim % input.dim()
    n = input.shape[dim]
    values, indices = rank_sort(input, dim)
    value, index = values.narrow(dim, (n - 1) // 2, 1), indices.narrow(dim, (n - 1) // 2, 1)
    nan = torch.isnan(input)
    position = torch.arange(n, device=input.device).view([-1] + [1] * (input.dim() - 1 - dim))
    first_nan = torch.where(nan, position, n).amin(dim, keepdim=True)
    has_nan = first_nan < n
    value = torch.where(has_nan, torch.full_like(value, float("nan")), value)
    index = torch.where(has_nan, first_nan, index)
    return (value, index) if keepdim else (value.squeeze(dim), index.squeeze(dim))


def whole_median_by_rank(input: torch.Tensor) -> Any:  # noqa: A002
    """aten.median.default: the lower median of all elements."""
    if not input.is_floating_point() or input.numel() == 0:
        return NotImplemented
    return median_by_rank(input.reshape(-1), 0)[0]


SCATTER_CARRIERS = {torch.int64: torch.float64, torch.bool: torch.uint8}


def scatter_in_a_carrier(input: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> Any:  # noqa: A002
    """aten.scatter.src of int64 or bool values through their carrier dtype; NotImplemented otherwise."""
    carrier = SCATTER_CARRIERS.get(src.dtype)
    if carrier is None or input.dtype != src.dtype:
        return NotImplemented
    if src.dtype == torch.bool:
        return torch.scatter(input.to(carrier), dim, index, src.to(carrier)) != 0
    return torch.scatter(input.view(carrier), dim, index, src.view(carrier)).view(src.dtype)


def seed_decompositions() -> dict[Any, Callable[..., Any]]:
    """Inductor's decomposition table with the seed's additions."""
    from torch._inductor.decomposition import select_decomp_table

    from aka_tui.agent import seed_data_dependent as sized
    from aka_tui.agent import seed_reductions as reductions

    table = dict(select_decomp_table())
    table[torch.ops.aten.convolution.default] = convolution_as_products
    table[torch.ops.aten.topk.default] = selection_topk
    table[torch.ops.aten.sort.default] = rank_sort
    table[torch.ops.aten.sort.stable] = _rank_sort_stable
    table[torch.ops.aten.median.dim] = median_by_rank
    table[torch.ops.aten.median.default] = whole_median_by_rank
    table[torch.ops.aten.scatter.src] = scatter_in_a_carrier
    table[torch.ops.aten.repeat_interleave.Tensor] = sized.repeated_indices
    table[torch.ops.aten.nonzero.default] = sized.nonzero_by_search
    table[torch.ops.aten.masked_select.default] = sized.masked_select_by_search
    table[torch.ops.aten.index.Tensor] = sized.index_by_coordinates
    table[torch.ops.aten.index_put.default] = sized.index_put_by_coordinates
    table[torch.ops.aten.bincount.default] = sized.counts_by_atomic_adds
    table[torch.ops.aten._unique2.default] = sized.unique_by_rank
    table[torch.ops.aten.slice.Tensor] = sized.slice_by_positions
    table[torch.ops.aten.scatter_reduce.two] = reductions.scatter_reduce_by_comparison
    table[torch.ops.aten.index_reduce.default] = reductions.index_reduce_by_comparison
    table[torch.ops.aten.kthvalue.default] = reductions.kthvalue_by_rank
    table[torch.ops.aten.histc.default] = reductions.histc_by_adds
    table[torch.ops.aten._cdist_forward.default] = reductions.cdist_directly
    table[torch.ops.aten._embedding_bag_forward_only.default] = reductions.embedding_bag_by_adds
    table[torch.ops.aten._embedding_bag.default] = reductions.embedding_bag_by_adds
    return table
