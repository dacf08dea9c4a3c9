"""How evalh shows a number that may be missing, in tables and text: one formatter, so the
terminal, the report and the label and rejudge summaries write numbers the same way."""

from __future__ import annotations


def num(value: float | None, spec: str = ".3f", none: str = "–") -> str:
    """`value` formatted with `spec`, or `none` when it is missing (never 0)."""
    return none if value is None else format(value, spec)


def rate(value: float | None, part: int, whole: int, none: str | None = None) -> str:
    """`75.0% (3/4)`; `n/a (0/0)` (or `none`) when there is no rate."""
    if value is None:
        return f"n/a ({part}/{whole})" if none is None else none
    return f"{value:.1%} ({part}/{whole})"


def pct(value: float) -> str:
    """A share as a percentage with at most one decimal: `10 %`, `12.5 %`."""
    text = f"{value * 100:.1f}".rstrip("0").rstrip(".")
    return f"{text} %"


def money_exact(value: float | None, none: str = "unknown") -> str:
    """US dollars with the digits a small bill needs: four places from a cent up, six below
    (`$0.000162`, where `money` would print `$0.0002`)."""
    if value is None:
        return none
    return f"${value:.4f}" if value == 0 or abs(value) >= 0.01 else f"${value:.6f}"


def money(value: float | None, none: str = "unknown") -> str:
    """US dollars to four places (`$0.0123`), or `none` when the cost is unknown."""
    return none if value is None else f"${value:.4f}"
