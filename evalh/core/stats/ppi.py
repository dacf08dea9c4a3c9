"""Prediction-powered inference: a judge's figure corrected by a random labelled subset.

Pure statistics, no I/O. A judge scores every item (`yhat`, 0/1 or a number); humans
label a *random* subset of them (`y`). The PPI++ estimate of the human-scale mean
(Angelopoulos, Duchi, Zrnic, "PPI++: Efficient Prediction-Powered Inference", 2023;
Angelopoulos, Bates, Fannjiang, Jordan, Zrnic, "Prediction-powered inference", Science
382, 2023) is

    θ̂ = λ · mean(ŷ over the unlabelled items) + mean(y − λ·ŷ over the labelled items)

— the judge's figure, corrected by the judge-minus-human difference measured where both
exist. It is unbiased for the human-scale mean for every λ; λ is power-tuned (the PPI++
choice minimising the estimate's variance, clipped to [0, 1]): λ = 1 is classic PPI,
λ = 0 is humans alone. The 95 % interval is the normal (CLT) one,
θ̂ ± z·√(var₀(λŷᵤ)/N + var₀(y − λŷ)/n), with population (ddof 0) variances.

Every formula here is the reference implementation's (`ppi_py.ppi_mean_pointestimate`
and `ppi_py.ppi_mean_ci` with `lam=None`, `lam_optim_mode="overall"`, no weights); the
tests cross-check both to 1e-9. One addition: a judge constant over the data has no
variance to tune on, so λ = 0 there (the reference divides by zero).

The unlabelled items are the judged items *not* labelled, so the two samples are
disjoint, as the method assumes (a random subset and its complement).

Stratified PPI (Fisch et al., "Stratified Prediction-Powered Inference for Hybrid
Language Model Evaluation", NeurIPS 2024): the items fall into strata known for every
item; each stratum gets its own PPI++ estimate and λ, combined with the strata's shares
of all judged items as weights, θ̂ = Σ wₖθ̂ₖ, se² = Σ wₖ²seₖ². Labels may then be drawn
at different rates per stratum (`neyman_allocation`: more where the judge–human
difference varies most) without biasing the estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from evalh.core.stats.intervals import z_for


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def _var0(xs: Sequence[float]) -> float:
    """Population variance (ddof 0), as numpy's default `std` squares to."""
    m = _mean(xs)
    return math.fsum((x - m) ** 2 for x in xs) / len(xs)


def tuned_lambda(y: Sequence[float], yhat: Sequence[float], yhat_unlabelled: Sequence[float]) -> float:
    """The PPI++ power-tuning weight for a mean, clipped to [0, 1]:
    cov₀(y, ŷ) / ((1 + n/N) · var₁(ŷ over labelled and unlabelled)), with cov₀ over the n
    labelled items (ddof 0) and var₁ over all n + N judge values (ddof 1), as the reference
    implementation computes it. 0 when the judge is constant (nothing to tune on)."""
    n, big_n = len(y), len(yhat_unlabelled)
    my, mh = _mean(y), _mean(yhat)
    cov = math.fsum((a - my) * (b - mh) for a, b in zip(y, yhat, strict=True)) / n
    every = list(yhat) + list(yhat_unlabelled)
    ma = _mean(every)
    var = math.fsum((b - ma) ** 2 for b in every) / (len(every) - 1)
    if var <= 0.0:
        return 0.0
    lam = cov / ((1.0 + n / big_n) * var)
    return min(1.0, max(0.0, lam))


def normal_interval(center: float, se: float, confidence: float) -> tuple[float, float]:
    """center ± z · se: the CLT interval every estimate here reports (as ppi-python's)."""
    half = z_for(confidence) * se
    return center - half, center + half


@dataclass(frozen=True)
class PPIEstimate:
    """A PPI++ estimate of a human-scale mean, with what it rests on."""

    estimate: float
    se: float
    lam: float
    """The power-tuning weight used (0: humans alone; 1: classic PPI)."""
    labelled: int
    """n: items with both a human label and a judge value."""
    unlabelled: int
    """N: judged items without a human label."""
    human_var: float
    """var₀ of the human labels: humans alone would have se √(human_var / n)."""
    rectifier_var: float
    """var₀(y − λŷ) over the labelled items: the disagreement the correction carries."""
    judge_var: float
    """var₀(λŷ) over the unlabelled items."""
    confidence: float = 0.95

    @property
    def interval(self) -> tuple[float, float]:
        return normal_interval(self.estimate, self.se, self.confidence)

    @property
    def judged(self) -> int:
        return self.labelled + self.unlabelled

    @property
    def effective_labels(self) -> float | None:
        """Human labels that alone would give this se: n · (var(y)/n) / se². None when the
        humans agree on everything (their own se is zero, nothing to compare)."""
        if self.se <= 0.0 or self.human_var <= 0.0:
            return None
        return self.human_var / self.se ** 2

    @property
    def labels_gained(self) -> float | None:
        """Effective sample size gained over humans alone (effective labels − n)."""
        eff = self.effective_labels
        return None if eff is None else eff - self.labelled

    def as_dict(self) -> dict[str, object]:
        lo, hi = self.interval
        return {"estimate": self.estimate, "interval_95": [lo, hi], "se": self.se, "lambda": self.lam,
                "labelled": self.labelled, "judged": self.judged, "unlabelled": self.unlabelled,
                "effective_labels": self.effective_labels, "labels_gained": self.labels_gained}


def ppi_mean(
    y: Sequence[float], yhat: Sequence[float], yhat_unlabelled: Sequence[float], *,
    lam: float | None = None, confidence: float = 0.95,
) -> PPIEstimate:
    """The PPI++ estimate (see the module doc); `lam=None` power-tunes it. Needs at least
    two labelled and one unlabelled item."""
    n, big_n = len(y), len(yhat_unlabelled)
    if n != len(yhat):
        raise ValueError(f"{n} labels but {len(yhat)} judge values on the labelled items")
    if n < 2 or big_n < 1:
        raise ValueError(f"PPI needs at least 2 labelled and 1 unlabelled item (got {n} and {big_n})")
    if lam is None:
        lam = tuned_lambda(y, yhat, yhat_unlabelled)
    rect = [a - lam * b for a, b in zip(y, yhat, strict=True)]
    imputed = [lam * b for b in yhat_unlabelled]
    est = _mean(imputed) + _mean(rect)
    rv, jv = _var0(rect), _var0(imputed)
    se = math.sqrt(jv / big_n + rv / n)
    return PPIEstimate(estimate=est, se=se, lam=lam, labelled=n, unlabelled=big_n, human_var=_var0(y),
                       rectifier_var=rv, judge_var=jv, confidence=confidence)


@dataclass(frozen=True)
class Stratum:
    """One stratum's data: labels and judge values where labelled, judge values elsewhere."""

    y: Sequence[float]
    yhat: Sequence[float]
    yhat_unlabelled: Sequence[float]

    @property
    def size(self) -> int:
        return len(self.yhat) + len(self.yhat_unlabelled)


@dataclass(frozen=True)
class StratifiedEstimate:
    estimate: float
    se: float
    weights: list[float]
    """Each stratum's share of all judged items."""
    strata: list[PPIEstimate]
    confidence: float = 0.95

    @property
    def interval(self) -> tuple[float, float]:
        return normal_interval(self.estimate, self.se, self.confidence)

    @property
    def labelled(self) -> int:
        return sum(s.labelled for s in self.strata)

    @property
    def judged(self) -> int:
        return sum(s.judged for s in self.strata)

    @property
    def human_var(self) -> float:
        """Variance per label of the stratified humans-alone estimate at the same labels:
        n · Σ wₖ² var(yₖ)/nₖ (what effective labels are measured against)."""
        n = self.labelled
        return n * math.fsum(w * w * s.human_var / s.labelled for w, s in zip(self.weights, self.strata, strict=True))

    @property
    def effective_labels(self) -> float | None:
        hv = self.human_var
        return None if self.se <= 0.0 or hv <= 0.0 else hv / self.se ** 2

    @property
    def labels_gained(self) -> float | None:
        eff = self.effective_labels
        return None if eff is None else eff - self.labelled

    def as_dict(self) -> dict[str, object]:
        lo, hi = self.interval
        return {"estimate": self.estimate, "interval_95": [lo, hi], "se": self.se, "labelled": self.labelled,
                "judged": self.judged, "effective_labels": self.effective_labels,
                "labels_gained": self.labels_gained, "weights": self.weights,
                "lambdas": [s.lam for s in self.strata]}


def ppi_stratified(strata: Sequence[Stratum], *, confidence: float = 0.95) -> StratifiedEstimate:
    """Stratified PPI++: each stratum's own estimate and λ, weighted by its share of the
    judged items. One stratum is plain `ppi_mean`."""
    total = sum(s.size for s in strata)
    if not strata or total == 0:
        raise ValueError("no stratum with judged items")
    weights = [s.size / total for s in strata]
    ests = [ppi_mean(s.y, s.yhat, s.yhat_unlabelled, confidence=confidence) for s in strata]
    value = math.fsum(w * e.estimate for w, e in zip(weights, ests, strict=True))
    se = math.sqrt(math.fsum(w * w * e.se ** 2 for w, e in zip(weights, ests, strict=True)))
    return StratifiedEstimate(estimate=value, se=se, weights=weights, strata=ests, confidence=confidence)


@dataclass(frozen=True)
class Difference:
    """candidate − base of two corrected estimates."""

    value: float
    se: float
    paired: bool
    labelled: int
    """Labelled units behind the smaller side (independent) or the pairs (paired)."""
    confidence: float = 0.95

    @property
    def interval(self) -> tuple[float, float]:
        return normal_interval(self.value, self.se, self.confidence)


def ppi_difference(base: PPIEstimate | StratifiedEstimate, cand: PPIEstimate | StratifiedEstimate) -> Difference:
    """Two runs, each with its own random labelled sample: the samples are independent, so
    the variances add."""
    return Difference(value=cand.estimate - base.estimate, se=math.sqrt(base.se ** 2 + cand.se ** 2),
                      paired=False, labelled=min(base.labelled, cand.labelled), confidence=base.confidence)


def ppi_paired_difference(
    y_base: Sequence[float], yhat_base: Sequence[float], y_cand: Sequence[float], yhat_cand: Sequence[float],
    yhat_u_base: Sequence[float], yhat_u_cand: Sequence[float], *, confidence: float = 0.95,
) -> Difference:
    """Two runs over the same items, one random sample of items labelled on both: PPI++ on
    the per-item differences (candidate − base), so what the two runs share cancels."""
    dy = [c - b for b, c in zip(y_base, y_cand, strict=True)]
    dh = [c - b for b, c in zip(yhat_base, yhat_cand, strict=True)]
    du = [c - b for b, c in zip(yhat_u_base, yhat_u_cand, strict=True)]
    est = ppi_mean(dy, dh, du, confidence=confidence)
    return Difference(value=est.estimate, se=est.se, paired=True, labelled=est.labelled, confidence=confidence)


def _stratum_var(n_k: int, rect_var: float, judge_var: float, size: int) -> float:
    unl = size - n_k
    return rect_var / n_k + (judge_var / unl if unl > 0 else 0.0)


def neyman_allocation(weights: Sequence[float], sds: Sequence[float], total: int) -> list[int]:
    """`total` labels split over strata in proportion to wₖ·σₖ (Neyman 1934), by largest
    remainder; σₖ is the spread of the judge–human difference in stratum k."""
    scores = [w * s for w, s in zip(weights, sds, strict=True)]
    mass = math.fsum(scores)
    if mass <= 0.0:
        scores, mass = list(weights), math.fsum(weights)
    raw = [total * s / mass for s in scores]
    out = [math.floor(r) for r in raw]
    for i in sorted(range(len(raw)), key=lambda i: (out[i] - raw[i], i))[: total - sum(out)]:
        out[i] += 1
    return out


@dataclass(frozen=True)
class LabelsNeeded:
    target_width: float
    current_width: float
    labels_needed: int | None
    """More labels (beyond those already used) that bring the interval to the target width;
    0 when it is already there; None when no number of labels can (`reason`)."""
    per_stratum: list[int]
    """How many of them to draw in each stratum (Neyman allocation)."""
    reason: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"target_width": self.target_width, "current_width": self.current_width,
                "labels_needed": self.labels_needed, "per_stratum": self.per_stratum, "reason": self.reason}


def labels_needed(est: StratifiedEstimate | PPIEstimate, target_width: float) -> LabelsNeeded:
    """How many more human labels, drawn at random within strata by Neyman allocation,
    shrink the interval to `target_width`, assuming the judge–human disagreement measured
    so far (each stratum's var(y − λŷ) and var(λŷ)) holds. Labelled items leave the
    unlabelled pool, so each stratum's judge term grows as its labels do. None (with the
    reason) when the whole interval has zero width: labels all one value measure no
    disagreement, so no count can be planned from them (a zero-width stratum beside others
    gets no more labels: the figure's notes flag it)."""
    strat = est if isinstance(est, StratifiedEstimate) else StratifiedEstimate(
        estimate=est.estimate, se=est.se, weights=[1.0], strata=[est], confidence=est.confidence)
    lo, hi = strat.interval
    current = hi - lo
    k = len(strat.strata)
    if all(s.se == 0.0 for s in strat.strata):  # labels all one value: no disagreement measured
        return LabelsNeeded(target_width, current, None, [0] * k,
                            reason="the labels (and their judge verdicts) are each one value, so the interval "
                                   "is zero-width: that measures no judge–human disagreement to plan from; "
                                   "label more at random first (export-requests --sample)")
    if current <= target_width:
        return LabelsNeeded(target_width, current, 0, [0] * k)
    half = target_width / (2 * z_for(strat.confidence))
    goal = half * half
    have = [s.labelled for s in strat.strata]
    sizes = [s.judged for s in strat.strata]
    sds = [math.sqrt(s.rectifier_var) for s in strat.strata]
    jv = [s.judge_var for s in strat.strata]

    def variance(alloc: Sequence[int]) -> float:
        return math.fsum(w * w * _stratum_var(a, rv * rv, j, m)
                         for w, a, rv, j, m in zip(strat.weights, alloc, sds, jv, sizes, strict=True))

    # each stratum keeps one result unlabelled: the estimator needs one (a stratum labelled
    # whole would make the corrected figure null)
    room = sum(sizes) - sum(have) - k
    for extra in range(1, room + 1):
        alloc = [max(h, a) for h, a in zip(have, neyman_allocation(strat.weights, sds, sum(have) + extra),
                                           strict=True)]
        alloc = [min(a, m - 1) for a, m in zip(alloc, sizes, strict=True)]
        if variance(alloc) <= goal:
            return LabelsNeeded(target_width, current, sum(alloc) - sum(have),
                                [a - h for a, h in zip(alloc, have, strict=True)])
    return LabelsNeeded(target_width, current, None, [0] * k,
                        reason="labelling every judged item (but one a stratum) does not reach the target width")
