"""What results mean: a case's status from its scores, and a run's headline numbers.

Pure functions, shared by the runner and anything that rebuilds a run (resume, rejudge).
"""

from __future__ import annotations

from typing import Any

from evalh.models import Run, Score


def decide_status(scores: list[Score], judge_names: set[str]) -> tuple[str, float | None]:
    """Case status from its scores.

    A deterministic scorer that crashed → `errored`; any verdict `passed=False` → `failed`;
    a judge that failed → `judge_error` (not a failure of the product); every scorer
    abstaining (or none configured) → `failed`: an abstention is never a pass.
    """
    values = [s.value for s in scores if s.value is not None and s.error is None]
    score = sum(values) / len(values) if values else None
    if any(s.error and s.scorer not in judge_names for s in scores):
        return "errored", score
    if any(s.passed is False for s in scores):
        return "failed", score
    if any(s.error and s.scorer in judge_names for s in scores):
        return "judge_error", score
    if any(s.passed is True for s in scores):
        return "passed", score
    return "failed", score


def summarize(run: Run) -> dict[str, Any]:
    """Headline numbers. Per-suite figures, never one blended pass rate across suites."""
    totals = {"cases": 0, "passed": 0, "failed": 0, "errored": 0, "judge_error": 0, "skipped": 0}
    per_suite = {}
    cost: float | None = None
    tokens_in = tokens_out = 0
    for name, s in run.suites.items():
        a = s.aggregate
        totals["cases"] += a.n
        for k in ("passed", "failed", "errored", "judge_error", "skipped"):
            totals[k] += getattr(a, k)
        tokens_in += a.tokens_in
        tokens_out += a.tokens_out
        if a.cost_usd is not None:
            cost = (cost or 0.0) + a.cost_usd
        per_suite[name] = {
            "regime": s.regime, "n": a.n, "passed": a.passed, "failed": a.failed,
            "errored": a.errored, "judge_error": a.judge_error, "pass_rate": a.pass_rate,
            "mean_score": a.mean_score,
        }
    gate_ok = all(
        s.aggregate.failed == 0 and s.aggregate.errored == 0
        for s in run.suites.values()
        if s.regime == "deterministic"
    )
    return {
        **totals, "tokens_in": tokens_in, "tokens_out": tokens_out, "cost_usd": cost,
        "deterministic_ok": gate_ok, "suites": per_suite,
    }
