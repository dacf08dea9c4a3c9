"""`evalh.core.stats.sequential`: the fixed-suite estimator, the baseline-only allocation and
the error-spending boundaries, checked against known values and by seeded simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalh.core.stats.sequential import (
    allocate,
    bernoulli_within,
    case_variance,
    fixed_suite_estimate,
    information_fractions,
    look_multipliers,
    mixture_multiplier,
    plan_looks,
    plan_suite,
    planning_variance,
    sequential_verdict,
    spending_boundaries,
    student_multiplier,
)
from evalh.testing.sequential_sim import BASE_ATTEMPTS, concentrated_drop, reference_probs


def test_one_look_spends_everything_at_the_fixed_n_multiplier() -> None:
    assert spending_boundaries([1.0], 0.025) == pytest.approx([1.959964], abs=1e-5)
    assert spending_boundaries([1.0], 0.005) == pytest.approx([2.575829], abs=1e-5)


def test_boundaries_match_the_published_obrien_fleming_like_values() -> None:
    # Kim-DeMets ρ = 3, three equally spaced looks, one-sided 0.025: the last look is near
    # the fixed-n 1.96 and the first far above it (O'Brien-Fleming-like).
    c = spending_boundaries([1 / 3, 2 / 3, 1.0], 0.025, 3.0)
    assert c[0] > 3.0 and 2.3 < c[1] < 2.6 and 1.96 < c[2] < 2.05


@pytest.mark.parametrize("fractions", [[1 / 3, 2 / 3, 1.0], [0.45, 0.72, 0.85, 0.93, 1.0],
                                       [0.2, 0.4, 0.6, 0.8, 1.0]])
def test_crossing_some_boundary_has_probability_alpha(fractions: list[float]) -> None:
    """A Brownian motion observed at the looks crosses some c_k with probability α (seeded
    simulation of 200,000 paths: Monte Carlo error 0.00035)."""
    c = np.array(spending_boundaries(fractions, 0.025, 3.0))
    rng = np.random.default_rng(5)
    inc = np.diff([0.0, *fractions])
    w = np.cumsum(rng.normal(size=(200_000, len(fractions))) * np.sqrt(inc), axis=1)
    crossed = (w / np.sqrt(fractions) >= c).any(axis=1).mean()
    assert abs(crossed - 0.025) < 0.0015


def test_a_look_that_spends_nothing_cannot_decide() -> None:
    c = spending_boundaries([0.5, 0.5, 1.0], 0.025, 3.0)
    assert math.isinf(c[1]) and math.isfinite(c[2])


def test_mixture_and_student_multipliers() -> None:
    # the normal-mixture sequence is wider than any spending boundary at the end
    assert 3.2 < mixture_multiplier(1.0, 0.025) < 3.4
    assert student_multiplier(1.96, math.inf) == 1.96
    assert student_multiplier(1.959964, 10) == pytest.approx(2.228139, abs=1e-4)
    assert math.isinf(student_multiplier(math.inf, 10))
    c_flat, c_reg = look_multipliers([0.5, 1.0], 2, 0.025, 5, math.inf)
    assert c_reg > c_flat > 1.96


def test_case_variance_is_the_attempts_or_the_squared_difference() -> None:
    assert case_variance(0.5, 0.01) == 0.01
    assert case_variance(-0.5, None) == 0.25
    assert bernoulli_within(1, 1) is None
    assert bernoulli_within(1, 2) == pytest.approx(0.25)  # p(1-p)/(m-1)


def test_fixed_suite_estimate_needs_cases_that_vary() -> None:
    assert fixed_suite_estimate([0.0] * 20, [0.0] * 20) is None
    est = fixed_suite_estimate([0.1] * 10 + [0.0] * 10, [0.04] * 10 + [0.0] * 10)
    assert est is not None
    assert est.value == pytest.approx(0.05) and est.se == pytest.approx(math.sqrt(0.4) / 20)
    assert est.df == pytest.approx(10.0)


def test_allocation_reads_the_baseline_and_spends_the_budget() -> None:
    variances = [planning_variance(9, 9)] * 6 + [planning_variance(4, 9)] * 4
    m = allocate(variances, 30, most=16)
    assert sum(m) == 30 and min(m) >= 1
    assert min(m[6:]) > max(m[:6])  # the varying cases get more
    assert allocate(variances, 5) == [1] * 10  # one attempt a case at least
    assert max(allocate(variances, 1000, most=4)) == 4


def test_information_fractions_rise_to_one() -> None:
    v = [0.05] * 6 + [0.22] * 4
    looks = plan_looks(v, 30)
    fr = information_fractions(v, looks, [x / 9 for x in v])
    assert len(fr) == len(looks) and fr[-1] == 1.0
    assert all(a < b for a, b in zip(fr, fr[1:], strict=False))


def test_looks_are_nested_neyman_allocations_cut_at_the_budget() -> None:
    """Each look is `allocate` at its own spend (k·n for k in LOOKS below the budget, then
    the budget), so a case never loses an attempt from one look to the next."""
    v = [planning_variance(9, 9)] * 60 + [planning_variance(4, 9)] * 25 + [planning_variance(0, 9)] * 15
    looks = plan_looks(v, 420)
    spends = [sum(m) for m in looks]
    assert spends == [100, 150, 200, 250, 300, 400, 420]
    for m in looks:
        assert m == allocate(v, sum(m))
    for a, b in zip(looks, looks[1:], strict=False):
        assert all(x <= y for x, y in zip(a, b, strict=True))
    assert plan_looks(v, 50) == [[1] * 100]  # below one a case: one look, one attempt each
    capped = plan_looks([0.2] * 10, 1000, most=2)  # 10, 15, 20 attempts; then nothing to add
    assert [sum(m) for m in capped] == [10, 15, 20] and capped[-1] == [2] * 10


def test_sequential_verdict() -> None:
    assert sequential_verdict(-0.10, 0.01, 0.05, 2.0, 2.0) == "regressed"
    assert sequential_verdict(0.0, 0.01, 0.05, 2.0, 2.0) == "flat"
    assert sequential_verdict(-0.04, 0.01, 0.05, 2.0, 2.0) == "inconclusive"
    assert sequential_verdict(0.10, 0.01, 0.05, 2.0, 2.0) == "improved"


@pytest.mark.statistical
def test_the_allocated_estimate_is_unbiased_and_its_interval_covers() -> None:
    """On the reference workload, with a concentrated 10-point drop: over 3,000 seeded
    replications at the full allocation (no stopping), the mean of the fixed-suite estimate
    minus the true change is zero within its Monte Carlo error, and the fixed-n 95 %
    interval covers the true change 93-97 % of the time (conservative on changed cases)."""
    rng = np.random.default_rng(26)
    errors, covered, reps = [], 0, 3000
    change = concentrated_drop(0.10)
    for _ in range(reps):
        p = reference_probs(rng)
        q = change(p, rng)
        passed_b = rng.binomial(BASE_ATTEMPTS, p)
        m = np.asarray(allocate([planning_variance(int(k), BASE_ATTEMPTS) for k in passed_b], 300))
        passed_c = rng.binomial(m, q)
        diffs = passed_c / m - passed_b / BASE_ATTEMPTS
        variances = []
        for i in range(len(p)):
            wc = bernoulli_within(int(passed_c[i]), int(m[i]))
            wb = bernoulli_within(int(passed_b[i]), BASE_ATTEMPTS)
            variances.append(case_variance(float(diffs[i]), None if wc is None else wc + (wb or 0.0)))
        est = fixed_suite_estimate(list(diffs), variances)
        assert est is not None
        truth = float(q.mean() - p.mean())
        errors.append(est.value - truth)
        lo, hi = est.interval(0.95)
        covered += lo <= truth <= hi
    bias, se = float(np.mean(errors)), float(np.std(errors) / math.sqrt(reps))
    assert abs(bias) < 3 * se
    assert 0.93 <= covered / reps <= 0.975


def test_cases_the_baseline_never_attempted_get_one_attempt_and_no_say_in_the_looks() -> None:
    """A case added to the dataset after the baseline has no baseline mean: the comparison
    cannot pair it, so more attempts of it buy nothing. It was planned at p = 0.5 (the
    largest variance there is) and took the most attempts at every look, and it counted in
    the information fractions of an estimate it is not in."""
    ids = [f"c{i}" for i in range(20)]
    counts = {(c, "a"): (i % 9, 9) for i, c in enumerate(ids)}
    looks, fractions, _ = plan_suite(ids, ["a"], counts, 160)
    added = [*ids, "new1", "new2"]
    looks2, fractions2, _ = plan_suite(added, ["a"], counts, 162)
    assert [m[-2:] for m in looks2] == [[1, 1]] * len(looks2)
    assert [m[:-2] for m in looks2] == looks and fractions2 == fractions
    assert sum(looks2[-1]) <= 162


@pytest.mark.parametrize("rho", [1.0, 3.0])
def test_every_look_spends_its_share_at_the_default_looks(rho: float) -> None:
    """The `flat` side spends α·t (ρ = 1) over nine or ten looks whose first fraction is
    0.16 (the budget 16× the cases): each look's crossing probability is α(t_k) − α(t_{k−1})
    (seeded simulation of 400,000 paths; the tests above check ρ = 3 at three to five looks)."""
    from evalh.core.stats.sequential import spent

    fractions = [0.1563, 0.2418, 0.2969, 0.3716, 0.4207, 0.5203, 0.6007, 0.668, 0.7812, 1.0]
    c = np.array(spending_boundaries(fractions, 0.025, rho))
    rng = np.random.default_rng(5)
    inc = np.diff([0.0, *fractions])
    z = np.cumsum(rng.normal(size=(400_000, len(fractions))) * np.sqrt(inc), axis=1) / np.sqrt(fractions)
    crossed = z >= c
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    want = np.diff([0.0, *(spent(t, 0.025, rho) for t in fractions)])
    for k, w in enumerate(want):
        assert abs(float((first == k).mean()) - w) < 0.0006
    assert abs(float(crossed.any(axis=1).mean()) - 0.025) < 0.0012


def test_a_look_a_few_calls_short_of_the_budget_is_not_taken() -> None:
    """--max-attempts 101 over 100 cases looked at 100 calls and again at 101: a round of
    one call, and the last look, left 1.25 % of α to spend, needed 2.10 standard errors
    where one look at 101 needs 1.96. A look within a tenth of an attempt a case of the
    budget is left out (the budget's look replaces it)."""
    v = [planning_variance(9, 9)] * 60 + [planning_variance(4, 9)] * 25 + [planning_variance(0, 9)] * 15
    assert [sum(m) for m in plan_looks(v, 101)] == [101]
    assert [sum(m) for m in plan_looks(v, 109)] == [109]
    assert [sum(m) for m in plan_looks(v, 110)] == [100, 110]
    assert [sum(m) for m in plan_looks(v, 605)] == [100, 150, 200, 250, 300, 400, 500, 605]
    assert [sum(m) for m in plan_looks(v, 420)] == [100, 150, 200, 250, 300, 400, 420]
