"""The mechanics under `compare_runs`: results grouped by case, and the metric rows.

Pure: no I/O. A (case, arm) with several attempts is reduced to per-case figures first
(repeats averaged), so the case is the unit every interval resamples or counts.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from evalh.config import Thresholds
from evalh.core import stats
from evalh.core.aggregate import percentile
from evalh.core.compare_models import ComparePolicy, MetricName, MetricRow, RowVerdict
from evalh.models import CaseResult

Key = tuple[str, str]
"""(case_id, arm)"""

_EPS = 1e-12


@dataclass(slots=True)
class CaseFacts:
    """One (case, arm) of one run: its attempts reduced to what a comparison needs."""

    digest: str | None = None
    passed: int = 0
    failed: int = 0
    errored: int = 0
    judge_error: int = 0
    skipped: int = 0
    # Empty tuples until a value arrives: most cases of a large run carry no latency or
    # cost, and a million empty lists cost real time in allocation and garbage collection.
    scores: list[float] | tuple[()] = ()
    latencies: list[float] | tuple[()] = ()
    costs: list[float] | tuple[()] = ()
    graded: bool = False
    """Some score is not the pass indicator (1 on a pass, 0 on a fail)."""

    def add(self, r: CaseResult) -> None:
        status = r.status
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
            return
        score = r.score
        if score is not None and (status == "passed" or status == "failed"):
            self.scores = [*self.scores, score]
            if score != (1.0 if status == "passed" else 0.0):
                self.graded = True
        if r.latency_ms is not None and not r.cached:
            self.latencies = [*self.latencies, r.latency_ms]
        if r.cost_usd is not None:
            self.costs = [*self.costs, r.cost_usd]

    @property
    def valid(self) -> int:
        """Attempts with a pass/fail outcome."""
        return self.passed + self.failed

    @property
    def pass_frac(self) -> float | None:
        valid = self.passed + self.failed
        return self.passed / valid if valid else None

    @property
    def score(self) -> float | None:
        return math.fsum(self.scores) / len(self.scores) if self.scores else None

    @property
    def error_frac(self) -> float | None:
        tried = self.passed + self.failed + self.errored
        return self.errored / tried if tried else None

    @property
    def outcome(self) -> str:
        """One status for the case: errored > failed > judge_error > passed > skipped."""
        if self.errored:
            return "errored"
        if self.failed:
            return "failed"
        if self.judge_error:
            return "judge_error"
        if self.passed:
            return "passed"
        return "skipped"

    def binary_scores(self) -> bool:
        """Every pass/fail attempt scored 1 on a pass and 0 on a fail: its mean score is
        its pass rate."""
        return not self.graded and len(self.scores) == self.passed + self.failed


def group(results: Iterable[CaseResult]) -> dict[Key, CaseFacts]:
    """Results grouped by (case_id, arm), in first-seen order."""
    out: dict[Key, CaseFacts] = {}
    for r in results:
        key = (r.case_id, r.arm)
        facts = out.get(key)
        if facts is None:
            facts = out[key] = CaseFacts(r.case_digest)
        facts.add(r)
    return out


Pair = tuple[CaseFacts, CaseFacts]


# --------------------------------------------------------------------------- decisions


def decide(
    change: float | None, interval: tuple[float, float] | None, allowance: float, better: str
) -> RowVerdict:
    """The row verdict. Oriented so that a gain is positive:

    - `regressed`: the change is worse than the allowance and the interval excludes zero;
    - `improved`: better than the allowance and the interval excludes zero;
    - `flat`: the interval rules out a change worse than the allowance;
    - `inconclusive`: otherwise (the interval holds both a change beyond the allowance and
      one inside it); `incomparable` without a figure.
    """
    if change is None:
        return "incomparable"
    if interval is None:
        return "inconclusive"
    g, lo, hi = (change, *interval) if better == "higher" else (-change, -interval[1], -interval[0])
    if g < -allowance - _EPS and hi < 0:
        return "regressed"
    if g > allowance + _EPS and lo > 0:
        return "improved"
    if lo >= -allowance - _EPS:
        return "flat"
    return "inconclusive"


def _needed(row: MetricRow, policy: ComparePolicy) -> int | None:
    if row.verdict != "inconclusive" or row.interval is None or row.change is None:
        return None
    a = row.allowance
    g, lo, hi = (
        (row.change, *row.interval)
        if row.better == "higher"
        else (-row.change, -row.interval[1], -row.interval[0])
    )
    if g < -a:  # beyond the allowance: settles as regressed once the interval clears zero
        half, gap = hi - g, -g
    else:  # inside it: settles as flat once the interval clears the allowance
        half, gap = g - lo, g + a
    return stats.cases_needed(
        row.n, half, a, confidence=policy.confidence, power=policy.power, gap=gap
    )


def _seed(policy: ComparePolicy, *parts: str) -> int:
    return policy.seed ^ zlib.crc32("/".join(parts).encode())


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
    interval: tuple[float, float] | None,
    allowance: float,
    method: str,
    n: int,
    p_value: float | None = None,
    note: str | None = None,
) -> MetricRow:
    delta = cand - base if base is not None and cand is not None else None
    row = MetricRow(
        arm=arm, name=name, better=better, base=base, candidate=cand, delta=delta,
        change=change, unit=unit, allowance=allowance, interval=interval, method=method,
        p_value=p_value, n=n, verdict=decide(change, interval, allowance, better), note=note,
    )
    row.cases_needed = _needed(row, policy)
    return row


# --------------------------------------------------------------------------- rows


def _mean_diff(
    xs: Sequence[float], ys: Sequence[float], policy: ComparePolicy, seed: int
) -> tuple[tuple[float, float] | None, str]:
    if len(xs) <= policy.bootstrap_max_cases:
        iv = stats.paired_bootstrap_mean_diff(
            xs, ys, resamples=policy.bootstrap_resamples, seed=seed, confidence=policy.confidence
        )
        return iv, f"paired bootstrap over cases ({policy.bootstrap_resamples} resamples)"
    return stats.paired_normal_mean_diff(xs, ys, confidence=policy.confidence), "paired normal (CLT)"


def _proportion_row(
    policy: ComparePolicy, arm: str, name: MetricName, pairs: list[Pair],
    get: Callable[[CaseFacts], float | None], single: Callable[[CaseFacts], bool],
    better: Literal["higher", "lower"], allowance: float, suite: str,
) -> MetricRow:
    """A proportion per case (pass or error): Newcombe + McNemar when every case has one
    attempt on both sides, else the per-case fractions through the paired bootstrap."""
    xs, ys, one = [], [], True
    for b, c in pairs:
        x, y = get(b), get(c)
        if x is not None and y is not None:
            xs.append(x)
            ys.append(y)
            one = one and single(b) and single(c)
    n = len(xs)
    if n == 0:
        return _row(policy, arm=arm, name=name, better=better, unit="abs", base=None, cand=None,
                    change=None, interval=None, allowance=allowance, method="none", n=0,
                    note="no case has an outcome in both runs")
    base, cand = math.fsum(xs) / n, math.fsum(ys) / n
    if one:
        both = sum(1 for x, y in zip(xs, ys, strict=True) if x and y)
        b_only = sum(1 for x, y in zip(xs, ys, strict=True) if x and not y)
        c_only = sum(1 for x, y in zip(xs, ys, strict=True) if y and not x)
        iv = stats.newcombe_paired_interval(both, b_only, c_only, n - both - b_only - c_only,
                                            policy.confidence)
        test = stats.mcnemar(b_only, c_only)
        return _row(policy, arm=arm, name=name, better=better, unit="abs", base=base, cand=cand,
                    change=cand - base, interval=iv, allowance=allowance,
                    method="Newcombe paired score interval; McNemar mid-p", n=n, p_value=test.p_mid)
    iv, method = _mean_diff(xs, ys, policy, _seed(policy, suite, arm, name))
    return _row(policy, arm=arm, name=name, better=better, unit="abs", base=base, cand=cand,
                change=cand - base, interval=iv, allowance=allowance, method=method, n=n)


def _score_row(policy: ComparePolicy, arm: str, pairs: list[Pair], th: Thresholds, suite: str) -> MetricRow | None:
    scored = [(b, c) for b, c in pairs if b.scores and c.scores]
    if not scored:
        return None
    if all(b.binary_scores() and c.binary_scores() for b, c in scored):
        return None  # mean score is the pass rate: compared once, as pass rate
    xs = [b.score for b, _ in scored]
    ys = [c.score for _, c in scored]
    iv, method = _mean_diff(xs, ys, policy, _seed(policy, suite, arm, "mean_score"))  # type: ignore[arg-type]
    base, cand = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)  # type: ignore[arg-type]
    return _row(policy, arm=arm, name="mean_score", better="higher", unit="abs", base=base,
                cand=cand, change=cand - base, interval=iv, allowance=th.mean_score_drop,
                method=method, n=len(xs))


def _pct(iv: tuple[float, float] | None) -> tuple[float, float] | None:
    return (iv[0] * 100, iv[1] * 100) if iv is not None else None


def _paired_means(pairs: list[Pair], field: str) -> tuple[list[float], list[float]]:
    """Per case present on both sides with values of `field`: its mean on each side."""
    xs: list[float] = []
    ys: list[float] = []
    for b, c in pairs:
        bv, cv = getattr(b, field), getattr(c, field)
        if bv and cv:
            xs.append(math.fsum(bv) / len(bv))
            ys.append(math.fsum(cv) / len(cv))
    return xs, ys


def _cost_row(policy: ComparePolicy, arm: str, pairs: list[Pair], th: Thresholds) -> MetricRow | None:
    xs, ys = _paired_means(pairs, "costs")
    if not xs:
        return None
    base, cand = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)
    res = stats.ratio_of_means_change(xs, ys, confidence=policy.confidence)
    change, iv = (res[0] * 100, _pct(res[1])) if res else (None, None)
    return _row(policy, arm=arm, name="cost_usd", better="lower", unit="pct", base=base, cand=cand,
                change=change, interval=iv, allowance=th.cost_increase_pct,
                method="ratio of mean cost per case (delta method)", n=len(xs),
                note=None if res else "base cost is zero: no relative change")


def _latency_row(policy: ComparePolicy, arm: str, pairs: list[Pair], th: Thresholds) -> MetricRow | None:
    xs, ys = _paired_means(pairs, "latencies")
    if not xs:
        return None
    res = stats.median_ratio_change(xs, ys, confidence=policy.confidence)
    change, iv = (res[0] * 100, _pct(res[1])) if res else (None, None)
    note = None
    if res is None:
        note = "base median latency is zero: no relative change"
    elif iv is None:
        note = "fewer than 6 cases: no interval for a median"
    return _row(policy, arm=arm, name="latency_ms_p50", better="lower", unit="pct",
                base=percentile(xs, 50), cand=percentile(ys, 50), change=change, interval=iv,
                allowance=th.latency_p50_increase_pct,
                method="ratio of medians (order-statistic interval, conservative)", n=len(xs),
                note=note)


def stochastic_rows(
    policy: ComparePolicy, suite: str, arm: str, pairs: list[Pair], th: Thresholds
) -> list[MetricRow]:
    """Pass rate, mean score (when graded), error rate (when errors occur), cost and p50
    latency of one arm, over its paired cases."""
    rows = [
        _proportion_row(policy, arm, "pass_rate", pairs, lambda f: f.pass_frac,
                        lambda f: f.valid == 1, "higher", th.pass_rate_drop, suite)
    ]
    score = _score_row(policy, arm, pairs, th, suite)
    if score is not None:
        rows.append(score)
    if any(b.errored or c.errored for b, c in pairs):
        err = _proportion_row(policy, arm, "error_rate", pairs, lambda f: f.error_frac,
                              lambda f: f.passed + f.failed + f.errored == 1, "lower",
                              th.pass_rate_drop, suite)
        if err.verdict == "inconclusive":  # errors gate only when clearly beyond the allowance
            err.verdict, err.cases_needed = "flat", None
            err.note = "not distinguishable from noise: reported, does not gate"
        rows.append(err)
    for extra in (_cost_row(policy, arm, pairs, th), _latency_row(policy, arm, pairs, th)):
        if extra is not None:
            rows.append(extra)
    return rows


def deterministic_row(arm: str, pairs: list[Pair], regressed: int, improved: int) -> MetricRow:
    """The pass rate of a deterministic suite, for display; its verdict is by case name."""
    b_out = [b.outcome for b, _ in pairs]
    c_out = [c.outcome for _, c in pairs]

    def rate(outs: list[str]) -> float | None:
        den = sum(o in ("passed", "failed") for o in outs)
        return sum(o == "passed" for o in outs) / den if den else None

    base, cand = rate(b_out), rate(c_out)
    verdict: RowVerdict = "regressed" if regressed else ("improved" if improved else "flat")
    if not pairs:
        verdict = "incomparable"
    return MetricRow(
        arm=arm, name="pass_rate", better="higher", base=base, candidate=cand,
        delta=cand - base if base is not None and cand is not None else None,
        change=cand - base if base is not None and cand is not None else None,
        unit="abs", allowance=0.0, interval=None, method="by case name (zero tolerance)",
        n=len(pairs), verdict=verdict,
    )
