"""The mechanics under `compare_runs`: results grouped by case, and the metric rows.

Pure: no I/O. A (case, arm) with several attempts is reduced to per-case figures first
(repeats averaged), so the case (or the cluster of cases it belongs to) is the unit every
interval counts. A row's verdict here is provisional: `compare_runs` then holds every
gating row of the comparison to one family-wise level (`apply_family`) and computes what
would settle the open ones (`plan_row`).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from evalh.config import DEFAULT_GATE, Thresholds
from evalh.core.compare.columns import Values
from evalh.core.compare.facts import SuiteFacts
from evalh.core.compare.models import ComparePolicy, Estimand, MetricName, MetricRow, RowVerdict
from evalh.core.stats import intervals as stats
from evalh.core.stats import paired as stats_paired
from evalh.core.stats.sequential import (
    case_variance,
    fixed_suite_estimate,
)

Key = tuple[str, str]
"""(case_id, arm)"""

_EPS = 1e-12

MIN_UNITS = 8
"""Fewest independent units (cases, or clusters) a row needs for an interval. Below it
the intervals' error rates are not what they say: two equal score drops give a t
interval of zero width, and a score interval calls two flips a regression that
McNemar's exact test puts at p = 0.25. Such a row is `inconclusive`."""


@dataclass(slots=True)
class Pairs:
    """The paired cases of one arm: row `b_rows[i]` of the base's facts with row
    `c_rows[i]` of the candidate's, in the order they were paired."""

    base: SuiteFacts
    cand: SuiteFacts
    b_rows: array[int] = field(default_factory=lambda: array("q"))
    c_rows: array[int] = field(default_factory=lambda: array("q"))

    def append(self, rb: int, rc: int) -> None:
        self.b_rows.append(rb)
        self.c_rows.append(rc)

    def __len__(self) -> int:
        return len(self.b_rows)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.b_rows, self.c_rows, strict=True)

    def cluster(self, rb: int, rc: int) -> str | None:
        """The pair's cluster: the base's value of the cluster field, else the candidate's."""
        cluster = self.base.cluster_of(rb)
        return cluster if cluster is not None else self.cand.cluster_of(rc)

    def subset(self, keep: Callable[[int, int], bool]) -> Pairs:
        out = Pairs(self.base, self.cand)
        for rb, rc in self:
            if keep(rb, rc):
                out.append(rb, rc)
        return out


# --------------------------------------------------------------------------- evidence


@dataclass(frozen=True)
class Evidence:
    """What a row's verdict and power rest on, whatever the interval method."""

    estimate: stats.Estimate | None = None
    """A t-based estimate (cluster-robust), or None for Tango's score interval."""
    counts: tuple[int, int, int, int] | None = None
    """(both, base_only, cand_only, neither) for Tango's paired score interval."""
    within: float | None = None
    """Mean over cases of the within-case variance of the per-case difference (the part of
    the noise repeats shrink); None without repeats."""
    repeats: float = 1.0
    """Mean attempts per case and side."""
    cand_repeats: float = 1.0
    """Mean attempts per case in the candidate."""

    def interval(self, confidence: float) -> tuple[float, float] | None:
        if self.estimate is not None:
            return self.estimate.interval(confidence)
        if self.counts is not None:
            return stats_paired.tango_interval(*self.counts, confidence)
        return None

    def p_below(self, change: float) -> float:
        if self.estimate is not None:
            return self.estimate.p_below(change)
        assert self.counts is not None
        return stats_paired.tango_p_below(*self.counts, change)

    def p_above(self, change: float) -> float:
        if self.estimate is not None:
            return self.estimate.p_above(change)
        assert self.counts is not None
        return stats_paired.tango_p_above(*self.counts, change)

    def se(self, confidence: float) -> float | None:
        """Standard error on the test scale (for Tango's interval: read off it)."""
        if self.estimate is not None:
            return self.estimate.se
        iv = self.interval(confidence)
        if iv is None:
            return None
        return (iv[1] - iv[0]) / (2 * stats.z_for(confidence))

    def to_test(self, change: float) -> float:
        return self.estimate.from_change(change) if self.estimate is not None else change


# --------------------------------------------------------------------------- decisions


def decide(
    change: float | None, interval: tuple[float, float] | None, allowance: float, better: str
) -> RowVerdict:
    """The row verdict, before the family adjustment. Oriented so that a gain is positive,
    with the allowance *a* as the margin of a non-inferiority test:

    - `regressed`: the whole interval lies beyond the allowance on the worse side (with
      *a* = 0: the interval excludes zero on the worse side);
    - `improved`: the whole interval lies beyond the allowance on the better side;
    - `flat`: the interval rules out a change worse than the allowance;
    - `inconclusive`: otherwise; `incomparable` without a figure.
    """
    if change is None:
        return "incomparable"
    if interval is None:
        return "inconclusive"
    _, lo, hi = (change, *interval) if better == "higher" else (-change, -interval[1], -interval[0])
    if hi < -allowance - _EPS:
        return "regressed"
    if lo > allowance + _EPS:
        return "improved"
    if lo >= -allowance - _EPS:
        return "flat"
    return "inconclusive"


def p_worse(row: MetricRow, ev: Evidence) -> float:
    """One-sided p-value of "the true change is worse than the allowance"."""
    if row.better == "higher":
        return ev.p_below(-row.allowance)
    return ev.p_above(row.allowance)


def _direction(change: float | None, better: str) -> Literal["worse", "better", "none"] | None:
    if change is None:
        return None
    g = change if better == "higher" else -change
    return "worse" if g < -_EPS else ("better" if g > _EPS else "none")


def join_notes(a: str | None, b: str) -> str:
    return f"{a}; {b}" if a else b


# --------------------------------------------------------------------------- rows


def _row(
    policy: ComparePolicy,
    *,
    arm: str,
    name: MetricName,
    better: Literal["higher", "lower"],
    unit: Literal["abs", "pct"],
    base: float | None,
    cand: float | None,
    change: float | None,
    evidence: Evidence | None,
    allowance: float,
    method: str,
    n: int,
    p_value: float | None = None,
    note: str | None = None,
    delta: float | None = None,
    scorer: str | None = None,
    gating: bool = True,
    cluster_by: str | None = None,
) -> MetricRow:
    if delta is None and base is not None and cand is not None:
        delta = cand - base
    if evidence is not None and _units(evidence, n) < MIN_UNITS:
        evidence = None
        note = join_notes(note, f"fewer than {MIN_UNITS} independent units: no interval")
    interval = evidence.interval(policy.confidence) if evidence is not None else None
    row = MetricRow(
        arm=arm, name=name, better=better, base=base, candidate=cand, delta=delta,
        change=change, unit=unit, allowance=allowance, interval=interval, method=method,
        p_value=p_value, n=n, verdict=decide(change, interval, allowance, better), note=note,
        scorer=scorer, gating=gating, direction=_direction(change, better),
    )
    if evidence is not None and interval is not None and change is not None:
        row._evidence = evidence
        row.p_worse = p_worse(row, evidence)
        est = evidence.estimate
        row.clusters = est.clusters if est is not None else n
        if est is not None and cluster_by is not None and est.clusters < n:
            row.cluster_by = cluster_by
    return row


def _units(ev: Evidence, n: int) -> int:
    return ev.estimate.clusters if ev.estimate is not None else n


@dataclass
class Columns:
    """Paired per-case values of one figure, with their clusters and within-case noise."""

    xs: list[float] = field(default_factory=list)
    ys: list[float] = field(default_factory=list)
    clusters: list[Hashable] = field(default_factory=list)
    within: list[float] = field(default_factory=list)
    attempts: list[int] = field(default_factory=list)
    cand_attempts: list[int] = field(default_factory=list)
    single: bool = True
    one_side: list[bool] = field(default_factory=list)
    """Per case: a side has a single attempt (its variance cannot be seen in it)."""

    def add(self, x: float, y: float, cluster: str | None, i: int) -> None:
        self.xs.append(x)
        self.ys.append(y)
        self.clusters.append(cluster if cluster is not None else ("case", i))

    @property
    def clustered(self) -> bool:
        return any(not isinstance(g, tuple) for g in self.clusters)

    def cluster_ids(self) -> list[Hashable] | None:
        return self.clusters if self.clustered else None

    def evidence(self, *, estimate: stats.Estimate | None) -> Evidence:
        within = None
        repeats = 1.0
        if self.attempts and max(self.attempts) > 2:  # two attempts = one a side
            within = math.fsum(self.within) / len(self.within)
            repeats = sum(self.attempts) / (2 * len(self.attempts))
        cand = sum(self.cand_attempts) / len(self.cand_attempts) if self.cand_attempts else 1.0
        return Evidence(estimate=estimate, within=within, repeats=repeats, cand_repeats=cand)


def _frac_var(k: int, n: int) -> float:
    """Variance of the mean of n Bernoulli attempts with k successes (unbiased)."""
    if n < 2:
        return 0.0
    p = k / n
    return p * (1 - p) * n / (n - 1) / n


def _values_var(values: Sequence[float]) -> float:
    v = stats.sample_variance(values)
    return (v or 0.0) / len(values) if values else 0.0


def _mean_row(
    policy: ComparePolicy, arm: str, name: MetricName, cols: Columns, *,
    better: Literal["higher", "lower"], allowance: float, cluster_by: str | None,
    scorer: str | None = None, gating: bool = True, note: str | None = None,
    estimand: Estimand = "population",
) -> MetricRow:
    """A mean of per-case values. Under the fixed-suite estimand (unclustered): the mean
    paired difference with the attempts' variance (`_fixed_suite`). Else: Tango's score
    interval when every case is one pass/fail attempt a side and unclustered, else the
    cluster-robust t interval of the mean paired difference."""
    n = len(cols.xs)
    if n == 0:
        return _row(policy, arm=arm, name=name, better=better, unit="abs", base=None,
                    cand=None, change=None, evidence=None, allowance=allowance, method="none",
                    n=0, scorer=scorer, gating=gating,
                    note=note or "no case has a value in both runs")
    base, cand = math.fsum(cols.xs) / n, math.fsum(cols.ys) / n
    p_value = None
    if estimand == "fixed-suite":
        row = _fixed_suite(policy, arm, name, cols, better=better, allowance=allowance,
                           scorer=scorer, gating=gating, note=note, cluster_by=cluster_by)
        if row is not None:
            return row
        note = join_notes(note, "population interval: " + (
            f"the cases are clustered by {cluster_by}" if cols.clustered else
            f"fewer than {MIN_UNITS} cases vary between attempts"))
    if cols.single and not cols.clustered:
        pairs = list(zip(cols.xs, cols.ys, strict=True))
        both = sum(1 for x, y in pairs if x and y)
        b_only = sum(1 for x, y in pairs if x and not y)
        c_only = sum(1 for x, y in pairs if y and not x)
        ev = Evidence(counts=(both, b_only, c_only, n - both - b_only - c_only))
        method = "Tango paired score interval"
        p_value = stats.mcnemar(b_only, c_only).p_mid
    else:
        diffs = [y - x for x, y in zip(cols.xs, cols.ys, strict=True)]
        ids = cols.cluster_ids()
        ev = cols.evidence(estimate=stats.clustered_mean(diffs, ids))
        method = (
            f"paired t over {len(set(ids))} clusters of cases by {cluster_by} "
            "(cluster-robust standard error)" if ids is not None
            else "paired t over cases"
        )
        if ev.estimate is None:
            note = join_notes(note, "fewer than two independent units: no interval")
    row = _row(policy, arm=arm, name=name, better=better, unit="abs", base=base, cand=cand,
               change=cand - base, evidence=ev, allowance=allowance, method=method, n=n,
               p_value=p_value, scorer=scorer, gating=gating, cluster_by=cluster_by, note=note)
    row.estimand = "population"
    return row


def case_variances(cols: Columns) -> list[float]:
    """Per case, the variance term of its paired difference under the fixed-suite
    estimand (`stats.sequential.case_variance`): the attempts' own variance when both sides
    have two or more, else the squared difference (never below the variance)."""
    return [case_variance(y - x, None if single else w)
            for x, y, w, single in zip(cols.xs, cols.ys, cols.within, cols.one_side, strict=True)]


def _fixed_suite(
    policy: ComparePolicy, arm: str, name: MetricName, cols: Columns, *,
    better: Literal["higher", "lower"], allowance: float, scorer: str | None, gating: bool,
    note: str | None, cluster_by: str | None,
) -> MetricRow | None:
    """The row under the fixed-suite estimand, or None when it does not apply (clustered
    cases: their attempts may share a shock within a run; fewer than `MIN_UNITS` cases whose
    attempts vary), where the population interval is used instead."""
    if cols.clustered:
        return None
    n = len(cols.xs)
    est = fixed_suite_estimate([y - x for x, y in zip(cols.xs, cols.ys, strict=True)],
                               case_variances(cols), min_varying=MIN_UNITS)
    if est is None:
        return None
    base, cand = math.fsum(cols.xs) / n, math.fsum(cols.ys) / n
    row = _row(policy, arm=arm, name=name, better=better, unit="abs", base=base, cand=cand,
               change=cand - base, evidence=cols.evidence(estimate=est), allowance=allowance,
               method="fixed suite: mean paired difference, variance of the attempts (t)",
               n=n, scorer=scorer, gating=gating, cluster_by=cluster_by, note=note)
    row.estimand = "fixed-suite"
    return row


Get = Callable[[SuiteFacts, int], float | None]
"""A figure of one row of a suite's facts."""


def _collect(
    pairs: Pairs, get: Get, count: Callable[[SuiteFacts, int], int],
    var: Callable[[SuiteFacts, int], float],
) -> Columns:
    cols = Columns()
    fb, fc = pairs.base, pairs.cand
    for i, (rb, rc) in enumerate(pairs):
        x, y = get(fb, rb), get(fc, rc)
        if x is None or y is None:
            continue
        cols.add(x, y, pairs.cluster(rb, rc), i)
        nb, nc = count(fb, rb), count(fc, rc)
        cols.single = cols.single and nb == 1 and nc == 1
        cols.one_side.append(nb < 2 or nc < 2)
        cols.attempts.append(nb + nc)
        cols.cand_attempts.append(nc)
        cols.within.append(var(fb, rb) + var(fc, rc))
    return cols


def _pass_cols(pairs: Pairs) -> Columns:
    return _collect(pairs, SuiteFacts.pass_frac, SuiteFacts.valid,
                    lambda f, r: _frac_var(f.passed(r), f.valid(r)))


def _error_cols(pairs: Pairs) -> Columns:
    return _collect(pairs, SuiteFacts.error_frac, SuiteFacts.tried,
                    lambda f, r: _frac_var(f.errored(r) + f.judge_error(r), f.tried(r)))


def _score_cols(pairs: Pairs, scorer: str | None) -> Columns:
    if scorer is None:
        return _collect(pairs, SuiteFacts.score, lambda f, r: f.scores.count(r),
                        lambda f, r: _values_var(f.scores.values(r)))
    cols = _collect(pairs, lambda f, r: f.scorer_mean(scorer, r),
                    lambda f, r: f.scorer_count(scorer, r),
                    lambda f, r: _values_var(_scorer_values(f, scorer, r)))
    cols.single = False  # scores are graded: never the pass/fail score interval
    return cols


def _scorer_values(f: SuiteFacts, scorer: str, row: int) -> list[float]:
    values = f.scorer_values.get(scorer)
    return values.values(row) if values is not None else []


def _blended_row(
    policy: ComparePolicy, arm: str, pairs: Pairs, th: Thresholds,
    cluster_by: str | None, gating: bool, estimand: Estimand = "population",
) -> MetricRow | None:
    fb, fc = pairs.base, pairs.cand
    scored = pairs.subset(lambda rb, rc: fb.scores.count(rb) > 0 and fc.scores.count(rc) > 0)
    if not len(scored):
        return None
    if all(fb.binary_scores(rb) and fc.binary_scores(rc) for rb, rc in scored):
        return None  # mean score is the pass rate: compared once, as pass rate
    cols = _score_cols(scored, None)
    cols.single = False
    note = None if gating else "the mean of every scorer blended: shown, does not gate"
    return _mean_row(policy, arm, "mean_score", cols, better="higher",
                     allowance=th.mean_score_drop, cluster_by=cluster_by, gating=gating,
                     note=note, estimand=estimand)


def _paired_means(pairs: Pairs, column: str, *, positive: bool = False) -> Columns:
    """Per case present on both sides with values in `column` (`latencies`, `costs`): its
    mean on each side (only cases whose means are both above zero, with `positive`)."""
    cols = Columns()
    vb: Values = getattr(pairs.base, column)
    vc: Values = getattr(pairs.cand, column)
    for i, (rb, rc) in enumerate(pairs):
        x, y = vb.mean(rb), vc.mean(rc)
        if x is not None and y is not None and (not positive or (x > 0 and y > 0)):
            cols.add(x, y, pairs.cluster(rb, rc), i)
    return cols


def _cost_row(
    policy: ComparePolicy, arm: str, pairs: Pairs, th: Thresholds, cluster_by: str | None
) -> MetricRow | None:
    cols = _paired_means(pairs, "costs")
    if not cols.xs:
        return None
    n = len(cols.xs)
    base, cand = math.fsum(cols.xs) / n, math.fsum(cols.ys) / n
    est = stats.clustered_log_ratio(cols.xs, cols.ys, cols.cluster_ids())
    note = None
    if est is None:
        note = ("base cost is zero: no relative change" if base <= 0 or cand <= 0
                else "fewer than two independent units: no interval")
    change = 100.0 * (cand / base - 1.0) if base > 0 else None
    return _row(policy, arm=arm, name="cost_usd", better="lower", unit="pct", base=base,
                cand=cand, change=change, evidence=Evidence(estimate=est) if est else None,
                allowance=th.cost_increase_pct, n=n, cluster_by=cluster_by, note=note,
                method="ratio of mean cost per case, log scale (cluster jackknife, t)")


def _latency_row(
    policy: ComparePolicy, arm: str, pairs: Pairs, th: Thresholds, cluster_by: str | None
) -> MetricRow | None:
    cols = _paired_means(pairs, "latencies", positive=True)
    xs, ys = cols.xs, cols.ys
    if not xs:
        return None
    # Geometric means: their ratio is the mean of the paired log ratios the interval is of.
    base = math.exp(math.fsum(math.log(x) for x in xs) / len(xs))
    cand = math.exp(math.fsum(math.log(y) for y in ys) / len(ys))
    logs = [math.log(y / x) for x, y in zip(xs, ys, strict=True)]
    est = stats.clustered_mean(logs, cols.cluster_ids())
    if est is not None:
        est = replace(est, scale="log")
    allowance, note = th.latency_p50_increase_pct, None
    if th.latency_floor_ms > 0 and 100.0 * th.latency_floor_ms / base > allowance:
        allowance = 100.0 * th.latency_floor_ms / base
        note = (f"allowance raised to {allowance:.4g} % by the {th.latency_floor_ms:g} ms floor "
                f"(base {base:.3g} ms)")
    if est is None:
        note = join_notes(note, "fewer than two independent units: no interval")
    change = 100.0 * math.expm1(math.fsum(logs) / len(logs))
    return _row(policy, arm=arm, name="latency_ms", better="lower", unit="pct", base=base,
                cand=cand, change=change, evidence=Evidence(estimate=est) if est else None,
                allowance=allowance, n=len(xs), cluster_by=cluster_by, note=note,
                method="geometric mean of per-case latency, paired (t on the log ratios)")


def stochastic_rows(
    policy: ComparePolicy, arm: str, pairs: Pairs, th: Thresholds, *,
    cluster_by: str | None = "group", gate_scores: Sequence[str] = (),
    estimand: Estimand = "fixed-suite",
    gate: frozenset[str] = DEFAULT_GATE,
) -> list[MetricRow]:
    """Pass rate, mean score (when graded), one row per gated scorer, error rate (when
    errors occur), cost and latency of one arm, over its paired cases. Rows named in
    `gate` (and the `gate_scores` rows) gate; the others are reported only."""
    fb, fc = pairs.base, pairs.cand
    rows = [
        _mean_row(policy, arm, "pass_rate", _pass_cols(pairs), better="higher",
                  allowance=th.pass_rate_drop, cluster_by=cluster_by, estimand=estimand)
    ]
    blended = _blended_row(policy, arm, pairs, th, cluster_by,
                           gating=not gate_scores and "mean_score" in gate, estimand=estimand)
    if blended is not None:
        rows.append(blended)
    for name in gate_scores:
        rows.append(_mean_row(
            policy, arm, "score", _score_cols(pairs, name), better="higher",
            allowance=th.mean_score_drop, cluster_by=cluster_by, scorer=name, estimand=estimand,
            note=None if any(fb.scorer_count(name, rb) for rb in pairs.b_rows)
            else f"scorer {name} gave no value in the base",
        ))
    if any(fb.errored(rb) or fc.errored(rc) or fb.judge_error(rb) or fc.judge_error(rc)
           for rb, rc in pairs):
        rows.append(_mean_row(policy, arm, "error_rate", _error_cols(pairs), better="lower",
                              allowance=th.pass_rate_drop, cluster_by=cluster_by))
    for extra in (_cost_row(policy, arm, pairs, th, cluster_by),
                  _latency_row(policy, arm, pairs, th, cluster_by)):
        if extra is not None:
            rows.append(extra)
    for row in rows:  # every row says what it estimated (cost, latency, errors: the population)
        if row.estimand is None and row.interval is not None:
            row.estimand = "population"
    for row in rows:
        if row.name != "score" and row.gating and row.name not in gate:
            row.gating = False
            row.note = join_notes(row.note, "reported only: not among the suite's gating rows "
                                       "(`gate`)")
    return rows


def deterministic_row(
    arm: str, n: int, base: tuple[int, int], cand: tuple[int, int], regressed: int, improved: int
) -> MetricRow:
    """The pass rate of a deterministic suite, for display; its verdict is by case name.
    `base`, `cand`: (cases passed, cases passed or failed) of the `n` compared."""
    b_rate = base[0] / base[1] if base[1] else None
    c_rate = cand[0] / cand[1] if cand[1] else None
    verdict: RowVerdict = "regressed" if regressed else ("improved" if improved else "flat")
    if not n:
        verdict = "incomparable"
    delta = c_rate - b_rate if b_rate is not None and c_rate is not None else None
    return MetricRow(
        arm=arm, name="pass_rate", better="higher", base=b_rate, candidate=c_rate,
        delta=delta, change=delta, unit="abs", allowance=0.0, interval=None,
        method="by case name (zero tolerance)", n=n, verdict=verdict, estimand="fixed-suite",
    )

