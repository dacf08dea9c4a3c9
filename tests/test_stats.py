"""Unit tests of evalh.core.stats.intervals against published or hand-computed values."""

from __future__ import annotations

import math
import random

import pytest

from evalh.core.stats import intervals as stats

# Cavo et al. (2012), as tabulated in Fagerland, Lydersen & Laake, "Statistical Analysis of
# Contingency Tables" (2017), ch. 8: 59 both, 6 first only, 16 second only, 80 neither.
CAVO = (59, 6, 16, 80)


def test_z_for_confidence() -> None:
    assert stats.z_for(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert stats.z_for(0.90) == pytest.approx(1.644854, abs=1e-6)
    with pytest.raises(ValueError):
        stats.z_for(1.0)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0), (81, 263, 0.2553, 0.3662)],
)
def test_wilson_interval_known_values(k: int, n: int, low: float, high: float) -> None:
    lo, hi = stats.wilson_interval(k, n)  # type: ignore[misc]
    assert lo == pytest.approx(low, abs=1e-4)
    assert hi == pytest.approx(high, abs=1e-4)


def test_wilson_interval_over_zero_is_none_and_bad_counts_raise() -> None:
    assert stats.wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        stats.wilson_interval(11, 10)


def test_newcombe_paired_matches_published_example() -> None:
    # Published: p1 − p2 = −0.0621 (95 % CI −0.1186 to −0.0046) with the first test as p1.
    # Here the base passed 59 + 6 and the candidate 59 + 16: candidate − base = +0.0621.
    lo, hi = stats.newcombe_paired_interval(*CAVO)  # type: ignore[misc]
    assert lo == pytest.approx(0.0046, abs=1e-4)
    assert hi == pytest.approx(0.1186, abs=1e-4)


def test_newcombe_paired_is_antisymmetric_and_bounded() -> None:
    both, b_only, c_only, neither = CAVO
    lo, hi = stats.newcombe_paired_interval(both, c_only, b_only, neither)  # type: ignore[misc]
    assert (lo, hi) == pytest.approx((-0.1186, -0.0046), abs=1e-4)
    assert stats.newcombe_paired_interval(0, 0, 0, 0) is None
    lo, hi = stats.newcombe_paired_interval(0, 0, 5, 0)  # type: ignore[misc]
    assert -1.0 <= lo <= hi <= 1.0
    # No discordant pairs still leaves honest uncertainty about the difference.
    lo, hi = stats.newcombe_paired_interval(10, 0, 0, 0)  # type: ignore[misc]
    assert lo == pytest.approx(-0.2775, abs=1e-4) and hi == pytest.approx(0.2775, abs=1e-4)


def test_mcnemar_matches_published_example() -> None:
    test = stats.mcnemar(6, 16)
    assert test.p_exact == pytest.approx(0.052479, abs=1e-6)
    assert test.p_mid == pytest.approx(0.034690, abs=1e-6)


def test_mcnemar_edge_cases_and_large_counts() -> None:
    assert stats.mcnemar(0, 0).p_exact == 1.0
    assert stats.mcnemar(7, 7).p_exact == 1.0
    # Against the direct binomial sum for a moderate count.
    b, c = 40, 70
    n = b + c
    direct = 2 * sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    assert stats.mcnemar(b, c).p_exact == pytest.approx(direct, rel=1e-9)
    big = stats.mcnemar(4800, 5200)
    assert 0 < big.p_mid < big.p_exact < 1e-4
    assert stats.mcnemar(5000, 5000).p_exact == 1.0


def test_clustered_mean_with_equal_clusters_matches_statsmodels_cluster_robust_ols() -> None:
    sm = pytest.importorskip("statsmodels.api")
    rng = random.Random(3)
    values = [rng.gauss(0.1, 1.0) for _ in range(54)]
    groups = [i % 9 for i in range(54)]  # nine clusters of six: the jackknife equals CR1
    est = stats.clustered_mean(values, groups)
    assert est is not None
    fit = sm.OLS(values, [[1.0]] * 54).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert est.value == pytest.approx(float(fit.params[0]))
    assert est.se == pytest.approx(float(fit.bse[0]), rel=1e-9)
    assert est.df == 8 and est.clusters == 9
    # Without clusters it is the paired t interval.
    plain = stats.clustered_mean(values)
    assert plain is not None and plain.df == 53
    sd = stats.sample_variance(values) ** 0.5  # type: ignore[operator]
    assert plain.se == pytest.approx(sd / 54**0.5)
    lo, hi = plain.interval(0.95)
    assert (hi - lo) / 2 == pytest.approx(stats.t_quantile(0.975, 53) * plain.se)


def test_clustered_mean_with_unequal_clusters_is_the_cluster_jackknife() -> None:
    rng = random.Random(4)
    sizes = [40, 1, 1, 1, 2, 5]
    values = [rng.gauss(0.0, 1.0) for _ in range(sum(sizes))]
    groups = [g for g, m in enumerate(sizes) for _ in range(m)]
    est = stats.clustered_mean(values, groups)
    assert est is not None
    loo = [stats.mean([v for v, g in zip(values, groups, strict=True) if g != k]) for k in range(6)]
    centre = sum(loo) / 6  # type: ignore[arg-type]
    assert est.se == pytest.approx((5 / 6 * sum((x - centre) ** 2 for x in loo)) ** 0.5)  # type: ignore[operator]
    # One cluster holds 40 of 50 cases: about 1.5 equal clusters' worth, so 1 df, not 5.
    assert est.df == 1.0


def test_clustered_estimates_need_two_clusters() -> None:
    assert stats.clustered_mean([1.0, 2.0], ["g", "g"]) is None
    assert stats.clustered_mean([]) is None
    assert stats.clustered_log_ratio([1.0, 2.0], [1.0, 2.0], ["g", "g"]) is None
    assert stats.clustered_log_ratio([0.0, 0.0], [1.0, 1.0]) is None


def test_clustered_log_ratio_is_the_delta_method_on_the_log_scale() -> None:
    base = [1.0, 2.0, 3.0, 4.0]
    est = stats.clustered_log_ratio(base, [x * 1.2 for x in base])
    assert est is not None and est.change == pytest.approx(20.0) and est.se == pytest.approx(0.0)
    rng = random.Random(5)
    base = [rng.lognormvariate(0, 0.5) for _ in range(400)]
    cand = [x * 1.1 * rng.lognormvariate(0, 0.1) for x in base]
    est = stats.clustered_log_ratio(base, cand)
    assert est is not None and est.scale == "log"
    lo, hi = est.interval(0.95)
    assert lo < est.change < hi and lo > 0  # percent change, asymmetric around the estimate
    assert hi - est.change > est.change - lo


def test_estimate_p_values_invert_its_interval() -> None:
    est = stats.Estimate(value=-0.08, se=0.02, df=30.0)
    lo, hi = est.interval(0.95)
    assert est.p_below(hi) == pytest.approx(0.025)
    assert est.p_above(lo) == pytest.approx(0.025)
    log = stats.Estimate(value=0.3, se=0.1, df=float("inf"), scale="log")
    lo, hi = log.interval(0.90)
    assert log.p_above(lo) == pytest.approx(0.05)


def test_newcombe_p_values_invert_its_interval() -> None:
    counts = (50, 20, 10, 20)
    lo, hi = stats.newcombe_paired_interval(*counts, 0.95)  # type: ignore[misc]
    assert stats.newcombe_p_below(*counts, hi) == pytest.approx(0.025, rel=1e-6)
    assert stats.newcombe_p_above(*counts, lo) == pytest.approx(0.025, rel=1e-6)
    theta = (10 - 20) / 100
    assert stats.newcombe_p_below(*counts, theta + 0.5) < 1e-6
    assert stats.newcombe_p_below(*counts, theta - 0.5) > 1 - 1e-6
    assert stats.newcombe_p_below(0, 0, 0, 0, 0.0) == 1.0


def test_holm_matches_statsmodels() -> None:
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    p = [0.01, 0.04, 0.03, 0.005, 0.5, 0.2]
    expected = multitest.multipletests(p, method="holm")[1]
    assert stats.holm(p) == pytest.approx(list(expected))
    assert stats.holm([]) == []


def test_t_quantile_and_cdf() -> None:
    assert stats.t_quantile(0.975, 9) == pytest.approx(2.262157, abs=1e-6)
    assert stats.t_quantile(0.975, float("inf")) == pytest.approx(1.959964, abs=1e-6)
    assert stats.t_cdf(stats.t_quantile(0.9, 4), 4) == pytest.approx(0.9)
    with pytest.raises(ValueError):
        stats.t_quantile(1.0, 3)


def test_raw_agreement_and_cohens_kappa() -> None:
    a = ["yes", "yes", "no", "no"]
    b = ["yes", "no", "no", "no"]
    assert stats.raw_agreement(a, b) == 0.75
    assert stats.cohens_kappa(a, b) == pytest.approx(0.5)
    assert stats.cohens_kappa(a, a) == 1.0
    assert stats.cohens_kappa(["x"] * 4, ["x"] * 4) is None
    assert stats.cohens_kappa([], []) is None
    # A textbook table: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no → kappa 0.4.
    r1 = ["y"] * 25 + ["n"] * 25
    r2 = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert stats.cohens_kappa(r1, r2) == pytest.approx(0.4)
    with pytest.raises(ValueError):
        stats.cohens_kappa(["a"], [])


@pytest.mark.parametrize(("n", "c", "k"), [(10, 3, 1), (10, 3, 5), (20, 0, 3), (20, 20, 3), (200, 7, 10)])
def test_pass_at_k_and_pass_hat_k_match_the_combinatorial_forms(n: int, c: int, k: int) -> None:
    assert stats.pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k))
    assert stats.pass_hat_k(n, c, k) == pytest.approx(math.comb(c, k) / math.comb(n, k))


def test_pass_at_k_bounds() -> None:
    assert stats.pass_at_k(10, 8, 5) == 1.0  # fewer than k failures: some draw passes
    assert stats.pass_at_k(5, 2, 1) == pytest.approx(0.4)  # pass@1 is the pass rate
    assert stats.pass_hat_k(5, 2, 3) == 0.0
    with pytest.raises(ValueError):
        stats.pass_at_k(3, 1, 4)
    with pytest.raises(ValueError):
        stats.pass_hat_k(3, 4, 1)
