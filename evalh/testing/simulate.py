"""Seeded simulations of pairs of runs, for the statistical claims of `compare_runs`.

Used by ``tests/test_compare_statistical.py`` (a few hundred replications, in CI) and by
``bench/stats_bench.py`` (the full table in ``bench/stats_results.md``). Pure: builds
`Run` documents in memory; depends only on `evalh.models`, so the bench can load this file
next to an older evalh and measure the decision rule before a change.

A scenario draws, per case, a difficulty (the case's true pass probability or score) and,
per group of cases, a shock shared by the group's candidate answers (cases that share a
source document move together). The candidate's true change is known by construction, so
interval coverage can be counted against it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from evalh.models import CaseResult, DatasetInfo, EnvironmentInfo, Run, SuiteResult

ENV = EnvironmentInfo(evalh="sim", python="3", platform="sim")


@dataclass(frozen=True)
class Scenario:
    """One stochastic suite's data-generating process."""

    n: int
    """Cases."""
    delta: float = 0.0
    """True change of the candidate's pass probability (binary) or score (graded)."""
    graded: bool = False
    """Scores in [0, 1] with a pass at 0.5, instead of pass/fail only."""
    repeats: int = 1
    groups: int = 0
    """Cases fall into this many groups (metadata.group); 0: no groups."""
    shock: float = 0.0
    """Standard deviation of the group-level shock of the candidate (probability or score)."""
    cost_ratio: float | None = None
    """Candidate/base mean cost; None: no cost recorded."""
    latency_ratio: float | None = None
    """Candidate/base typical latency; None: no latency recorded."""
    latency_ms: float = 800.0
    """Typical base latency per case (lognormal around it)."""
    latency_jitter: float = 0.15
    """Standard deviation of the per-attempt log latency noise."""
    workload: str = "uniform"
    """`uniform`: case levels uniform in 0.35–0.85 (graded 0.4–0.8), the change added to each.
    `reference`: the reference workload of docs/methodology.md (pass/fail: 60 % of cases
    pass with probability 0.98, 15 % with 0.02, 25 % uniform in 0.2–0.8), the change
    applied in proportion to each case's probability, so the mean change is `delta`
    exactly and no case leaves [0, 1]. `high`: levels uniform in 0.8–0.98."""
    cost_case_sd: float = 0.6
    """Standard deviation of the per-case log cost (lognormal around $0.01)."""
    cost_attempt_sd: float = 0.2
    """Standard deviation of the per-attempt log cost noise (mean one on the cost scale)."""


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def suite_pair(sc: Scenario, rng: random.Random) -> tuple[SuiteResult, SuiteResult]:
    """A base and a candidate suite drawn from `sc`."""
    shocks = [rng.gauss(0.0, sc.shock) if sc.shock else 0.0 for _ in range(max(sc.groups, 1))]
    base: list[CaseResult] = []
    cand: list[CaseResult] = []
    for i in range(sc.n):
        cid = f"c{i}"
        g = i % sc.groups if sc.groups else 0
        meta = {"group": f"g{g}"} if sc.groups else {}
        level, scale = _level(sc, rng), 1.0
        if sc.workload == "reference":
            scale = level / REFERENCE_MEAN  # the change in proportion to the level
        cost = math.exp(rng.gauss(math.log(0.01), sc.cost_case_sd)) if sc.cost_ratio is not None else None
        lat = sc.latency_ms * math.exp(rng.gauss(0.0, 0.5))
        for side, out in ((0, base), (1, cand)):
            mu = level + (sc.delta * scale + shocks[g] if side else 0.0)
            for a in range(sc.repeats):
                if sc.graded:
                    score = _clip(mu + rng.uniform(-0.15, 0.15))
                    status = "passed" if score >= 0.5 else "failed"
                else:
                    ok = rng.random() < _clip(mu)
                    score, status = float(ok), "passed" if ok else "failed"
                c: float | None = None
                if cost is not None:
                    ratio = sc.cost_ratio if side and sc.cost_ratio is not None else 1.0
                    sd = sc.cost_attempt_sd  # E[exp(N(-sd²/2, sd))] = 1
                    c = cost * ratio * math.exp(rng.gauss(-sd * sd / 2, sd))
                ms = None
                if sc.latency_ratio is not None:
                    ratio = sc.latency_ratio if side else 1.0
                    ms = lat * ratio * math.exp(rng.gauss(0.0, sc.latency_jitter))
                out.append(CaseResult(
                    case_id=cid, case_digest=f"d-{cid}", attempt=a, status=status,  # type: ignore[arg-type]
                    score=score, metadata=meta, cost_usd=c, latency_ms=ms,
                ))
    return _suite(base, sc.n), _suite(cand, sc.n)


REFERENCE_MEAN = 0.6 * 0.98 + 0.15 * 0.02 + 0.25 * 0.5
"""Mean pass probability of the reference workload."""


def _level(sc: Scenario, rng: random.Random) -> float:
    if sc.workload == "reference":
        u = rng.random()
        return 0.98 if u < 0.6 else (0.02 if u < 0.75 else rng.uniform(0.2, 0.8))
    if sc.workload == "high":
        return rng.uniform(0.8, 0.98)
    return rng.uniform(0.35, 0.85) if not sc.graded else rng.uniform(0.4, 0.8)


def _suite(results: list[CaseResult], n: int) -> SuiteResult:
    # Validated, not `model_construct`: the results are model instances already (not
    # validated again), and `model_construct` inspects the signature of every default
    # factory on each call (0.4 ms a suite, seconds over a statistical test's replications).
    return SuiteResult(
        regime="stochastic", dataset=DatasetInfo(path="sim.jsonl", sha256="sim", cases=n),
        cases=results,
    )


def run_pair(
    scenarios: dict[str, Scenario], seed: int, config: dict[str, Any] | None = None
) -> tuple[Run, Run]:
    """Two runs, one suite per scenario, drawn with one seed; `config`: both runs' config
    snapshot (``{"suites": {name: {"gate": [...]}}}``, say)."""
    rng = random.Random(seed)
    pairs = {name: suite_pair(sc, rng) for name, sc in scenarios.items()}
    return _run("base", {k: v[0] for k, v in pairs.items()}, config), _run(
        "cand", {k: v[1] for k, v in pairs.items()}, config
    )


def _run(run_id: str, suites: dict[str, SuiteResult], config: dict[str, Any] | None = None) -> Run:
    return Run(
        run_id=run_id, status="complete", started_at="2026-01-01T00:00:00Z",
        environment=ENV, config=config or {}, suites=suites,
    )


def true_change(sc: Scenario, metric: str) -> float:
    """The change a row of `metric` estimates, in the row's unit."""
    if metric in ("pass_rate", "mean_score"):
        return sc.delta
    if metric == "cost_usd":
        return 100.0 * ((sc.cost_ratio or 1.0) - 1.0)
    if metric in ("latency_ms", "latency_ms_p50"):  # the row's name now and before
        return 100.0 * ((sc.latency_ratio or 1.0) - 1.0)
    raise ValueError(metric)
