"""Review of issue 10: the cluster-robust interval (CR1, G − 1 degrees of freedom) covers
93–97 % only with equal clusters (the bench uses ``i mod G``). When one `group` holds most
cases and the rest are clusters of one (cases without the field, as the docs allow), the
big cluster's residual is near zero by construction (the mean is mostly its own), the
standard error collapses, and under the very model the bench uses to justify clustering (a
shock shared by a group's candidate answers) unchanged code fails the gate about a third
of the time."""

from __future__ import annotations

import random

import pytest
from compare_factory import make_run, suite

from evalh.core.compare.decide import compare_runs
from evalh.models import CaseResult


def _runs(rng: random.Random):
    base, cand = [], []
    layout = [("main", 91)] + [(None, 1)] * 9  # 91 cases share a group, 9 carry none
    i = 0
    for label, size in layout:
        shock = rng.gauss(0.0, 0.05)
        for _ in range(size):
            level = rng.uniform(0.4, 0.8)
            meta = {"group": label} if label else {}
            for out, shift in ((base, 0.0), (cand, shock)):
                x = min(1.0, max(0.0, level + shift + rng.uniform(-0.15, 0.15)))
                out.append(CaseResult(case_id=f"c{i}", case_digest=f"d{i}", score=x, metadata=meta,
                                      status="passed" if x >= 0.5 else "failed"))
            i += 1
    return make_run("b", {"s": suite(base, "stochastic")}), make_run("c", {"s": suite(cand, "stochastic")})


@pytest.mark.statistical  # a fixed-seed simulation
def test_one_dominant_group_keeps_the_interval_honest() -> None:
    rng = random.Random(1)
    reps, covered, fails = 150, 0, 0
    for _ in range(reps):
        cmp = compare_runs(*_runs(rng))
        row = next(m for m in cmp.suites["s"].metrics if m.name == "mean_score")
        assert row.interval is not None
        covered += row.interval[0] <= 0.0 <= row.interval[1]
        fails += cmp.fails_gate
    # docs/methodology.md: 93–97 % coverage with clusters, false fails at most 2.5 %;
    # bounds widened by ~2 Monte Carlo standard errors at 150 replications.
    assert covered / reps >= 0.90, covered / reps
    assert fails / reps <= 0.05, fails / reps
