"""Builders of small run documents for the compare tests (not a test module)."""

from __future__ import annotations

import random
from typing import Any

from evalh.models import (
    CaseResult,
    DatasetInfo,
    EnvironmentInfo,
    Run,
    SuiteResult,
)

ENV = EnvironmentInfo(evalh="0.1.0", python="3.11", platform="test")


def result(
    case_id: str,
    status: str = "passed",
    *,
    score: float | None = None,
    attempt: int = 0,
    arm: str = "default",
    digest: str | None = None,
    latency_ms: float | None = None,
    cost_usd: float | None = None,
) -> CaseResult:
    if score is None and status in ("passed", "failed"):
        score = 1.0 if status == "passed" else 0.0
    return CaseResult(
        case_id=case_id, case_digest=digest or f"d-{case_id}", arm=arm, attempt=attempt,
        status=status, score=score, latency_ms=latency_ms, cost_usd=cost_usd,  # type: ignore[arg-type]
    )


def fast_result(case_id: str, status: str, score: float, attempt: int = 0) -> CaseResult:
    """A bare result, for the many-seed statistical tests."""
    return CaseResult(
        case_id=case_id, case_digest=f"d-{case_id}", attempt=attempt, status=status, score=score,  # type: ignore[arg-type]
    )


def suite(
    results: list[CaseResult], regime: str = "deterministic", sha256: str = "ds0"
) -> SuiteResult:
    n = len({r.case_id for r in results})
    return SuiteResult(
        regime=regime,  # type: ignore[arg-type]
        dataset=DatasetInfo(path="data/x.jsonl", sha256=sha256, cases=n),
        cases=results,
    )


def det_suite(outcomes: dict[str, str], **kw: Any) -> SuiteResult:
    """A deterministic suite from {case_id: status}."""
    return suite([result(cid, st) for cid, st in outcomes.items()], **kw)


def make_run(
    run_id: str = "base",
    suites: dict[str, SuiteResult] | None = None,
    *,
    status: str = "complete",
    status_reason: str | None = None,
    config: dict[str, Any] | None = None,
    label: str | None = None,
) -> Run:
    return Run(
        run_id=run_id, label=label, status=status, status_reason=status_reason,  # type: ignore[arg-type]
        started_at="2026-01-01T00:00:00Z", environment=ENV, config=config or {},
        suites=suites or {},
    )


def binary_runs(
    n: int, p_base: float, p_cand: float, seed: int, *, spread: float = 0.3
) -> tuple[Run, Run]:
    """Two runs of one stochastic suite, one attempt per case, pass/fail only.

    Each case has its own difficulty (pass probability drawn around the run's rate, so
    cases differ as real ones do); the candidate shifts every case by `p_cand − p_base`.
    """
    rng = random.Random(seed)
    base, cand = [], []
    for i in range(n):
        q = min(1.0, max(0.0, p_base + rng.uniform(-spread, spread)))
        qc = min(1.0, max(0.0, q + (p_cand - p_base)))
        cid = f"c{i}"
        ok_b, ok_c = rng.random() < q, rng.random() < qc
        base.append(fast_result(cid, "passed" if ok_b else "failed", float(ok_b)))
        cand.append(fast_result(cid, "passed" if ok_c else "failed", float(ok_c)))
    return (
        make_run("base", {"s": suite(base, "stochastic")}),
        make_run("cand", {"s": suite(cand, "stochastic")}),
    )


def graded_runs(
    n: int, mean_base: float, mean_cand: float, seed: int, *, repeats: int = 3, noise: float = 0.15
) -> tuple[Run, Run]:
    """Two runs of one stochastic suite with graded scores and repeats: each case has a true
    score around the run's mean; each attempt adds noise; pass means score ≥ 0.5."""
    rng = random.Random(seed)
    base, cand = [], []
    for i in range(n):
        true = rng.uniform(-0.25, 0.25)
        cid = f"c{i}"
        for a in range(repeats):
            for out, mean in ((base, mean_base), (cand, mean_cand)):
                s = min(1.0, max(0.0, mean + true + rng.gauss(0.0, noise)))
                out.append(fast_result(cid, "passed" if s >= 0.5 else "failed", s, a))
    return (
        make_run("base", {"s": suite(base, "stochastic")}),
        make_run("cand", {"s": suite(cand, "stochastic")}),
    )
