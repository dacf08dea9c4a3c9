"""Repeated attempts and intervals: the raw-attempts table, flakiness classes, pass@k and
pass^k, and the Wilson interval with the assumptions it needs checked first."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from evalh.core.stats import mean, pass_at_k, pass_hat_k, sample_variance, wilson_interval
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

HELD_OUT_SPLITS = frozenset({"heldout", "held-out", "held_out", "holdout", "test"})
"""Splits read as a sample held out from development: the only cases an interval may
generalise from."""

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


def interval(results: Sequence[CaseResult], regime: str) -> Interval:
    """Wilson 95 % interval of the pass rate over cases, where its assumptions hold.

    Assumptions, checked in order, the first that fails named as the reason: a
    stochastic suite (a deterministic suite is a hand-picked regression set, not a sample);
    every case from a held-out split (`metadata.split` in `HELD_OUT_SPLITS`), so the cases
    stand for a population; complete outcomes (no errored, unjudged or skipped result);
    the same number of attempts for every case. Each case is one binary trial: with
    repeats, a case counts as a success when it passed every attempt.
    """
    cases = by_case(results)
    repeated = any(r.attempt > 0 for r in results)
    of = "cases passing every attempt" if repeated else "pass rate over cases"
    if not cases:
        return Interval(of=of, reason="no results")
    if regime != "stochastic":
        return Interval(of=of, reason="deterministic suite: hand-picked regression cases are "
                                      "not a sample of a population; counts are descriptive")
    splits = {str(r.metadata.get("split")) if r.metadata.get("split") is not None else None
              for r in results}
    if not splits <= HELD_OUT_SPLITS:
        shown = ", ".join(sorted(s or "(none)" for s in splits - HELD_OUT_SPLITS))
        return Interval(of=of, reason=f"not every case is from a held-out split (found: {shown}): "
                                      "not known to be a random sample")
    incomplete = sum(r.status not in ("passed", "failed") for r in results)
    if incomplete:
        return Interval(of=of, reason=f"{incomplete} result(s) errored, unjudged or skipped: "
                                      "outcomes are incomplete")
    sizes = {len(rs) for rs in cases.values()}
    if len(sizes) > 1:
        return Interval(of=of, reason=f"unequal attempts per case ({min(sizes)}–{max(sizes)})")
    n = len(cases)
    successes = sum(all(r.status == "passed" for r in rs) for rs in cases.values())
    low, high = wilson_interval(successes, n)  # type: ignore[misc]
    return Interval(of=of, successes=successes, n=n, low=low, high=high)
