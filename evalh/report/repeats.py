"""Repeated attempts and intervals: the raw-attempts table, flakiness classes, pass@k and
pass^k, and the Wilson interval with the assumptions it needs checked first."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from evalh.core.stats import mean, pass_at_k, pass_hat_k, sample_variance
from evalh.labels.intervals import (
    HELD_OUT_SPLITS,
    WorkItem,
    interval_where_valid,
    pass_fail_source,
    work_item_key,
)
from evalh.models import CaseResult
from evalh.report.models import (
    AttemptCell,
    FlakinessClass,
    Interval,
    PassAtK,
    RawAttemptsRow,
    Repeats,
)
from evalh.report.parts import DECISIVE

__all__ = ["HELD_OUT_SPLITS"]  # one list of held-out splits, one interval rule (evalh.labels.intervals)

MAX_K_LISTED = 10


def by_case(results: Sequence[CaseResult]) -> dict[str, list[CaseResult]]:
    """Results grouped by case id, each group ordered by attempt; cases in first-seen order."""
    out: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        out[r.case_id].append(r)
    return {cid: sorted(rs, key=lambda r: r.attempt) for cid, rs in out.items()}


def flakiness(rs: Sequence[CaseResult]) -> FlakinessClass:
    """Class of one case from its decisive attempts (an errored attempt is not a pass)."""
    return flakiness_of([r.status for r in rs])


def flakiness_of(statuses: Sequence[str]) -> FlakinessClass:
    """Class of one case from the statuses of its attempts (see `flakiness`)."""
    decisive = [s for s in statuses if s in DECISIVE]
    if not decisive:
        return "unknown"
    passes = sum(s == "passed" for s in decisive)
    if passes == len(decisive):
        return "stable_pass"
    return "stable_fail" if passes == 0 else "flaky"


def repeats(results: Sequence[CaseResult]) -> Repeats | None:
    """The repeats section, or None when every result is a first attempt."""
    if not any(r.attempt > 0 for r in results):
        return None
    cases = by_case(results)
    raw = []
    for cid, rs in cases.items():
        scores = [r.score for r in rs if r.status in ("passed", "failed") and r.score is not None]
        raw.append(RawAttemptsRow(
            case_id=cid,
            attempts=[AttemptCell(attempt=r.attempt, status=r.status, score=r.score) for r in rs],
            passes=sum(r.status == "passed" for r in rs),
            decisive=sum(r.status in DECISIVE for r in rs),
            mean_score=mean(scores), score_variance=sample_variance(scores),
            scores_used=len(scores), flakiness=flakiness(rs),
        ))
    sizes = [len(rs) for rs in cases.values()]
    out = Repeats(attempts_min=min(sizes), attempts_max=max(sizes),
                  equal_attempts=min(sizes) == max(sizes), raw=raw)
    for row in raw:
        setattr(out, row.flakiness, getattr(out, row.flakiness) + 1)
    k_max = max((row.decisive for row in raw), default=0)
    ks = list(range(1, k_max + 1)) if k_max <= MAX_K_LISTED else [1, 2, 5, 10, k_max]
    for k in ks:
        eligible = [row for row in raw if row.decisive >= k]
        at = [pass_at_k(row.decisive, row.passes, k) for row in eligible]
        hat = [pass_hat_k(row.decisive, row.passes, k) for row in eligible]
        out.pass_at_k.append(PassAtK(k=k, pass_at_k=mean(at), pass_hat_k=mean(hat), cases=len(eligible)))
    return out


def interval(results: Sequence[CaseResult], regime: str, target: dict[str, Any] | None = None) -> Interval:
    """Wilson 95 % interval of the pass rate, by the one rule of `evalh.labels.intervals`
    (the label report and the dashboard use it too): every condition is checked and every
    one that fails is named. Each work item (`metadata.group`, else the case) is one binary
    trial: a success when it passed every attempt. A pass/fail that comes only from judges
    gets no interval (a judge is advisory)."""
    cases = by_case(results)
    repeated = any(r.attempt > 0 for r in results)
    items: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        items[work_item_key(r)].append(r)
    unit = "cases" if len(items) == len(cases) else "work items"
    of = f"{unit} passing every attempt" if repeated or unit != "cases" else "pass rate over cases"
    if not cases:
        return Interval(of=of, reason="no results")
    incomplete = sum(r.status not in ("passed", "failed") for r in results)
    verdict = interval_where_valid(
        [WorkItem(key=k, results=rs, outcome=all(r.status == "passed" for r in rs)) for k, rs in items.items()],
        source=pass_fail_source(results), arms={r.arm for r in results}, regime=regime, target=target,
        incomplete=[f"{incomplete} result(s) errored, unjudged or skipped: outcomes are incomplete"] if incomplete else (),
        incomplete_prefix="",
    )
    if verdict.low is None:
        return Interval(of=of, reason="; ".join(verdict.reasons) or "no work item")
    return Interval(of=of, successes=verdict.successes, n=verdict.n, low=verdict.low, high=verdict.high)
