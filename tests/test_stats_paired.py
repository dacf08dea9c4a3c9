"""Tango's paired score interval, checked against the published algorithm (R's PropCIs
``scoreci.mp``, Tango 1998), re-implemented below line for line as the reference."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from evalh.core.stats import paired as sp


def _propcis_scoreci_mp(b: int, c: int, n: int, conflev: float) -> tuple[float, float]:
    """PropCIs::scoreci.mp(b, c, n, conflev): the interval of (c − b)/n by halving steps."""
    pa = 2 * n
    z = NormalDist().inv_cdf(1 - (1 - conflev) / 2)

    def score(d: float) -> float:
        pb = -b - c + (2 * n - c + b) * d
        pc = -b * d * (1 - d)
        q21 = (math.sqrt(pb * pb - 4 * pa * pc) - pb) / (2 * pa)
        return (c - b - n * d) / math.sqrt(n * (2 * q21 + d * (1 - d)))

    def side(sign: int) -> float:
        proot = (c - b) / n
        dp = 1 - proot if sign > 0 else 1 + proot
        out = proot
        for _ in range(50):
            dp *= 0.5
            x = proot + sign * dp
            s = score(x)
            if abs(s) < z:
                proot = x
            if dp < 1e-7 or abs(z - s) < 1e-6:
                out = x
                break
        return out

    ul = 1.0 if c == n else side(+1)
    ll = -1.0 if b == n else side(-1)
    return ll, ul


TABLES = [  # (both, base_only, cand_only, neither)
    (0, 40, 20, 100), (1, 1, 7, 12), (59, 6, 16, 15), (15, 1, 2, 2), (17, 2, 0, 1),
    (80, 3, 9, 8), (5, 0, 0, 15), (18, 0, 1, 1), (400, 37, 11, 152),
]


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("conf", [0.9, 0.95, 0.99])
def test_tango_interval_matches_propcis_scoreci_mp(table: tuple[int, int, int, int], conf: float) -> None:
    both, b, c, neither = table
    n = sum(table)
    ref = _propcis_scoreci_mp(b, c, n, conf)
    got = sp.tango_interval(both, b, c, neither, conf)
    assert got is not None
    assert got[0] == pytest.approx(ref[0], abs=1e-6)
    assert got[1] == pytest.approx(ref[1], abs=1e-6)


def test_tango_p_values_invert_the_interval() -> None:
    counts = (59, 6, 16, 15)
    lo, hi = sp.tango_interval(*counts, 0.95)  # type: ignore[misc]
    assert sp.tango_p_below(*counts, hi) == pytest.approx(0.025, abs=1e-9)
    assert sp.tango_p_above(*counts, lo) == pytest.approx(0.025, abs=1e-9)
    assert lo < (16 - 6) / 96 < hi


def test_tango_edges() -> None:
    assert sp.tango_interval(0, 0, 0, 0) is None
    assert sp.tango_p_below(0, 0, 0, 0, 0.0) == 1.0
    lo, hi = sp.tango_interval(0, 0, 5, 0)  # type: ignore[misc]
    assert hi == 1.0 and 0 < lo < 1
    lo, hi = sp.tango_interval(10, 0, 0, 0)  # type: ignore[misc]
    assert lo < 0 < hi
    # antisymmetric: swapping the runs mirrors the interval
    a = sp.tango_interval(30, 4, 9, 7)
    b = sp.tango_interval(30, 9, 4, 7)
    assert a is not None and b is not None
    assert a[0] == pytest.approx(-b[1]) and a[1] == pytest.approx(-b[0])
