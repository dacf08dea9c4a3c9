"""Repeated attempts and intervals: the raw-attempts table, flakiness classes, pass@k and
pass^k, and the Wilson interval with the assumptions it needs checked first."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

from evalh.core.stats.intervals import mean, pass_at_k, pass_hat_k, sample_variance
from evalh.labels.intervals import HELD_OUT_SPLITS, ResultTraits, interval_verdict, work_item_key
from evalh.models import CaseResult
from evalh.report.models import (
    AttemptCell,
    FlakinessClass,
    Interval,
    PassAtK,
    RawAttemptsRow,
    Repeats,
)
from evalh.report.parts import DECISIVE, CaseIndex

__all__ = ["HELD_OUT_SPLITS"]  # one list of held-out splits, one interval rule (evalh.labels.intervals)

MAX_K_LISTED = 10


def flakiness_of(statuses: Sequence[str]) -> FlakinessClass:
    """Class of one case from the statuses of its attempts (see `flakiness`)."""
    decisive = [s for s in statuses if s in DECISIVE]
    if not decisive:
        return "unknown"
    passes = sum(s == "passed" for s in decisive)
    if passes == len(decisive):
        return "stable_pass"
    return "stable_fail" if passes == 0 else "flaky"


Attempt = tuple[int, str, float | None]
"""(attempt, status, score) of one result: what the repeats section reads of it."""


class RepeatsParts:
    """The repeats section, gathered a result at a time: per case its attempts' numbers."""

    def __init__(self) -> None:
        self.cases: dict[str, list[Attempt]] = {}

    def add(self, r: CaseResult) -> None:
        rs = self.cases.get(r.case_id)
        if rs is None:
            rs = self.cases[r.case_id] = []
        rs.append((r.attempt, r.status, r.score))

    def result(self) -> Repeats:
        cases = {cid: sorted(rs, key=lambda a: a[0]) for cid, rs in self.cases.items()}
        raw = []
        for cid, rs in cases.items():
            scores = [score for _, status, score in rs if status in ("passed", "failed") and score is not None]
            statuses = [status for _, status, _ in rs]
            raw.append(RawAttemptsRow(
                case_id=cid,
                attempts=[AttemptCell(attempt=attempt, status=status, score=score) for attempt, status, score in rs],
                passes=sum(s == "passed" for s in statuses),
                decisive=sum(s in DECISIVE for s in statuses),
                mean_score=mean(scores), score_variance=sample_variance(scores),
                scores_used=len(scores), flakiness=flakiness_of(statuses),
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


class IntervalParts:
    """Wilson 95 % interval of the pass rate, by the one rule of `evalh.labels.intervals`
    (the label report and the dashboard use it too): every condition is checked and every
    one that fails is named. Each work item (`metadata.group`, else the case) is one binary
    trial: a success when it passed every attempt. A pass/fail that comes only from judges
    gets no interval (a judge is advisory)."""

    def __init__(self, cases: CaseIndex, regime: str, target: dict[str, Any] | None) -> None:
        self.cases = cases
        self.regime, self.target = regime, target
        self.repeated = False
        self.case_results = array("q")
        """Per case (its index): its results that are no group's, a work item of their own."""
        self.case_passed = bytearray()
        """Per case: 1 while every one of those passed."""
        self.groups: dict[str, list[int]] = {}
        """Group (`metadata.group`) → [results, 1 when every one passed]."""
        self.incomplete = 0
        self.deciding = False
        self.judges_only = True
        self.arms: set[str] = set()
        self.traits = ResultTraits(target)

    def add(self, r: CaseResult, i: int) -> None:
        """`i`: the case's index."""
        self.repeated = self.repeated or r.attempt > 0
        group = r.metadata.get("group")  # the work item (`work_item_key`): the group, else the case
        if group is None:
            while len(self.case_results) <= i:
                self.case_results.append(0)
                self.case_passed.append(1)
            self.case_results[i] += 1
            if r.status != "passed":
                self.case_passed[i] = 0
        else:
            item = self.groups.get(key := work_item_key(r))
            if item is None:
                item = self.groups[key] = [0, 1]
            item[0] += 1
            if r.status != "passed":
                item[1] = 0
        if r.status not in ("passed", "failed"):
            self.incomplete += 1
        for s in r.scores:  # `pass_fail_source`: judge when every deciding score is a judge's
            if s.passed is not None:
                self.deciding = True
                self.judges_only = self.judges_only and s.judge_model is not None
        self.arms.add(r.arm)
        self.traits.add(r)

    def result(self) -> Interval:
        incomplete = self.incomplete
        items = [(n, ok) for n, ok in zip(self.case_results, self.case_passed, strict=True) if n]
        items += [(n, ok) for n, ok in self.groups.values()]
        unit = "cases" if len(items) == len(self.cases) else "work items"
        of = f"{unit} passing every attempt" if self.repeated or unit != "cases" else "pass rate over cases"
        if not len(self.cases):
            return Interval(of=of, reason="no results")
        verdict = interval_verdict(
            successes=sum(passed for _, passed in items), settled=len(items), items=len(items),
            sizes={n for n, _ in items}, traits=self.traits,
            source="judge" if self.deciding and self.judges_only else "outcome",
            arms=self.arms, regime=self.regime,
            incomplete=[f"{incomplete} result(s) errored, unjudged or skipped: outcomes are incomplete"] if incomplete else (),
            incomplete_prefix="",
        )
        if verdict.low is None:
            return Interval(of=of, reason="; ".join(verdict.reasons) or "no work item")
        return Interval(of=of, successes=verdict.successes, n=verdict.n, low=verdict.low, high=verdict.high)
