"""Tango's (1998) asymptotic score interval for a paired difference of proportions.

Pure, deterministic. For single-attempt pass/fail outcomes of the same cases in two runs,
the change candidate − base is ``(cand_only − base_only)/n``. Tango's score statistic for
the hypothesis "the true change is δ" is

    Z(δ) = (c − b − nδ) / √(n (2 q̂ + δ(1 − δ))),

with ``b`` = cases passed in the base only, ``c`` = in the candidate only, and ``q̂`` the
maximum-likelihood probability of the base-only cell under the constraint (the positive
root of 2n q² + W q − b δ(1 − δ) = 0, W = −b − c + (2n − c + b) δ). The interval is every δ
with |Z(δ)| < z; a one-sided p-value is Φ(±Z(δ)). It replaces Newcombe's hybrid interval
(method 10), which over-covers at small n and high pass rates (98.8–100 % at 20 cases and
p ≥ 0.8): Fagerland, Lydersen & Laake (2014, *Statistics in Medicine* 33:2850) recommend
Tango's interval for the paired difference. The same statistic and root as R's PropCIs
``scoreci.mp``; ``tests/test_stats_paired.py`` checks it against that algorithm to 1e-6.
"""

from __future__ import annotations

import math
from statistics import NormalDist

_N = NormalDist()


def tango_z(base_only: int, cand_only: int, n: int, delta: float) -> float:
    """Tango's score statistic for "the true change (candidate − base) is ``delta``":
    positive when the observed change lies above ``delta``."""
    b, c = base_only, cand_only
    w = -b - c + (2 * n - c + b) * delta
    const = -b * delta * (1 - delta)
    q = (math.sqrt(max(0.0, w * w - 8 * n * const)) - w) / (4 * n)
    num = c - b - n * delta
    var = n * (2 * q + delta * (1 - delta))
    if var <= 0:
        return 0.0 if abs(num) < 1e-12 else math.copysign(math.inf, num)
    return num / math.sqrt(var)


def _root(b: int, c: int, n: int, target: float, lo: float, hi: float) -> float:
    """The δ in [lo, hi] where Z(δ) crosses ``target`` (Z decreases in δ): bisection."""
    for _ in range(80):
        mid = (lo + hi) / 2
        if tango_z(b, c, n, mid) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def tango_interval(
    both: int, base_only: int, cand_only: int, neither: int, confidence: float = 0.95
) -> tuple[float, float] | None:
    """Two-sided Tango score interval of ``p_candidate − p_base``; None without pairs."""
    n = both + base_only + cand_only + neither
    if n <= 0:
        return None
    z = _N.inv_cdf(0.5 + confidence / 2.0)
    b, c = base_only, cand_only
    est = (c - b) / n
    low = -1.0 if b == n else _root(b, c, n, z, -1.0, est)
    high = 1.0 if c == n else _root(b, c, n, -z, est, 1.0)
    return low, high


def tango_p_below(both: int, base_only: int, cand_only: int, neither: int, change: float) -> float:
    """One-sided p-value for "the true change is below ``change``" (small when the
    observed change lies well below it): Φ(Z(change)). 1.0 without pairs."""
    n = both + base_only + cand_only + neither
    if n <= 0:
        return 1.0
    if change >= 1.0:
        return 0.0 if cand_only < n else 1.0
    if change <= -1.0:
        return 1.0
    return _N.cdf(tango_z(base_only, cand_only, n, change))


def tango_p_above(both: int, base_only: int, cand_only: int, neither: int, change: float) -> float:
    """One-sided p-value for "the true change is above ``change``": Φ(−Z(change))."""
    n = both + base_only + cand_only + neither
    if n <= 0:
        return 1.0
    if change <= -1.0:
        return 0.0 if base_only < n else 1.0
    if change >= 1.0:
        return 1.0
    return _N.cdf(-tango_z(base_only, cand_only, n, change))


def _restricted_q(b: float, c: float, n: float, delta: float) -> float:
    """Maximum-likelihood probability of the base-only cell when the change is `delta`."""
    w = -b - c + (2 * n - c + b) * delta
    return (math.sqrt(max(0.0, w * w + 8 * n * b * delta * (1 - delta))) - w) / (4 * n)


def tango_power(
    both: int, base_only: int, cand_only: int, neither: int, change: float, boundary: float,
    alpha: float,
) -> float:
    """Approximate power of Tango's one-sided score test of "the change is on the far side
    of `boundary`" (rejected at level `alpha`) when the true change is `change`. The
    alternative keeps the observed discordance of noise (half of it each way) and adds
    the change as flips on its side: a drop is cases that passed failing now, which widens
    the noise as such a drop does. c − b is then normal with mean n·change and variance
    (b + c) − n·change²; the test's own variance is taken at the boundary, from the
    restricted maximum-likelihood cells of that expected table (the score test's
    asymptotic power, as in Nam 1997)."""
    n = both + base_only + cand_only + neither
    if n <= 0:
        return 0.0
    q0 = (base_only + cand_only) / (2 * n)  # the discordance of noise, either way
    # The change comes as flips on top of that noise: |change| more on its side.
    b_d = n * (q0 + max(0.0, -change))
    c_d = n * (q0 + max(0.0, change))
    v_d = (b_d + c_d) - n * change * change
    q_m = _restricted_q(b_d, c_d, n, boundary)
    v_m = n * (2 * q_m + boundary * (1 - boundary))
    if v_d <= 0:
        return 1.0 if change != boundary else 0.0
    z = _N.inv_cdf(1 - alpha)
    gap = n * abs(change - boundary)
    return _N.cdf((gap - z * math.sqrt(max(v_m, 0.0))) / math.sqrt(v_d))


def tango_detectable(
    both: int, base_only: int, cand_only: int, neither: int, boundary: float, worse: float,
    alpha: float, power: float,
) -> float | None:
    """The change beyond `boundary` on the `worse` side (−1: below, +1: above) that Tango's
    test catches with `power` at level `alpha` (`tango_power`); None when no change within
    [−1, 1] is caught that often."""
    far = -1.0 if worse < 0 else 1.0
    if tango_power(both, base_only, cand_only, neither, far * 0.999999, boundary, alpha) < power:
        return None
    lo, hi = boundary, far * 0.999999  # power rises from lo to hi
    for _ in range(60):
        mid = (lo + hi) / 2
        if tango_power(both, base_only, cand_only, neither, mid, boundary, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi
