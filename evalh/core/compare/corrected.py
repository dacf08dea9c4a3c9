"""The comparison row of a judge's rate corrected by human labels (`compare --corrected`).

Pure. Each run's corrected rate and their difference come from `evalh.labels.corrected`
(prediction-powered inference, `evalh.core.stats.ppi`); here the difference becomes one
`MetricRow` of its suite and arm — a normal-theory `Evidence` — so it meets the same
decision rule (`decide`), allowance (the suite's pass-rate drop) and family (Holm) as every
other gating row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from evalh.core.compare.metrics import Evidence, _row
from evalh.core.compare.models import ComparePolicy, MetricRow, SuiteComparison
from evalh.core.stats import intervals as stats


@dataclass(frozen=True)
class CorrectedPair:
    """A judge's rate corrected by human labels on both runs of one suite and arm, and
    their difference (`evalh.labels.corrected`)."""

    scorer: str
    base: float
    cand: float
    value: float
    se: float
    paired: bool
    labelled: int


def corrected_row(policy: ComparePolicy, arm: str, pair: CorrectedPair, allowance: float) -> MetricRow:
    """The row of a corrected difference: its normal interval (PPI's CLT interval) held to
    the same decision rule, allowance (the suite's pass-rate drop) and family as every row."""
    est = stats.Estimate(value=pair.value, se=pair.se, df=math.inf, clusters=pair.labelled)
    method = ("PPI++ on per-item differences (one sample labelled on both)" if pair.paired
              else "PPI++ difference of two independent labelled samples")
    return _row(policy, arm=arm, name="corrected_pass_rate", better="higher", unit="abs", base=pair.base,
                cand=pair.cand, change=pair.value, evidence=Evidence(estimate=est), allowance=allowance,
                method=method, n=pair.labelled, scorer=pair.scorer)


def add_corrected_rows(suites: Mapping[str, SuiteComparison], corrected: Mapping[tuple[str, str], CorrectedPair],
                       policy: ComparePolicy) -> None:
    """Each (suite, arm)'s corrected row, one more gating row of its stochastic suite."""
    for (name, arm), pair in corrected.items():
        s = suites.get(name)
        if s is not None and s.regime == "stochastic" and arm in s._arm_verdicts:
            s.metrics.append(corrected_row(policy, arm, pair, float(s.thresholds["pass_rate_drop"])))
