"""Review of issue 10: with two cases the family-wise promise ("the chance that any is
falsely called regressed is at most 2.5 %", printed by every compare) does not hold.

- Graded scores: the paired t interval of two equal differences has zero width, so two
  cases that each dropped one step of a 5-point judge scale are `regressed` with
  p_worse = 0. On unchanged code with such a scale this happens in about 6.5 % of
  comparisons.
- Pass/fail, one attempt: Newcombe's interval for two cases that both flipped pass → fail
  lies below −0.07 (the exact McNemar one-sided p is 0.25); with cases that pass half the
  time, unchanged code is `regressed` in 1/16 = 6.25 % of comparisons.
"""

from __future__ import annotations

import itertools
import random

import pytest
from compare_factory import make_run, result, suite

from evalh.core.compare.decide import ComparePolicy, compare_runs
from evalh.models import CaseResult


def _graded(scores: list[float]) -> list[CaseResult]:
    return [CaseResult(case_id=f"c{i}", case_digest=f"d{i}", score=s,
                       status="passed" if s >= 0.5 else "failed") for i, s in enumerate(scores)]


def _cmp(base: list[CaseResult], cand: list[CaseResult], policy: ComparePolicy | None = None):
    return compare_runs(make_run("b", {"s": suite(base, "stochastic")}),
                        make_run("c", {"s": suite(cand, "stochastic")}), policy)


def test_two_equal_score_drops_are_not_certain_evidence() -> None:
    cmp = _cmp(_graded([0.75, 1.0]), _graded([0.5, 0.75]))
    row = next(m for m in cmp.suites["s"].metrics if m.name == "mean_score")
    assert row.verdict != "regressed", (row.interval, row.p_worse)


@pytest.mark.statistical  # a fixed-seed simulation
def test_unchanged_code_on_a_five_point_judge_scale_two_cases_rarely_fails_the_gate() -> None:
    rng = random.Random(1)
    reps, fails = 1500, 0
    for _ in range(reps):
        levels = [rng.choice([1, 2, 3]) for _ in range(2)]
        base = [(lvl + rng.choice([-1, 0, 1])) / 4 for lvl in levels]
        cand = [(lvl + rng.choice([-1, 0, 1])) / 4 for lvl in levels]
        fails += _cmp(_graded(base), _graded(cand)).fails_gate
    # promised: at most 2.5 %; 1,500 replications have a Monte Carlo error of 0.4 points
    assert fails / reps <= 0.035, fails / reps


def test_pass_fail_two_cases_false_regressed_probability_is_at_most_the_family_alpha() -> None:
    # Unchanged product, every case passes with probability 1/2 on each side: enumerate
    # every outcome of two cases exactly, with the allowance 0 ("any distinguishable drop").
    policy = ComparePolicy(pass_rate_drop=0.0)
    p_regressed = 0.0
    for outcome in itertools.product(("passed", "failed"), repeat=4):
        base = [result("a", outcome[0]), result("b", outcome[1])]
        cand = [result("a", outcome[2]), result("b", outcome[3])]
        if _cmp(base, cand, policy).suites["s"].metrics[0].verdict == "regressed":
            p_regressed += 1 / 16
    assert p_regressed <= 0.025 + 1e-12, p_regressed
