"""Rows of the Problems table: pure data, sortable and filterable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aka_tui.tui.records import Records

COLUMNS = ("op", "family", "dtype", "weight %", "shapes s/f", "best S", "kernel", "recorded on")
SHORT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64",
                "float8_e4m3fn": "fp8e4m3", "float8_e5m2": "fp8e5m2"}


def short_dtype(name: str) -> str:
    """The dtype as kernel engineers write it (bf16, fp8e4m3), so the table fits 100 columns."""
    return SHORT_DTYPES.get(name, name)


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
        return (self.op, self.family, short_dtype(self.dtype), f"{self.weight_pct:.1f}", f"{self.smoke}/{self.full}",
                "-" if self.best_s is None else f"{self.best_s:.4f}", self.kernel, self.recorded_on)

    def sort_key(self, column: int) -> Any:
        keys = (self.op, self.family, self.dtype, self.weight_pct, self.smoke + self.full,
                -1.0 if self.best_s is None else self.best_s, self.kernel, self.recorded_on)
        return keys[column]

    def matches(self, text: str) -> bool:
        text = text.strip().lower()
        haystack = f"{self.op} {self.family} {self.dtype} {short_dtype(self.dtype)} {self.kernel}"
        return not text or all(word in haystack for word in text.split())


def problem_rows(problems: dict[str, Any], records: Records) -> list[ProblemRow]:
    """One row per problem, with the best recorded S_op (sessions and bench reports)."""
    from aka_tui.bench.problem.dtypes import dtype_name

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
