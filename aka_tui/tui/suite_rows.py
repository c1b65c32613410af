"""Rows of the Problems table: pure data, sortable and filterable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aka_tui.tui.records import Records

COLUMNS = ("op", "family", "dtype", "weight %", "shapes s/f", "best S", "kernel", "recorded on")


@dataclass(frozen=True)
class ProblemRow:
    op: str
    family: str
    dtype: str
    weight_pct: float
    smoke: int
    full: int
    best_s: float | None
    kernel: str  # real | fallback | -
    recorded_on: str

    def cells(self) -> tuple[str, ...]:
        return (self.op, self.family, self.dtype, f"{self.weight_pct:.1f}", f"{self.smoke}/{self.full}",
                "-" if self.best_s is None else f"{self.best_s:.4f}", self.kernel, self.recorded_on)

    def sort_key(self, column: int) -> Any:
        keys = (self.op, self.family, self.dtype, self.weight_pct, self.smoke + self.full,
                -1.0 if self.best_s is None else self.best_s, self.kernel, self.recorded_on)
        return keys[column]

    def matches(self, text: str) -> bool:
        text = text.strip().lower()
        return not text or all(word in f"{self.op} {self.family} {self.dtype} {self.kernel}" for word in text.split())


def problem_rows(problems: dict[str, Any], records: Records) -> list[ProblemRow]:
    """One row per problem, with the best recorded S_op (sessions and bench reports)."""
    from aka_tui.bench.dtypes import dtype_name

    rows = []
    for p in problems.values():
        best = records.best.get(p.name)
        rows.append(ProblemRow(p.name, p.family, dtype_name(p.dtype), p.importance * 100,
                               len(p.shapes_for("smoke")), len(p.shapes_for("full")),
                               best.s_op if best else None, ("real" if best.real else "fallback") if best else "-",
                               f"{best.hardware} ({best.source})" if best else ""))
    return rows


def select_rows(rows: list[ProblemRow], text: str, column: int, reverse: bool) -> list[ProblemRow]:
    """Filter by words, then sort by one column."""
    chosen = [r for r in rows if r.matches(text)]
    return sorted(chosen, key=lambda r: (r.sort_key(column), r.op), reverse=reverse)
