"""The value columns of a suite's facts: a number per row held in arrays (the first value
of a row, and the rest apart for the few rows with several), not a list of floats per row."""

from __future__ import annotations

import math
from array import array
from typing import Any


class Values:
    """Per-row lists of floats. Most rows hold one value or none: the first value of each
    row sits in an array, only the rows with more hold a list."""

    __slots__ = ("first", "more", "n")

    def __init__(self) -> None:
        self.n = array("I")
        self.first = array("d")
        self.more: dict[int, list[float]] = {}

    def _grow(self, extra: int) -> None:
        self.n.frombytes(bytes(4 * extra))
        self.first.frombytes(bytes(8 * extra))

    def add(self, row: int, value: float) -> None:
        k = self.n[row]
        if k == 0:
            self.first[row] = value
        elif k == 1:
            self.more[row] = [self.first[row], value]
        else:
            self.more[row].append(value)
        self.n[row] = k + 1

    def count(self, row: int) -> int:
        return self.n[row]

    def values(self, row: int) -> list[float]:
        k = self.n[row]
        if k == 0:
            return []
        return [self.first[row]] if k == 1 else self.more[row]

    def mean(self, row: int) -> float | None:
        k = self.n[row]
        if k == 0:
            return None
        return self.first[row] if k == 1 else math.fsum(self.more[row]) / k


def put_values(column: Values, values: list[Any], full: bool, line_rows: list[int] | None, n0: int) -> None:
    """A value a line into `column` (None: none; `full`: no None), for the rows
    `line_rows` or, when None, the new rows n0, n0 + 1, … (which hold no value yet)."""
    if line_rows is None:
        end = n0 + len(values)
        if full:
            column.first[n0:end] = array("d", values)
            column.n[n0:end] = array("I", [1]) * len(values)
        else:
            column.first[n0:end] = array("d", [0.0 if x is None else x for x in values])
            column.n[n0:end] = array("I", [x is not None for x in values])
        return
    n, first = column.n, column.first
    for row, x in zip(line_rows, values, strict=True):
        if x is not None:
            if n[row]:
                column.add(row, x)
            else:
                first[row], n[row] = x, 1


_RANGE = array("q")


def row_range(n: int) -> array[int]:
    """`array("q", range(n))`, cut from one kept copy: the comparison of two runs holding
    the same rows pairs row i with row i, and asks for it several times (a million rows:
    0.15 s to make, a millisecond to copy or compare)."""
    global _RANGE
    if len(_RANGE) < n:
        _RANGE = array("q", range(n))
    return _RANGE[:n]
