"""Integer outputs the reference does not settle: what it answers under rounding-level noise on its inputs.

An integer output computed from floating-point values (a top-k's indices, an argmax, a sort's order) has no
single right answer where two of those values differ by less than rounding: a faithful kernel that sums in
another order picks the other index, as the reference itself would with its inputs a few ulps away. So where a
candidate's integer output differs from the reference's, the reference runs up to `DRAWS` more times on inputs
scaled by 1 + RELATIVE_NOISE·u (u uniform in [-1, 1); about eight float32 ulps), and a differing row (the last axis of
an output with two or more axes; an element of a vector) is accepted when, and only when, one of those runs gave
that very row. A whole row, so a candidate cannot mix answers (the same index twice where two were tied).

What stays exact: integer outputs that depend on no floating-point input (counts, offsets, a sort of integer
keys) never change under the noise; integer-valued float inputs (masks, positions held as floats) are not
perturbed; noise below a narrow input's precision rounds away when the float64 reference cannot run; and past
`MAX_FRACTION` of an output's elements off, no alternative is looked for. The sampled checks of timed calls
accept an element any run gave (they hold elements, not rows); the full comparison of each case holds rows.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

# A pair tied within the noise swaps in a draw with odds ~1/2. With eight draws a row was missed at 1/256, so a
# case with ten tied rows failed a faithful tie-break one time in 26 (seen on an H100, 2026-12-07); with 32 a
# pair is missed at 2^-32, and a three-way tie's given order (1/6 a draw) at 0.3%.
DRAWS = 32
ANSWER_BYTES = 1 << 30  # the draws kept per integer leaf stop short of DRAWS beyond this many bytes
RELATIVE_NOISE = 2.0 ** -20
MAX_FRACTION = 0.25  # of an integer output's elements, beyond which no alternative is looked for
_PERTURBED = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def perturbed(inputs: dict[str, Any], seed: int) -> dict[str, Any]:
    """A copy of `inputs` whose non-integer-valued float16/bfloat16/float32/float64 tensors are scaled
    elementwise by 1 + RELATIVE_NOISE·u, u uniform in [-1, 1) (computed in float64, stored in the tensor's
    dtype: noise below a narrow dtype's precision rounds away, and such an input stays as it was)."""
    out: dict[str, Any] = {}
    for i, (name, value) in enumerate(inputs.items()):
        if not _takes_noise(value):
            out[name] = value.clone() if isinstance(value, torch.Tensor) else value
            continue
        generator = torch.Generator(device=value.device).manual_seed(seed + 7919 * i)
        u = torch.rand(value.shape, generator=generator, device=value.device, dtype=torch.float64) * 2 - 1
        out[name] = (value.to(torch.float64) * (1 + RELATIVE_NOISE * u)).to(value.dtype)
    return out


def _takes_noise(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype in _PERTURBED and value.numel() > 0 \
        and not bool(torch.equal(value, value.round()))


def integer_leaves(output: Any) -> dict[str, torch.Tensor]:
    """The integer (and bool) tensor leaves of an output, by leaf name."""
    from aka_tui.bench.problem.tolerance import flatten_outputs  # it compares with this module's rule

    return {name: leaf for name, leaf in flatten_outputs(output)
            if isinstance(leaf, torch.Tensor) and not (leaf.is_floating_point() or leaf.is_complex())}


def alternatives(run: Callable[[dict[str, Any]], Any], inputs: dict[str, Any], seed: int,
                 draws: int = DRAWS) -> dict[str, torch.Tensor]:
    """Per integer leaf, the reference's answers in up to `draws` runs on perturbed copies of `inputs`: a
    [runs, numel] tensor (flat, in the leaf's dtype). `run` is the reference as the yardstick ran it (the
    float64 model on upcast inputs, or the native one). One run when no input takes noise (its integers are the
    reference's own, every run alike); fewer once the runs kept reach `ANSWER_BYTES`."""
    runs: dict[str, list[torch.Tensor]] = {}
    kept = 0
    for d in range(draws if any(_takes_noise(v) for v in inputs.values()) else 1):
        for name, leaf in integer_leaves(run(perturbed(inputs, seed + 104729 * d))).items():
            runs.setdefault(name, []).append(leaf.detach().reshape(-1))
            kept += leaf.numel() * leaf.element_size()
        if kept >= ANSWER_BYTES:
            break
    return {name: torch.stack(values) for name, values in runs.items()}


def admissible(candidate: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    """Per sampled element (`candidate` [..., K], `answers` [draws, K] at the same positions): True where one
    of the perturbed runs gave that value."""
    values = answers.to(device=candidate.device, dtype=candidate.dtype)
    return (candidate.unsqueeze(-2) == values).any(dim=-2)


def integer_mismatch(name: str, candidate: torch.Tensor, expected: torch.Tensor,
                     answers_for: Callable[[str], torch.Tensor | None] | None) -> str | None:
    """Why an integer output is wrong, or None when it equals `expected` or differs only in rows a perturbed
    run of the reference gave (`answers_for(name)`: [draws, numel], looked up only on a difference)."""
    if torch.equal(candidate, expected):
        return None
    differ = (candidate != expected).reshape(-1)
    wrong, total = int(differ.sum()), candidate.numel()
    said = f"{name}: {wrong} of {total} integer elements differ"
    answers = answers_for(name) if answers_for is not None and wrong <= MAX_FRACTION * total else None
    if answers is None:
        return said + " (exact match required)"
    width = candidate.shape[-1] if candidate.dim() >= 2 else 1
    rows = candidate.reshape(-1, width)
    differing = torch.nonzero(differ.reshape(-1, width).any(dim=1)).flatten()
    runs = answers.to(device=candidate.device, dtype=candidate.dtype).reshape(answers.shape[0], -1, width)
    given = (rows[differing].unsqueeze(0) == runs[:, differing]).all(dim=-1).any(dim=0)
    unsettled = int(given.sum())
    if unsettled == len(differing):
        return None
    return (f"{said}, in {len(differing) - unsettled} row(s) that no run of the reference gives under "
            f"rounding-level noise on its inputs (exact match required there)")
