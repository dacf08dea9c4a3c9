"""The minimum detectable change of a paired mean, planned before a comparison is made.

Pure, deterministic. A gate row tests "the change is worse than the allowance *a*" at a
one-sided level α; with a standard error SE (t with df degrees of freedom), a true change
on the worse side of size

    d = a + (t₁₋α + t_power) · SE

is called `regressed` with the stated power (Cohen 1988, ch. 2; the normal quantiles
replaced by Student's). `compare.family.detect_row` applies this to a finished
comparison's rows; here it is applied to a plan (`evalh run --dry-run`) and to a baseline
of stored runs (`evalh baseline noise`), where the standard error comes from the baseline's
per-case pass probabilities: an unchanged candidate with r attempts a case against a base
of m attempts a case has, per case, a pass-fraction difference of variance
p(1 − p)(1/m + 1/r), so SE² is the mean of that over the cases divided by their number.
A drop is not noise-neutral: cases that passed start failing, and the spread of the
per-case differences grows with it (`detectable_rate` models the drop as such flips;
without it, on the reference workload, the printed drop was caught 63 % of the time
instead of 80 %).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from evalh.core.stats.intervals import t_quantile


def detectable(se: float, allowance: float, alpha: float, power: float, df: float = math.inf) -> float:
    """Size of the smallest change on the worse side (a positive number, in the unit of
    `allowance` and `se`) caught with `power` by a one-sided test at level `alpha`."""
    if se < 0 or not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("se must be >= 0, alpha and power in (0, 1)")
    return allowance + (t_quantile(1 - alpha, df) + t_quantile(power, df)) * se


def detectable_rate(
    se0: float, cases: int, attempts: float, allowance: float, alpha: float, power: float,
    df: float = math.inf, already: float = 0.0,
) -> float | None:
    """`detectable` for a rate (pass or error rate) whose noise grows with the change: the
    change is taken to come as flips of cases on its side (cases that passed failing now),
    which adds x(1 − x)/(attempts · cases) to the variance of the mean difference for a
    change x beyond the `already` observed one. Solves d = a + (t₁₋α + t_power)·SE(d);
    None when no change up to 1 is caught that often."""
    k = t_quantile(1 - alpha, df) + t_quantile(power, df)

    def se(d: float) -> float:
        x = min(1.0, max(0.0, d - already))
        return math.sqrt(se0 * se0 + x * (1 - x) / (attempts * cases))

    lo, hi = allowance, 1.0
    if hi - allowance - k * se(hi) < 0:
        return None
    for _ in range(60):
        mid = (lo + hi) / 2
        if mid - allowance - k * se(mid) >= 0:
            hi = mid
        else:
            lo = mid
    return hi


def case_variance(passed: int, attempts: int) -> float | None:
    """Unbiased estimate of p(1 − p) for one case from its attempts (None with fewer than
    two: one attempt says nothing of its spread)."""
    if attempts < 2:
        return None
    p = passed / attempts
    return p * (1 - p) * attempts / (attempts - 1)


def pass_rate_se(variances: Sequence[float], cases: int, base_attempts: float, cand_attempts: float) -> float:
    """Standard error of the mean paired pass-fraction difference over `cases` cases whose
    p(1 − p) are like `variances` (their mean is used), for an unchanged candidate of
    `cand_attempts` attempts a case against a base of `base_attempts`."""
    if not variances or cases < 1 or base_attempts <= 0 or cand_attempts <= 0:
        raise ValueError("need variances, cases >= 1 and positive attempts")
    v = math.fsum(variances) / len(variances)
    return math.sqrt(v * (1 / base_attempts + 1 / cand_attempts) / cases)


WORST_CASE_VARIANCE = 0.25
"""p(1 − p) at p = 1/2: the largest a case can have. Without a baseline to measure the
noise, a plan's detectable change is given at this bound (an upper bound: the true figure
is smaller)."""
