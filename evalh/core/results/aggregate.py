"""Aggregates over case results: counts with denominators, rates null over zero."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Sequence

from evalh.models import Aggregate, CaseResult


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default method); None for no values."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    if lo == hi:
        return float(xs[lo])
    return float(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo))


def rate(num: int, den: int) -> float | None:
    return num / den if den else None


Facts = tuple[str, float | None, int | None, int | None, bool, float | None, float | None]
"""What `aggregate` reads of one result: (status, score, tokens_in, tokens_out, cached,
latency_ms, cost_usd). The runner keeps these per result (`evalh.core.run.retained`), not the
models."""


def facts_of(r: CaseResult) -> Facts:
    return (r.status, r.score, r.tokens_in, r.tokens_out, r.cached, r.latency_ms, r.cost_usd)


def aggregate(results: Iterable[CaseResult]) -> Aggregate:
    """Counts, rates and economics for a set of results (see `aggregate_facts`)."""
    return aggregate_facts(facts_of(r) for r in results)


def aggregate_facts(results: Iterable[Facts]) -> Aggregate:
    """Counts, rates and economics for a set of results, each as its `Facts`.

    `pass_rate` is passed / (passed + failed): errored and judge_error results are counted
    apart and never enter it. Cached replies cost nothing and stay out of latency figures.
    Cost is null when no result has a known cost; results with tokens but no price are
    counted in `cost_unknown`, never as 0. Sums follow the order given (the document's).
    """
    acc = Aggregator()
    for facts in results:
        acc.add(*facts)
    return acc.result()


class Aggregator:
    """`aggregate_facts` a result at a time: a reader that streams results keeps counts,
    sums and two arrays of numbers (scores, latencies), not the results."""

    def __init__(self) -> None:
        self.n = self.passed = self.failed = self.errored = self.judge_error = self.skipped = 0
        self.tokens_in = self.tokens_out = self.cached = self.cost_unknown = 0
        self.scores = array("d")
        self.latencies = array("d")
        self.cost: float | None = None

    def add(self, status: str, score: float | None, tokens_in: int | None, tokens_out: int | None,
            cached: bool, latency_ms: float | None, cost_usd: float | None) -> None:
        self.n += 1
        if status == "passed":
            self.passed += 1
        elif status == "failed":
            self.failed += 1
        elif status == "errored":
            self.errored += 1
        elif status == "judge_error":
            self.judge_error += 1
        else:
            self.skipped += 1
        if status in ("passed", "failed") and score is not None:
            self.scores.append(score)
        self.tokens_in += tokens_in or 0
        self.tokens_out += tokens_out or 0
        if cached:
            self.cached += 1
        elif latency_ms is not None and status != "skipped":
            self.latencies.append(latency_ms)
        if cost_usd is not None:
            self.cost = (self.cost or 0.0) + cost_usd
        elif not cached and (tokens_in is not None or tokens_out is not None):
            self.cost_unknown += 1

    def result(self) -> Aggregate:
        scores, decided = self.scores, self.passed + self.failed
        return Aggregate(
            n=self.n, passed=self.passed, failed=self.failed, errored=self.errored,
            judge_error=self.judge_error, skipped=self.skipped, tokens_in=self.tokens_in,
            tokens_out=self.tokens_out, cached=self.cached, cost_unknown=self.cost_unknown,
            pass_rate_denominator=decided, pass_rate=rate(self.passed, decided),
            error_rate=rate(self.errored, self.n - self.skipped),
            mean_score_denominator=len(scores), mean_score=sum(scores) / len(scores) if scores else None,
            cost_usd=self.cost, latency_ms_p50=percentile(self.latencies, 50),
            latency_ms_p95=percentile(self.latencies, 95),
        )
