"""Unit tests of evalh.core.stats against published or hand-computed values."""

from __future__ import annotations

import math
import random

import pytest

from evalh.core import stats

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


def test_paired_bootstrap_is_deterministic_and_covers_the_mean() -> None:
    rng = random.Random(3)
    base = [rng.random() for _ in range(300)]
    cand = [x - 0.05 + rng.gauss(0, 0.1) for x in base]
    one = stats.paired_bootstrap_mean_diff(base, cand, resamples=1000, seed=7)
    two = stats.paired_bootstrap_mean_diff(base, cand, resamples=1000, seed=7)
    other = stats.paired_bootstrap_mean_diff(base, cand, resamples=1000, seed=8)
    assert one == two and one != other
    lo, hi = one  # type: ignore[misc]
    d = sum(c - b for b, c in zip(base, cand, strict=True)) / len(base)
    assert lo < d < hi
    # For many cases the bootstrap and its normal limit agree.
    nlo, nhi = stats.paired_normal_mean_diff(base, cand)  # type: ignore[misc]
    assert lo == pytest.approx(nlo, abs=0.004) and hi == pytest.approx(nhi, abs=0.004)


def test_paired_intervals_need_two_pairs_of_equal_length() -> None:
    assert stats.paired_bootstrap_mean_diff([1.0], [0.0]) is None
    assert stats.paired_normal_mean_diff([1.0], [0.0]) is None
    with pytest.raises(ValueError):
        stats.paired_bootstrap_mean_diff([1.0, 2.0], [1.0])
    assert stats.paired_normal_mean_diff([1.0, 1.0], [1.0, 1.0]) == (0.0, 0.0)


def test_ratio_of_means_change() -> None:
    change, iv = stats.ratio_of_means_change([1.0, 2.0, 3.0], [1.2, 2.4, 3.6])  # type: ignore[misc]
    assert change == pytest.approx(0.2)
    assert iv == pytest.approx((0.2, 0.2))
    rng = random.Random(1)
    base = [rng.uniform(0.5, 1.5) for _ in range(400)]
    cand = [x * rng.uniform(1.0, 1.2) for x in base]
    change, (lo, hi) = stats.ratio_of_means_change(base, cand)  # type: ignore[misc]
    assert 0.05 < lo < change < hi < 0.15
    assert stats.ratio_of_means_change([0.0, 0.0], [1.0, 1.0]) is None
    assert stats.ratio_of_means_change([], []) is None


def test_median_ratio_change() -> None:
    assert stats.median_ratio_change([100.0] * 5, [150.0] * 5) == (pytest.approx(0.5), None)
    rng = random.Random(2)
    base = [rng.lognormvariate(5, 0.5) for _ in range(500)]
    cand = [x * 2 for x in base]
    change, (lo, hi) = stats.median_ratio_change(base, cand)  # type: ignore[misc]
    assert change == pytest.approx(1.0)
    assert lo < 1.0 < hi and lo > 0.5
    assert stats.median_ratio_change([], [1.0]) is None


def test_cases_needed_design_and_plug_in() -> None:
    z = stats.z_for(0.95)
    # se = 0.05 at n = 100; detecting 0.05 with 80 % power needs (1.96 + 0.84)² ≈ 7.85× more.
    assert stats.cases_needed(100, 0.05 * z, 0.05) == math.ceil(100 * (z + 0.841621) ** 2)
    # Already powered for the allowance, estimate sits 0.01 from the boundary: plug-in.
    plug = stats.cases_needed(1000, 0.02, 0.05, gap=0.01)
    assert plug is not None and plug > 1000
    assert stats.cases_needed(1000, 0.02, 0.05) is None
    assert stats.cases_needed(100, 0.1, 0.0) is None


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
