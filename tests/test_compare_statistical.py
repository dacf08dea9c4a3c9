"""compare_runs over many seeds: it must not cry wolf, and must not miss a real drop.

From issue 3: two runs drawn from the same stochastic distribution are `regressed` in at
most 5 % of seeds, and `flat` (not `inconclusive`) in at least 95 % once there are enough
cases (2,000 here); a real drop of twice the allowance is `regressed` in at least 95 % with
enough cases, and `inconclusive` rather than `flat` when there are too few.

Every scenario is seeded, so the test is deterministic. Runtime is kept modest by the
number of seeds, not by weaker assertions: graded runs at 2,000 cases use the paired
normal interval (the large-sample limit of the bootstrap, which the default policy itself
switches to above `bootstrap_max_cases`), and the bootstrap path is exercised at a smaller
size with fewer resamples.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from compare_factory import binary_runs, graded_runs

from evalh.core.compare import ComparePolicy, compare_runs
from evalh.models import Run

Maker = Callable[[int], tuple[Run, Run]]

ANALYTIC = ComparePolicy(bootstrap_max_cases=0)
BOOTSTRAP = ComparePolicy(bootstrap_resamples=300)


def verdicts(make: Maker, seeds: int, policy: ComparePolicy | None = None) -> Counter[str]:
    out: Counter[str] = Counter()
    for seed in range(seeds):
        out[compare_runs(*make(seed), policy).suites["s"].verdict] += 1
    return out


def share(counts: Counter[str], verdict: str) -> float:
    return counts[verdict] / sum(counts.values())


# Pass/fail, one attempt per case: Newcombe interval + McNemar. Allowance 0.05.


def test_binary_same_distribution_rarely_regresses_and_settles_flat() -> None:
    counts = verdicts(lambda s: binary_runs(2000, 0.8, 0.8, 1000 + s), 100)
    assert share(counts, "regressed") <= 0.05, counts
    assert share(counts, "flat") >= 0.95, counts


def test_binary_drop_of_twice_the_allowance_regresses_with_enough_cases() -> None:
    counts = verdicts(lambda s: binary_runs(2000, 0.8, 0.7, 2000 + s), 60)
    assert share(counts, "regressed") >= 0.95, counts


def test_binary_drop_of_twice_the_allowance_with_too_few_cases_is_not_flat() -> None:
    counts = verdicts(lambda s: binary_runs(30, 0.8, 0.7, 3000 + s), 200)
    assert share(counts, "flat") <= 0.05, counts
    assert share(counts, "inconclusive") >= 0.5, counts
    assert share(counts, "inconclusive") + share(counts, "regressed") >= 0.95, counts


# Graded scores with repeats: mean score (allowance 0.02) and per-case pass rate.


def test_graded_same_distribution_rarely_regresses_and_settles_flat() -> None:
    counts = verdicts(lambda s: graded_runs(2000, 0.7, 0.7, 4000 + s, repeats=2), 40, ANALYTIC)
    assert share(counts, "regressed") <= 0.05, counts
    assert share(counts, "flat") >= 0.95, counts


def test_graded_drop_of_twice_the_allowance_regresses_with_enough_cases() -> None:
    counts = verdicts(lambda s: graded_runs(2000, 0.7, 0.66, 5000 + s, repeats=2), 40, ANALYTIC)
    assert share(counts, "regressed") >= 0.95, counts


def test_graded_drop_of_twice_the_allowance_with_too_few_cases_is_not_flat() -> None:
    counts = verdicts(lambda s: graded_runs(20, 0.7, 0.66, 6000 + s, repeats=2), 200, ANALYTIC)
    assert share(counts, "flat") <= 0.05, counts
    assert share(counts, "inconclusive") >= 0.5, counts


# The paired bootstrap itself (the default below bootstrap_max_cases cases).


def test_bootstrap_same_distribution_rarely_regresses() -> None:
    counts = verdicts(lambda s: graded_runs(300, 0.7, 0.7, 7000 + s, repeats=2), 60, BOOTSTRAP)
    assert share(counts, "regressed") <= 0.05, counts


def test_bootstrap_drop_of_twice_the_allowance_regresses() -> None:
    counts = verdicts(lambda s: graded_runs(300, 0.7, 0.66, 8000 + s, repeats=2), 60, BOOTSTRAP)
    assert share(counts, "regressed") >= 0.95, counts
