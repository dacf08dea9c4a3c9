"""Pure statistics for evalh: intervals, paired tests, family-wise control, agreement, pass@k.

No I/O, deterministic. Student's t comes from ``scipy.special`` (imported on first use:
it costs half a second). Where a quantity is undefined (a rate over zero cases, an interval
from fewer units than the method needs) the function returns ``None`` instead of inventing
0 or 1.

Sources (see ``docs/methodology.md``): Wilson (1927) for the binomial score interval;
Newcombe (1998, method 10) for the interval of a paired difference of proportions;
McNemar (1947) for the paired pass/fail test, with the mid-p variant (Fagerland, Lydersen
& Laake 2013); Bell & McCaffrey (2002) and Cameron & Miller (2015) for the cluster
jackknife standard error and its degrees of freedom, also of a log ratio of means (Cochran
1977, §6, on ratio estimators), whose degrees of freedom are lowered for heavy tails
(Satterthwaite 1946); Holm (1979) for the family-wise adjustment, conditionalized after
Zhao, Small & Su (2019) and Ellis, Pecanka & Goeman (2020); Cohen (1960) for kappa;
Chen et al. (2021) for pass@k.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

Interval = tuple[float, float]


def z_for(confidence: float) -> float:
    """Two-sided standard-normal quantile for ``confidence`` (0.95 → 1.95996…)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _sum(values: Sequence[float]) -> float:
    """`math.fsum` (exact), or the float sum (±inf) where fsum's partial sums overflow:
    scores near 1e308 are figures too, not a crash."""
    try:
        return math.fsum(values)
    except OverflowError:
        return sum(values)


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean, or None for an empty sequence."""
    return _sum(values) / len(values) if values else None


def sample_variance(values: Sequence[float]) -> float | None:
    """Unbiased sample variance (n − 1), or None with fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    m = _sum(values) / n
    return _sum([(v - m) * (v - m) for v in values]) / (n - 1)  # ** raises where * gives inf


# --------------------------------------------------------------------------- proportions


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval | None:
    """Wilson (1927) score interval for a binomial proportion; None when ``n == 0``."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in [0, n], got {successes} of {n}")
    z = z_for(confidence)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def newcombe_paired_interval(
    both: int, base_only: int, cand_only: int, neither: int, confidence: float = 0.95
) -> Interval | None:
    """Interval for ``p_candidate − p_base`` of paired pass/fail outcomes.

    Newcombe (1998) method 10: hybrid score interval built from the Wilson intervals of
    both proportions and the phi correlation of the 2×2 table. ``both`` passed in both
    runs, ``base_only`` passed only in the base, ``cand_only`` only in the candidate,
    ``neither`` in neither. None when there are no pairs.
    """
    n = both + base_only + cand_only + neither
    if n <= 0:
        return None
    p_c, p_b = (both + cand_only) / n, (both + base_only) / n
    lc, uc = wilson_interval(both + cand_only, n, confidence)  # type: ignore[misc]
    lb, ub = wilson_interval(both + base_only, n, confidence)  # type: ignore[misc]
    den = (both + base_only) * (cand_only + neither) * (both + cand_only) * (base_only + neither)
    # Newcombe's phi: ad − bc shrunk by n/2 towards zero when positive (0 inside [0, n/2]).
    a_d: float = both * neither - base_only * cand_only
    a_d = a_d - n / 2 if a_d > n / 2 else (a_d if a_d < 0 else 0.0)
    phi = a_d / math.sqrt(den) if den > 0 else 0.0
    theta = p_c - p_b
    delta = math.sqrt(max(0.0, (p_c - lc) ** 2 - 2 * phi * (p_c - lc) * (ub - p_b) + (ub - p_b) ** 2))
    eps = math.sqrt(max(0.0, (uc - p_c) ** 2 - 2 * phi * (uc - p_c) * (p_b - lb) + (p_b - lb) ** 2))
    return max(-1.0, theta - delta), min(1.0, theta + eps)


@dataclass(frozen=True)
class McNemar:
    """McNemar (1947) exact test on the discordant pairs, two-sided."""

    base_only: int
    cand_only: int
    p_exact: float
    p_mid: float


def _binom_half_cdf(m: int, n: int) -> tuple[float, float]:
    """(P(X ≤ m), P(X = m)) for X ~ Binomial(n, 1/2), stable for large n."""
    log_pm = math.lgamma(n + 1) - math.lgamma(m + 1) - math.lgamma(n - m + 1) - n * math.log(2)
    pmf_m = math.exp(log_pm)
    total, term = pmf_m, pmf_m
    for k in range(m, 0, -1):
        term *= k / (n - k + 1)
        total += term
        if term < total * 1e-17:
            break
    return min(1.0, total), pmf_m


def mcnemar(base_only: int, cand_only: int) -> McNemar:
    """Exact McNemar test and its mid-p variant for ``base_only`` vs ``cand_only`` flips."""
    n = base_only + cand_only
    if n == 0:
        return McNemar(base_only, cand_only, 1.0, 1.0)
    cdf, pmf = _binom_half_cdf(min(base_only, cand_only), n)
    return McNemar(base_only, cand_only, min(1.0, 2 * cdf), min(1.0, 2 * (cdf - 0.5 * pmf)))


# --------------------------------------------------------------------------- agreement


def raw_agreement(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Share of items on which two raters gave the same label; None for no items."""
    if len(a) != len(b):
        raise ValueError("raters must label the same items")
    if not a:
        return None
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def cohens_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's (1960) kappa, ``(p_o − p_e)/(1 − p_e)``, for two raters over the same items.

    None for no items, or when chance agreement is 1 (both raters used one and the same
    label throughout), where kappa is undefined.
    """
    p_o = raw_agreement(a, b)
    if p_o is None:
        return None
    n = len(a)
    ca, cb = Counter(a), Counter(b)
    p_e = math.fsum(ca[k] * cb[k] for k in ca) / (n * n)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1.0 - p_e)


# --------------------------------------------------------------------------- pass@k


def _check_nck(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"correct samples must be in [0, n], got {c} of {n}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, n], got k={k} with n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): ``1 − C(n−c, k)/C(n, k)``, the chance that at
    least one of k samples drawn without replacement from n (c correct) is correct."""
    _check_nck(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (Yao et al. 2024, τ-bench): ``C(c, k)/C(n, k)``, the chance that all
    k samples drawn without replacement from n (c correct) are correct."""
    _check_nck(n, c, k)
    if c < k:
        return 0.0
    return math.prod((c - i) / (n - i) for i in range(k))


# --------------------------------------------------------------------------- estimates


def t_quantile(p: float, df: float) -> float:
    """Quantile of Student's t with ``df`` degrees of freedom (normal when ``df`` is inf)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if math.isinf(df):
        return NormalDist().inv_cdf(p)
    from scipy.special import stdtrit  # lazily: scipy costs ~0.5 s to import

    return float(stdtrit(df, p))


def t_cdf(x: float, df: float) -> float:
    """Distribution function of Student's t (normal when ``df`` is inf)."""
    if math.isinf(df):
        return NormalDist().cdf(x)
    from scipy.special import stdtr

    return float(stdtr(df, x))


@dataclass(frozen=True)
class Estimate:
    """A change estimated on a test scale where it is roughly Student-t distributed.

    ``value`` ± t·``se`` with ``df`` degrees of freedom is the interval on the test scale;
    ``scale`` maps it to the scale the change is reported on: ``"abs"`` (the identity) or
    ``"log"`` (a log ratio, reported as a percent change, ``100·(eᵛ − 1)``).
    """

    value: float
    se: float
    df: float
    scale: str = "abs"
    clusters: int = 0
    """Independent units behind the standard error (cases, or groups of cases)."""

    def to_change(self, v: float) -> float:
        return 100.0 * math.expm1(v) if self.scale == "log" else v

    def from_change(self, c: float) -> float:
        return math.log1p(c / 100.0) if self.scale == "log" else c

    @property
    def change(self) -> float:
        return self.to_change(self.value)

    def interval(self, confidence: float = 0.95) -> Interval:
        half = t_quantile(0.5 + confidence / 2.0, self.df) * self.se
        return self.to_change(self.value - half), self.to_change(self.value + half)

    def p_below(self, change: float) -> float:
        """One-sided p-value of "the true change is below ``change``" (small when the
        estimate lies well below it)."""
        m = self.from_change(change)
        if self.se <= 0:
            return 0.0 if self.value < m else 1.0
        return t_cdf((self.value - m) / self.se, self.df)

    def p_above(self, change: float) -> float:
        """One-sided p-value of "the true change is above ``change``"."""
        m = self.from_change(change)
        if self.se <= 0:
            return 0.0 if self.value > m else 1.0
        return t_cdf((m - self.value) / self.se, self.df)


def _cluster_sums(
    values: Sequence[float], clusters: Sequence[Hashable] | None
) -> tuple[list[float], list[int]]:
    if clusters is None:
        return list(values), [1] * len(values)
    sums: dict[Hashable, float] = {}
    sizes: dict[Hashable, int] = {}
    for v, g in zip(values, clusters, strict=True):
        sums[g] = sums.get(g, 0.0) + v
        sizes[g] = sizes.get(g, 0) + 1
    return list(sums.values()), list(sizes.values())


def _effective_df(sizes: Sequence[int]) -> float:
    """G − 1, lowered to G* − 1 when the clusters are unequal, where G* = N² / Σ nᵍ² is
    the number of equal clusters that would carry the same information (one cluster
    holding most cases leaves about one: the data cannot say how much clusters vary)."""
    n = sum(sizes)
    g_star = n * n / sum(m * m for m in sizes)
    return max(1.0, min(len(sizes) - 1.0, g_star - 1.0))


def clustered_mean(
    values: Sequence[float], clusters: Sequence[Hashable] | None = None
) -> Estimate | None:
    """Mean of per-case values with a cluster jackknife standard error (leave one cluster
    out; the CR3 estimator of Bell & McCaffrey 2002, which keeps its coverage when one
    cluster is much larger than the rest, where the CR1 sandwich collapses) and Student's t
    with G − 1 degrees of freedom, fewer for unequal clusters (`_effective_df`). With equal
    clusters it equals the CR1 sandwich (Liang & Zeger 1986) with the G/(G − 1) factor;
    with each case its own cluster (``clusters`` None) it is the paired t interval. None
    with fewer than two clusters."""
    n = len(values)
    sums, sizes = _cluster_sums(values, clusters)
    g = len(sums)
    if n == 0 or g < 2:
        return None
    total = math.fsum(values)
    est = total / n
    loo = [(total - s) / (n - m) for s, m in zip(sums, sizes, strict=True)]
    mean_loo = math.fsum(loo) / g
    se = math.sqrt((g - 1) / g * math.fsum((x - mean_loo) ** 2 for x in loo))
    return Estimate(est, se, _effective_df(sizes), "abs", g)


def clustered_log_ratio(
    base: Sequence[float], cand: Sequence[float], clusters: Sequence[Hashable] | None = None
) -> Estimate | None:
    """``log(mean(cand)/mean(base))`` of paired positive values, with a cluster jackknife
    standard error and the degrees of freedom of `clustered_mean`. The log scale keeps the
    interval of a ratio from under-covering on the side of large rises (the ratio's
    sampling distribution is skewed). None when a mean is not positive, with fewer than two
    clusters, or when leaving a cluster out leaves no cost."""
    n = len(base)
    if n != len(cand):
        raise ValueError("paired samples must have the same length")
    bx, sizes = _cluster_sums(base, clusters)
    cy, _ = _cluster_sums(cand, clusters)
    g = len(bx)
    sx, sy = math.fsum(base), math.fsum(cand)
    if n == 0 or g < 2 or sx <= 0 or sy <= 0:
        return None
    est = math.log(sy / sx)
    loo = []
    for x, y in zip(bx, cy, strict=True):
        if sx - x <= 0 or sy - y <= 0:
            return None
        loo.append(math.log((sy - y) / (sx - x)))
    mean_loo = math.fsum(loo) / g
    dev = [v - mean_loo for v in loo]
    se = math.sqrt((g - 1) / g * math.fsum(d * d for d in dev))
    return Estimate(est, se, min(_effective_df(sizes), _kurtosis_df(dev)), "log", g)


def _kurtosis_df(dev: Sequence[float]) -> float:
    """Degrees of freedom of a variance estimated from the deviations ``dev``, by matching
    its variance to a scaled χ² (Satterthwaite 1946): Var(s²) ≈ σ⁴(κ − 1)/g for terms of
    kurtosis κ, so df = 2(g − 1)/(κ − 1), which is g − 1 for normal terms (κ = 3) and fewer
    when a few units dominate the sum (skewed costs: one case holding much of the spend).
    The plain G − 1 covered 90.5–93 % on lognormal costs; this, 94–96 %."""
    g = len(dev)
    s2 = math.fsum(d * d for d in dev)
    if g < 2 or s2 <= 0:
        return float(max(g - 1, 1))
    kurt = g * math.fsum(d ** 4 for d in dev) / (s2 * s2)
    if kurt <= 1.0:
        return float(g - 1)
    return max(1.0, min(g - 1.0, 2.0 * (g - 1) / (kurt - 1.0)))


def newcombe_p_below(
    both: int, base_only: int, cand_only: int, neither: int, change: float
) -> float:
    """One-sided p-value of "the paired difference of proportions (candidate − base) is
    below ``change``", by inverting Newcombe's interval: the α at which the upper bound of
    its two-sided 1 − 2α interval reaches ``change`` (one minus the α at which the lower
    bound does, when the estimate is above ``change``). 1.0 without pairs."""
    n = both + base_only + cand_only + neither
    if n <= 0:
        return 1.0

    def bound(alpha: float, upper: bool) -> float:
        iv = newcombe_paired_interval(both, base_only, cand_only, neither, 1.0 - 2.0 * alpha)
        assert iv is not None
        return iv[1] if upper else iv[0]

    theta = (cand_only - base_only) / n
    upper = theta < change
    lo, hi = 1e-12, 0.5
    if upper and bound(lo, True) < change:
        return lo
    if not upper and bound(lo, False) >= change:
        return 1.0 - lo
    for _ in range(50):  # the bound moves monotonically with α: bisect on log α
        mid = math.sqrt(lo * hi)
        crossed = bound(mid, True) < change if upper else bound(mid, False) > change
        lo, hi = (lo, mid) if crossed else (mid, hi)
    return hi if upper else 1.0 - hi


def newcombe_p_above(
    both: int, base_only: int, cand_only: int, neither: int, change: float
) -> float:
    """The p-value of "the difference is above ``change``": `newcombe_p_below` with the
    two runs' roles swapped (the difference changes sign)."""
    return newcombe_p_below(both, cand_only, base_only, neither, -change)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm (1979) step-down adjusted p-values, in the input order: rejecting those ≤ α
    controls the family-wise error rate at α for any dependence between the tests."""
    return weighted_holm(p_values, [1.0] * len(p_values))[0]


def weighted_holm(
    p_values: Sequence[float], weights: Sequence[float], select: float | None = None
) -> tuple[list[float], list[float]]:
    """Weighted Holm step-down (Holm 1979, §4): the tests are taken in the order of
    pᵢ/wᵢ, and the k-th is held to α·wᵢ/Σ(weights of the tests not yet rejected).
    Returns, in the input order, the adjusted p-values (reject those ≤ α) and each test's
    share of α at its step (wᵢ over the weights left then). Equal weights give Holm's
    procedure; the family-wise error rate is at most α for any dependence between the
    tests. Weights must be positive.

    With ``select`` = τ, conditionalized (Zhao, Small & Su 2019; Ellis, Pecanka & Goeman
    2020): only tests with pᵢ ≤ τ take part, each with pᵢ/τ, and the others are never
    rejected (adjusted p 1; share the one it would have had at the first step). A true
    null well inside its hypothesis (an unchanged row, far from its allowance) has a
    p-value near 1 and drops out instead of taking a share of α. The family-wise rate
    stays at most α when the null p-values are uniformly conservative (P(p ≤ τu | p ≤ τ)
    ≤ u, as a one-sided test of a location shift is for any true value inside its null)
    and independent of the other p-values."""
    m = len(p_values)
    if len(weights) != m or any(w <= 0 for w in weights):
        raise ValueError("one positive weight per p-value")
    tau = 1.0 if select is None else select
    if not 0.0 < tau <= 1.0:
        raise ValueError(f"select must be in (0, 1], got {select}")
    chosen = [i for i in range(m) if select is None or p_values[i] <= tau]
    order = sorted(chosen, key=lambda i: p_values[i] / weights[i])
    left = math.fsum(weights[i] for i in chosen)
    adjusted, shares = [1.0] * m, [1.0] * m
    for i in range(m):
        if select is not None and p_values[i] > tau:
            shares[i] = tau * weights[i] / (left + weights[i])
    running = 0.0
    for i in order:
        running = max(running, min(1.0, p_values[i] / tau * left / weights[i]))
        adjusted[i] = running
        shares[i] = tau * weights[i] / left
        left -= weights[i]
    return adjusted, shares
