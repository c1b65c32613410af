"""The compiler seed's decompositions of ops whose output size depends on the data, so that inductor writes
them as its own kernels (the table is `seed_decompositions.seed_decompositions`). Each reads the size back on
the host, once, as the library call does (a data-dependent size is a host read either way):

- a repeat_interleave with a tensor of repeats (indices repeated) is a search of the running totals of the
  repeats;
- a nonzero (and so a masked_select) is the same search: the j-th nonzero element is where the running count
  of nonzero elements first exceeds j; the flat positions are unravelled into coordinates;
- boolean indexing and assignment (`x[mask]`, `x[mask] = v`) index with the mask's coordinates, an integer
  gather or scatter inductor writes itself (one broadcast value assigned is a select inductor writes already);
- a bincount is adds at the counted positions (int32 counts: exact in any order of the atomic adds; weighted:
  float32 for float32 weights, float64 otherwise, as the library's result), its length max(largest + 1,
  minlength);
- a unique (over all elements) is the stable ranking of `seed_decompositions.rank_sort`: the distinct values are
  the sorted elements that differ from their predecessor, each element's group the running count of those, a
  group's count adds of one into its group. n comparisons an element, as the sort: a real start, not a fast one;
- a slice whose bounds were read from the data (`x[:n]` with n from `.item()`) slices a gather of its whole
  input along that dimension: inductor cannot slice a view of its own computed values (a gather reshaped, say)
  at such bounds ("NotImplementedError: View", torch 2.13), and slices the gather; the slice itself stays
  the library's op, so its size is the same unbacked size the traced graph holds.

Every decomposition returns `NotImplemented` for the cases it does not cover, which leaves the op to inductor.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from aka_tui.agent.seed_decompositions import rank_sort


def repeated_indices(repeats: torch.Tensor, *, output_size: Any = None) -> Any:
    """aten.repeat_interleave.Tensor (index i repeated repeats[i] times) as a search: output j is the number of
    running totals of `repeats` at most j, for j below the total. The total is read back on the host where no
    `output_size` is given, as the library call does; NotImplemented for other than one dimension."""
    if repeats.dim() != 1:
        return NotImplemented
    ends = torch.cumsum(repeats, 0)
    if output_size is None:
        output_size = ends[-1].item() if repeats.numel() else 0
        torch._check(output_size >= 0)
    positions = torch.arange(output_size, device=repeats.device, dtype=ends.dtype)
    return torch.searchsorted(ends, positions, right=True).to(repeats.dtype)


def nonzero_by_search(input: torch.Tensor) -> Any:  # noqa: A002
    """aten.nonzero ([count, dims] coordinates of the nonzero elements, in row-major order): the flat positions
    are `repeated_indices` of the nonzero flags (each position repeated once if set, never if not), then
    unravelled; NotImplemented for a 0-d tensor."""
    if input.dim() == 0:
        return NotImplemented
    flat = repeated_indices((input != 0).reshape(-1).to(torch.int64))
    coordinates = []
    for size in reversed(input.shape):
        coordinates.append(flat % size)
        flat = flat // size
    return torch.stack(coordinates[::-1], dim=1)


def masked_select_by_search(input: torch.Tensor, mask: torch.Tensor) -> Any:  # noqa: A002
    """aten.masked_select: the elements where the (broadcast) mask is set, in row-major order."""
    values, mask = torch.broadcast_tensors(input, mask)
    index = nonzero_by_search(mask.reshape(-1))
    return values.reshape(-1)[index.reshape(-1)]


def unique_by_rank(input: torch.Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
                   return_counts: bool = False) -> Any:
    """aten._unique2 (torch.unique over all elements) from the stable ranking: the distinct values are the sorted
    elements that differ from their predecessor (found by `nonzero_by_search`, the count read on the host as
    the library reads it); each element's group is the running count of those firsts, scattered back to its
    place for the inverse; a group's count is adds of one into it. NaNs are distinct (NaN != NaN),
    as the library's are. The values come sorted either way, as a GPU gives them; NotImplemented for an empty
    or complex tensor."""
    if input.is_complex() or input.numel() == 0:
        return NotImplemented
    flat = input.reshape(-1)
    n = flat.numel()
    values, order = rank_sort(flat, 0)
    first = torch.cat([torch.ones(1, dtype=torch.bool, device=input.device), values[1:] != values[:-1]])
    starts = nonzero_by_search(first).reshape(-1)
    none = torch.empty(0, dtype=torch.int64, device=input.device)
    inverse = none
    group = torch.cumsum(first.to(torch.int64), 0) - 1
    if return_inverse:
        inverse = torch.empty(n, dtype=torch.int64, device=input.device).scatter(0, order, group).view(input.shape)
    counts = none
    if return_counts:  # adds into each group (int32: inductor leaves int64 adds to the library). Not the distances
        # between the starts: a slice of a tensor whose size is read from the data fails in torch 2.11's inductor
        # (KeyError 'unbacked_bindings', an H100, 2026-12-07) or gets a size torch cannot bind (u - 1)
        counts = torch.zeros(starts.shape[0], dtype=torch.int32, device=input.device).index_put(
            (group,), torch.ones_like(group, dtype=torch.int32), accumulate=True).to(torch.int64)
    return values[starts], inverse, counts


def _is_mask(index: torch.Tensor | None) -> bool:
    return index is not None and index.dtype in (torch.bool, torch.uint8)


def _coordinates(indices: list[torch.Tensor | None]) -> list[torch.Tensor | None]:
    """Indices with every boolean mask replaced by the coordinates of its set elements (a k-dimensional mask
    indexes k dimensions: k index tensors), found by `nonzero_by_search`."""
    out: list[torch.Tensor | None] = []
    for index in indices:
        if _is_mask(index):
            assert index is not None
            out.extend(nonzero_by_search(index).unbind(1))
        else:
            out.append(index)
    return out


def index_by_coordinates(input: torch.Tensor, indices: list[torch.Tensor | None]) -> Any:  # noqa: A002
    """aten.index.Tensor with boolean masks among its indices (`x[mask]`): the masks become coordinates, then the
    integer gather inductor writes itself; NotImplemented where no index is a mask."""
    if not any(_is_mask(index) for index in indices):
        return NotImplemented
    return torch.ops.aten.index.Tensor(input, _coordinates(indices))


def index_put_by_coordinates(input: torch.Tensor, indices: list[torch.Tensor | None],  # noqa: A002
                             values: torch.Tensor, accumulate: bool = False) -> Any:
    """aten.index_put with boolean masks among its indices and a value per selected element (`x[mask] = v`):
    the masks become coordinates; NotImplemented where no index is a mask or one value is broadcast (inductor
    writes that as a select itself)."""
    if not any(_is_mask(index) for index in indices) or values.numel() == 1:
        return NotImplemented
    return torch.ops.aten.index_put.default(input, _coordinates(indices), values, accumulate)


def counts_by_atomic_adds(input: torch.Tensor, weights: torch.Tensor | None = None,  # noqa: A002
                          minlength: int = 0) -> Any:
    """aten.bincount as adds at the counted positions (int32 counts, exact in any order; a weighted count in its
    result dtype, float32 for float32 weights and float64 otherwise, as the library's), the length read back on
    the host as the library reads it; NotImplemented for other than one dimension."""
    if input.dim() != 1:
        return NotImplemented
    index = input.to(torch.int64)
    # one host read of the length, max(largest + 1, minlength) (any number of elements, none included)
    size = torch.cat([index + 1, torch.full((1,), minlength, dtype=torch.int64, device=input.device)]).max().item()
    torch._check(size >= 0)
    if weights is None:
        counts = torch.zeros(size, dtype=torch.int32, device=input.device)
        return counts.index_add(0, index, torch.ones_like(index, dtype=torch.int32)).to(torch.int64)
    dtype = torch.float32 if weights.dtype == torch.float32 else torch.float64
    return torch.zeros(size, dtype=dtype, device=input.device).index_add(0, index, weights.to(dtype))


_SLICING = threading.local()  # set while the decomposition slices its gather (the op itself then, no recursion)


def slice_by_positions(x: torch.Tensor, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Any:
    """aten.slice.Tensor whose start, end or step holds a size read from the data, taken from a gather of its
    whole input along `dim` (an index_select of every position, which inductor slices at such bounds where it
    cannot slice a view of a computed value; a copy, clone included, did not do). NotImplemented (a view, as
    inductor slices) for any other slice."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    bounds = [b for b in (start, end, step) if isinstance(b, torch.SymInt)]
    if getattr(_SLICING, "on", False) or not any(free_unbacked_symbols(b) for b in bounds):
        return NotImplemented
    _SLICING.on = True
    try:
        dim = dim % x.dim()
        whole = torch.index_select(x, dim, torch.arange(x.shape[dim], device=x.device))
        return torch.ops.aten.slice.Tensor(whole, dim, start, end, step)
    finally:
        _SLICING.on = False
