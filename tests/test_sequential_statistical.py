"""The goal rows of issue 26 at reduced precision: `--until-decided` on the reference workload
(`evalh.testing.sequential_sim`, through evalh's own decision functions), seeded.

The full table, with Monte Carlo errors and the design before this one side by side, is
bench/sequential_results.md (`python bench/sequential_bench.py`). Replications here are a
few hundred a row, so each bound is widened by about two Monte Carlo standard errors and
says so. A true drop of twice the allowance is *not* caught 80 % of the time at the default
budget on this workload (about 50-60 %: bench/sequential_results.md gives the frontier);
what is asserted for it is the measured frontier, not the goal.
"""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from evalh.testing.sequential_sim import (
    Change,
    Outcome,
    before,
    concentrated_drop,
    reference_probs,
    rounds,
    spread_drop,
    unchanged,
)

pytestmark = pytest.mark.statistical


def _run(change: Change, reps: int, seed: int, design=rounds, **kw: object) -> list[Outcome]:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(reps):
        p = reference_probs(rng)
        out.append(design(p, change(p, rng), rng, **kw))
    return out


def _share(outs: list[Outcome], verdict: str) -> float:
    return sum(o.verdict == verdict for o in outs) / len(outs)


def test_an_unchanged_candidate_is_flat_at_80_percent_within_2_5_times_the_calls() -> None:
    outs = _run(unchanged, 250, 1)
    # goal ≥ 80 % (bench: 82.7 %); 250 reps: SE ≈ 2.3 points
    assert _share(outs, "flat") >= 0.76
    assert _share(outs, "regressed") == 0.0
    calls = [o.calls for o in outs]
    assert statistics.median(calls) <= 250 and max(calls) <= 300  # the budget: 3 × 100


def test_drops_inside_the_allowance_are_not_called_regressions() -> None:
    outs = _run(spread_drop(0.04), 150, 2)
    assert _share(outs, "regressed") <= 0.05 + 0.035  # goal ≤ 5 %; SE ≤ 1.8 points


def test_a_drop_of_twice_the_allowance_is_caught_far_more_often_than_before() -> None:
    after = _run(spread_drop(0.10), 120, 3)
    conc = _run(concentrated_drop(0.10), 120, 4)
    old = _run(spread_drop(0.10), 400, 3, design=before)
    # the measured frontier (bench: about 51 % and 58 % at 3×), not the 80 % goal
    assert _share(after, "regressed") >= 0.38 and _share(conc, "regressed") >= 0.42
    assert _share(after, "regressed") >= _share(old, "regressed") + 0.1


def test_five_unchanged_suites_peeked_at_every_round_rarely_fail() -> None:
    rng = np.random.default_rng(5)
    fails = 0
    reps = 60
    for _ in range(reps):
        fails += any(rounds(p, p.copy(), rng, family=5).verdict == "regressed"
                     for p in (reference_probs(rng) for _ in range(5)))
    assert fails / reps <= 0.05 + 0.05  # goal ≤ 5 %; 60 families: SE ≤ 2.8 points


def test_the_family_as_compare_decides_it_keeps_the_changed_suites_power() -> None:
    """Each suite's share is weighted Holm's first share conditionalized on p_worse ≤ SELECT,
    recomputed at every look (`family_rounds`, as the merged compare decides): 5 unchanged
    suites rarely fail, and a 2× drop beside 4 unchanged suites keeps most of its own power
    (bench: 0.0 % and 45.0 % against 47.8 % alone)."""
    from evalh.core.compare.decide import SELECT
    from evalh.testing.sequential_sim import family_rounds

    rng = np.random.default_rng(6)
    fails = hit = 0
    reps = 60
    for _ in range(reps):
        ps = [reference_probs(rng) for _ in range(5)]
        fails += any(o.verdict == "regressed" for o in family_rounds(ps, [p.copy() for p in ps], rng, select=SELECT))
    assert fails / reps <= 0.05 + 0.05  # goal ≤ 5 %; 60 families: SE ≤ 2.8 points
    for _ in range(reps):
        ps = [reference_probs(rng) for _ in range(5)]
        qs = [spread_drop(0.10)(ps[0], rng), *[p.copy() for p in ps[1:]]]
        hit += family_rounds(ps, qs, rng, select=SELECT)[0].verdict == "regressed"
    # single-suite power about 48 % (bench); ≥ 80 % of it is 38 %, less two SEs of 60 reps
    assert hit / reps >= 0.38 - 0.13
