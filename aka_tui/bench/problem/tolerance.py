"""Tolerances per dtype and the output comparison every candidate goes through."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import torch

from aka_tui.bench.problem.unsettled import integer_mismatch


@dataclass(frozen=True)
class Tolerance:
    """Element passes when |candidate - reference| <= atol + rtol * |reference|."""

    atol: float
    rtol: float


UNIT_RMS = 0.1
MIN_ATOL_FACTOR = 1e-3


def scaled_to(tol: Any, rms: float) -> Tolerance:
    """The tolerance `tol` (anything with `atol` and `rtol`) for an output whose reference has root-mean-square
    `rms` (`output_rms`).

    Tolerances are written for outputs of about unit scale. Below an RMS of `UNIT_RMS` the absolute part
    shrinks in proportion, so it never exceeds atol / UNIT_RMS × RMS (20% of the RMS for atol 0.02): otherwise
    an output far smaller than atol — an MoE layer's, a quantisation's scales — would pass whatever values a
    candidate returned. The floor keeps an all-zero reference from demanding exact zeros of float arithmetic.
    A plain function of the two numbers, not a method: the harness's comparisons never call into an object a
    candidate could have swapped."""
    factor = min(1.0, max(rms / UNIT_RMS, MIN_ATOL_FACTOR))
    return Tolerance(float(tol.atol) * factor, float(tol.rtol))


ROW_MIN = 32  # a last dimension shorter than this is no row: the output's RMS alone scales its atol


def row_length(shape: tuple[int, ...] | torch.Size) -> int:
    """The length of an output's rows (its last dimension) when the absolute tolerance is judged per row: two
    dimensions or more and at least `ROW_MIN` elements a row; else 0."""
    return int(shape[-1]) if len(shape) >= 2 and shape[-1] >= ROW_MIN else 0


def rows_rms(values: torch.Tensor, row: int, chunk: int = 1 << 24) -> torch.Tensor:
    """Root mean square of the finite values of each row of `row` elements (float64, one per row, computed in
    bounded chunks of whole rows)."""
    flat = values.detach().reshape(-1, row)
    step = max(1, chunk // row)
    parts = []
    for start in range(0, flat.shape[0], step):
        part = flat[start:start + step].to(torch.float64)
        finite = torch.isfinite(part)
        squares = torch.where(finite, part * part, torch.zeros_like(part)).sum(dim=1)
        parts.append((squares / finite.sum(dim=1).clamp_min(1)).sqrt())
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64, device=values.device)


def row_atol(written: Any, scaled: Tolerance, row_rms: torch.Tensor) -> torch.Tensor:
    """The absolute tolerance per row: the written atol scaled by the row's own RMS as `scaled_to` scales it by
    the output's, never below the output's (`scaled`) nor above the written one.

    An output's scale can vary along it: causal attention's first rows average a few values of unit scale, its
    last ones thousands (RMS ~0.04 over 16k keys). Scaled by the output's RMS alone, the atol of a first row
    was far below one rounding of its own terms (a faithful bf16 FlashAttention kernel failed one salted
    seed of a 16k-token sequence: error 0.002 on a row of scale 0.7, atol 0.0019). Rows never get more than
    the tolerance written for unit scale, and outputs small everywhere (an MoE layer's) keep the scaled one."""
    return (float(written.atol) * row_rms / UNIT_RMS).clamp(min=scaled.atol, max=float(written.atol))


def in_output_format(exact: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The float64 reference of an fp8 output rounded to that format, as the output itself is: its saturation
    and its NaN (e4m3fnuz turns magnitudes from 248 up into NaN, which a float64 value never is), so that a
    faithful kernel's output is compared with the nearest value the format holds. Other dtypes unchanged."""
    if dtype.is_floating_point and dtype.itemsize == 1 and exact.dtype != dtype:
        return exact.to(dtype)
    return exact


def output_rms(reference: torch.Tensor, chunk: int = 1 << 24) -> float:
    """Root mean square of a reference output's finite values (float64, in bounded chunks)."""
    flat = reference.detach().reshape(-1)
    total, count = 0.0, 0
    for start in range(0, flat.numel(), chunk):
        part = flat[start:start + chunk].to(torch.float64)
        finite = part[torch.isfinite(part)]
        total += float((finite * finite).sum().item())
        count += finite.numel()
    return (total / count) ** 0.5 if count else 0.0


# Defaults for problems that give none (Atrex-Bench directories). Chosen as ~4-8 ulps of each format at
# magnitude 1 for the low-precision types, looser than one rounding of the output but far below an error.
_DEFAULTS: dict[torch.dtype, Tolerance] = {
    torch.float64: Tolerance(1e-9, 1e-7),
    torch.float32: Tolerance(1e-4, 1e-4),
    torch.float16: Tolerance(5e-3, 5e-3),
    torch.bfloat16: Tolerance(2e-2, 2e-2),
    torch.float8_e4m3fn: Tolerance(0.125, 0.125),
    torch.float8_e5m2: Tolerance(0.25, 0.25),
    torch.float8_e4m3fnuz: Tolerance(0.125, 0.125),
    torch.float8_e5m2fnuz: Tolerance(0.25, 0.25),
}


def default_tolerance(dtype: torch.dtype) -> Tolerance:
    """Default tolerance of an output dtype (exact for integer and bool outputs)."""
    return _DEFAULTS.get(dtype, Tolerance(0.0, 0.0))


def flatten_outputs(value: Any) -> list[tuple[str, Any]]:
    """A forward result as named leaves: tensor -> [('out', t)], tuple -> out[0].., dict -> out[key].

    Dict leaves come in key order, so a candidate's dict is matched to the reference's by key, whatever
    order it was built in.
    """
    if isinstance(value, dict):
        return [(f"out[{k!r}]", value[k]) for k in sorted(value, key=str)]
    if isinstance(value, (tuple, list)):
        return [(f"out[{i}]", v) for i, v in enumerate(value)]
    return [("out", value)]


def structure_of(value: Any) -> str:
    if isinstance(value, dict):
        return f"dict{sorted(map(str, value))}"
    if isinstance(value, (tuple, list)):
        return f"sequence[{len(value)}]"
    return "tensor"


@dataclass(frozen=True)
class Comparison:
    """Outcome of comparing one candidate output against the reference."""

    ok: bool
    reason: str = ""
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    mismatch_fraction: float | None = None


def check_plain_container(value: Any) -> str | None:
    """A forward result's container must be a plain tuple, list or dict, with str or int keys: the harness reads the
    outputs by iterating it, so a subclass's `__iter__`/`__getitem__` (or a key's `__str__`/`__hash__`) would run the
    candidate's code after the dispatch audit and the timer (red-team case `lazy_output_tuple`). Checked before
    anything touches the container: `isinstance` trusts a spoofed `__class__`, `type` does not."""
    kind = type(value)
    if isinstance(value, (tuple, list, dict)) and kind not in (tuple, list, dict) and not _torch_return_type(kind):
        return f"output is {kind.__module__}.{kind.__qualname__}, not a plain tuple, list or dict"
    if kind is dict and any(type(key) not in (str, int) for key in value):
        return "output is a dict whose keys are not all plain str or int"
    return None


def _torch_return_type(kind: type) -> bool:
    """torch's own named tuples (`torch.topk(...)` returns `torch.return_types.topk`): the very class, not a
    look-alike that borrowed its name."""
    import torch.return_types

    return getattr(torch.return_types, kind.__name__, None) is kind


def check_plain_tensor(name: str, value: Any) -> str | None:
    """Outputs must be plain dense tensors: no subclasses, no sparse or lazy wrappers."""
    if type(value) is not torch.Tensor:
        return f"{name} is {type(value).__module__}.{type(value).__qualname__}, not a plain torch.Tensor"
    if value.layout != torch.strided:
        return f"{name} has layout {value.layout}, expected a dense strided tensor"
    return None


def compare_outputs(candidate: Any, reference_native: Any, reference_exact: Any, tolerance_for: Any,
                    max_mismatch_fraction: float, answers_for: Callable[[str], torch.Tensor | None] | None = None
                    ) -> Comparison:
    """Compare candidate outputs with the reference. `reference_native` fixes the expected structure, shapes, dtypes and device; `reference_exact` (the
    float64 run, or the native run when there is none) gives the values; `answers_for`, the reference's integer
    answers under input noise, for integer rows it does not settle (`unsettled.py`; exact without it).
    """
    container = check_plain_container(candidate)
    if container:
        return Comparison(False, container)
    if structure_of(candidate) != structure_of(reference_native):
        return Comparison(False, f"output structure {structure_of(candidate)} != reference {structure_of(reference_native)}")
    worst_abs = 0.0
    worst_rel = 0.0
    worst_mismatch = 0.0
    cand_leaves = flatten_outputs(candidate)
    for (name, cand), (_, ref_n), (_, ref_x) in zip(cand_leaves, flatten_outputs(reference_native),
                                                   flatten_outputs(reference_exact)):
        problem = check_plain_tensor(name, cand)
        if problem:
            return Comparison(False, problem)
        if tuple(cand.shape) != tuple(ref_n.shape):
            return Comparison(False, f"{name} shape {tuple(cand.shape)} != reference {tuple(ref_n.shape)}")
        if cand.dtype != ref_n.dtype:
            return Comparison(False, f"{name} dtype {cand.dtype} != reference {ref_n.dtype}")
        if cand.device != ref_n.device:
            return Comparison(False, f"{name} on {cand.device}, reference on {ref_n.device}")
        if cand.numel() == 0:
            continue
        if not (ref_n.is_floating_point() or ref_n.is_complex()):
            wrong_rows = integer_mismatch(name, cand, ref_x.to(cand.dtype), answers_for)
            if wrong_rows:
                return Comparison(False, wrong_rows)
            continue
        rounded = in_output_format(ref_x, ref_n.dtype)
        written = tolerance_for(cand.dtype)
        tol = scaled_to(written, output_rms(rounded))
        unrounded = ref_x if rounded is not ref_x else None
        leaf = _compare_floating(name, cand, rounded, tol, max_mismatch_fraction, unrounded, written)
        if leaf.max_abs_error is not None:
            worst_abs = max(worst_abs, leaf.max_abs_error)
            worst_rel = max(worst_rel, leaf.max_rel_error or 0.0)
            worst_mismatch = max(worst_mismatch, leaf.mismatch_fraction or 0.0)
        if not leaf.ok:
            return leaf
    return Comparison(True, "", worst_abs, worst_rel, worst_mismatch)


COMPARE_CHUNK_ELEMENTS = 1 << 24  # float64 temporaries per chunk stay near 128 MiB each, whatever the output size


@dataclass
class _LeafTally:
    """Running counts of one output compared chunk by chunk."""

    cand_nonfinite: int = 0
    cand_nonzero: bool = False
    ref_nonzero: bool = False
    ref_nonfinite: int = 0
    nonfinite_unreproduced: int = 0
    first_unreproduced: tuple[int, float, float] | None = None  # (flat index, got, expected)
    bad: int = 0
    first_bad: tuple[int, float, float] | None = None  # (flat index, got, expected)
    max_abs: float = 0.0
    max_rel: float = 0.0


_OVERFLOW_TO_NAN = (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)  # no inf: torch's cast gives NaN past the range
_SATURATING = (torch.float8_e4m3fn,)  # torch's cast clamps to +-448: a NaN there never came from overflow


def at_overflow_edge(c: torch.Tensor, r: torch.Tensor, x: torch.Tensor | None, tol: Tolerance,
                     fmt: torch.dtype) -> torch.Tensor:
    """Where a reference value that overflowed the output format is matched by the candidate's nearest code.

    Rounding to a narrow format turns the magnitudes past its largest finite value into inf (formats with
    one) or NaN (e4m3fnuz, e5m2fnuz). A faithful kernel whose sum differs from the reference's in the last
    bits lands one code lower, on +-max, exactly as it may land one code off anywhere else under the format's
    tolerance. So a candidate at +-max (same sign as an inf) matches such a value; where the unrounded float64
    reference `x` is known, only if it is within tolerance of it (saturating a value far past the range still
    fails). A NaN in a format that has inf, or in e4m3fn (whose cast saturates), is a true NaN and must be
    reproduced."""
    if fmt in _SATURATING:
        return torch.zeros_like(r, dtype=torch.bool)
    top = torch.finfo(fmt).max
    if fmt in _OVERFLOW_TO_NAN:
        edge = torch.isnan(r) & (c.abs() == top)
    else:
        edge = torch.isinf(r) & (c == torch.sign(r) * top)
    if x is None:
        return edge
    close = torch.isfinite(x) & ((c - x).abs() <= tol.atol + tol.rtol * x.abs())
    return edge & close


def overflow_threshold(fmt: torch.dtype) -> float:
    """The smallest magnitude a cast to `fmt` turns into its overflow code: halfway from the largest finite value
    to the next step of the format (248 in e4m3fnuz, 61440 in e5m2)."""
    info = torch.finfo(fmt)
    return float(info.max) + 2.0 ** math.floor(math.log2(info.max)) * float(info.eps) / 2


def past_overflow_edge(c: torch.Tensor, r: torch.Tensor, x: torch.Tensor | None, tol: Tolerance,
                       fmt: torch.dtype) -> torch.Tensor:
    """Where the candidate's overflow code stands for a reference value at the format's largest finite magnitude:
    the mirror of `at_overflow_edge`.

    A faithful kernel whose sum lands a few ulps past the rounding threshold gets the overflow code (NaN in
    e4m3fnuz and e5m2fnuz, inf of the reference's sign where the format has one) where the reference's sum, a few
    ulps below it, rounded to +-max (the likely cause of 2 NaN among 27M outputs of a published fp8 MoE layer
    whose reference holds +-240 at ~0.5% of its outputs, H200, 2026-12-06). Where the unrounded float64 reference
    `x` is known, the threshold must be within tolerance of it. Saturating formats (e4m3fn) have no overflow
    code: a NaN there is a true NaN."""
    if fmt in _SATURATING or not fmt.is_floating_point:
        return torch.zeros_like(r, dtype=torch.bool)
    at_top = r.abs() == float(torch.finfo(fmt).max)
    over = torch.isnan(c) if fmt in _OVERFLOW_TO_NAN else torch.isinf(c) & (torch.sign(c) == torch.sign(r))
    edge = at_top & over
    if x is None:
        return edge
    gap = overflow_threshold(fmt) - x.abs()
    close = torch.isfinite(x) & (torch.sign(x) == torch.sign(r)) & (gap <= tol.atol + tol.rtol * x.abs())
    return edge & close


def _tally_chunk(tally: _LeafTally, c: torch.Tensor, r: torch.Tensor, tol: Tolerance, offset: int,
                 fmt: torch.dtype, x: torch.Tensor | None = None, atol: torch.Tensor | None = None) -> None:
    """Counts one chunk; `atol` (per element) replaces `tol.atol` in the bound where rows are judged apart."""
    ref_finite = torch.isfinite(r)
    overflowed = ~torch.isfinite(c) & ref_finite
    judged = ref_finite  # where the error is measured: not at an overflow code standing for +-max
    if bool(overflowed.any()):
        accepted = overflowed & past_overflow_edge(c, r, x, tol, fmt)
        overflowed &= ~accepted
        judged = ref_finite & ~accepted
    tally.cand_nonfinite += int(overflowed.sum().item())
    tally.cand_nonzero = tally.cand_nonzero or bool((c != 0).any())
    tally.ref_nonzero = tally.ref_nonzero or bool((r != 0).any())
    reproduced = (c == r) | (torch.isnan(c) & torch.isnan(r))
    if not bool(ref_finite.all()):
        reproduced |= at_overflow_edge(c, r, x, tol, fmt)
    ref_nonfinite = ~ref_finite
    unreproduced = ref_nonfinite & ~reproduced
    missed = int(unreproduced.sum().item())
    tally.ref_nonfinite += int(ref_nonfinite.sum().item())
    if missed and tally.first_unreproduced is None:
        idx = int(torch.nonzero(unreproduced)[0].item())
        tally.first_unreproduced = (offset + idx, float(c[idx].item()), float(r[idx].item()))
    tally.nonfinite_unreproduced += missed
    diff = torch.where(judged, (c - r).abs(), torch.zeros_like(c))
    bound = (tol.atol if atol is None else atol) + tol.rtol * torch.where(ref_finite, r.abs(), torch.zeros_like(r))
    bad = diff > bound
    count = int(bad.sum().item())
    if count and tally.first_bad is None:
        idx = int(torch.nonzero(bad)[0].item())
        tally.first_bad = (offset + idx, float(c[idx].item()), float(r[idx].item()))
    tally.bad += count
    finite_diff = diff[judged]
    if finite_diff.numel():
        tally.max_abs = max(tally.max_abs, float(finite_diff.max().item()))
        rel = (diff / r.abs().clamp_min(tol.atol if tol.atol > 0 else 1e-12))[judged]
        tally.max_rel = max(tally.max_rel, float(rel.max().item()))


def _compare_floating(name: str, cand: torch.Tensor, ref: torch.Tensor, tol: Tolerance,
                      max_mismatch_fraction: float, unrounded: torch.Tensor | None = None,
                      written: Any = None) -> Comparison:
    """One floating output against the reference values, in float64, chunk by chunk (bounded memory).
    `unrounded`: the float64 reference before `ref` was rounded to the output's format, where it was;
    `written`: the problem's tolerance before scaling, for the per-row atol (`row_atol`) of outputs with rows."""
    flat_c, flat_r = cand.detach().reshape(-1), ref.detach().reshape(-1)
    flat_x = unrounded.detach().reshape(-1) if unrounded is not None else None
    row = row_length(ref.shape) if written is not None else 0
    step = max(row, COMPARE_CHUNK_ELEMENTS // row * row) if row else COMPARE_CHUNK_ELEMENTS
    tally = _LeafTally()
    for start in range(0, flat_c.numel(), step):
        stop = start + step
        c = flat_c[start:stop].to(torch.float64)
        r = flat_r[start:stop].to(device=c.device, dtype=torch.float64)
        x = flat_x[start:stop].to(device=c.device, dtype=torch.float64) if flat_x is not None else None
        atol = row_atol(written, tol, rows_rms(r, row)).repeat_interleave(row) if row else None
        _tally_chunk(tally, c, r, tol, start, cand.dtype, x, atol)
    if tally.cand_nonfinite:
        return Comparison(False, f"{name}: {tally.cand_nonfinite} NaN/Inf elements where the reference is finite")
    if not tally.cand_nonzero and tally.ref_nonzero:
        return Comparison(False, f"{name}: all-zero output where the reference is not")
    if tally.first_unreproduced is not None:
        idx, got, expected = tally.first_unreproduced
        return Comparison(False, f"{name}: non-finite reference values (inf/nan) not reproduced at "
                                 f"{tally.nonfinite_unreproduced} of {tally.ref_nonfinite} (first at flat index {idx}: "
                                 f"got {got:.6g}, expected {expected:.6g})")
    mismatch = tally.bad / flat_c.numel()
    if mismatch > max_mismatch_fraction and tally.first_bad is not None:
        idx, got, expected = tally.first_bad
        return Comparison(
            False,
            f"{name}: {mismatch:.2%} of elements outside atol={tol.atol:g}{' (per row up to the written atol)' if row else ''} rtol={tol.rtol:g} "
            f"(max abs err {tally.max_abs:.3g}; first at flat index {idx}: got {got:.6g}, expected {expected:.6g})",
            tally.max_abs, tally.max_rel, mismatch)
    return Comparison(True, "", tally.max_abs, tally.max_rel, mismatch)


NAIVE_TOLERANCE = Tolerance(1e-2, 1e-2)


def naive_allclose(candidate: Any, reference: Any) -> Comparison:
    """The check many harnesses stop at: same structure and `torch.allclose(atol=rtol=1e-2)` per leaf.

    Used only to measure the correctness illusion; it accepts subclasses, dtype drift and all-zero outputs.
    """
    if structure_of(candidate) != structure_of(reference):
        return Comparison(False, f"output structure {structure_of(candidate)} != {structure_of(reference)}")
    worst = 0.0
    for (name, cand), (_, ref) in zip(flatten_outputs(candidate), flatten_outputs(reference)):
        if not isinstance(cand, torch.Tensor) or tuple(cand.shape) != tuple(ref.shape):
            return Comparison(False, f"{name}: not a tensor of shape {tuple(ref.shape)}")
        c, r = cand.detach().to(torch.float64), ref.detach().to(device=cand.device, dtype=torch.float64)
        if not torch.allclose(c, r, atol=NAIVE_TOLERANCE.atol, rtol=NAIVE_TOLERANCE.rtol, equal_nan=True):
            return Comparison(False, f"{name}: not allclose(atol=rtol=1e-2)")
        finite = torch.isfinite(r) & torch.isfinite(c)
        if bool(finite.any()):
            worst = max(worst, float((c - r).abs()[finite].max().item()))
    return Comparison(True, "", worst, None, None)
