"""The family of a comparison's gating rows: one family-wise level over every suite (weighted
Holm, conditionalized across suites), the rounds' confidence sequence under
`--until-decided`, and what each row can detect and would need (`detectable_change`,
`cases_needed`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from evalh.core.compare.metrics import Evidence, decide, join_notes
from evalh.core.compare.models import ComparePolicy, MetricRow
from evalh.core.stats import intervals as stats
from evalh.core.stats import paired as stats_paired
from evalh.core.stats.sequential import look_multipliers, sequential_verdict


def apply_family(
    rows: Sequence[MetricRow], policy: ComparePolicy, weights: Sequence[float] | None = None,
    select: float | None = None,
) -> float:
    """Hold every gating row with an interval to one family-wise level (weighted Holm,
    Holm 1979; equal weights without `weights`, which is aligned with `rows`;
    conditionalized on p ≤ `select` when given, `stats.weighted_holm`).

    A row whose interval lies beyond its allowance is `regressed` only if its adjusted
    p-value is at most ``alpha = (1 − confidence)/2``; otherwise it becomes `inconclusive`
    with a note. Returns that alpha. Non-gating rows are left as they are."""
    alpha = (1.0 - policy.confidence) / 2.0
    ws = list(weights) if weights is not None else [1.0] * len(rows)
    tested = [(r, w) for r, w in zip(rows, ws, strict=True) if r.p_worse is not None]
    m = len(tested)
    ps: list[float] = [r.p_worse for r, _ in tested]  # type: ignore[misc]
    adjusted, shares = stats.weighted_holm(ps, [w for _, w in tested], select)
    first = first_shares(ps, [w for _, w in tested], select)
    for i, (row, _) in enumerate(tested):
        row.p_adjusted = adjusted[i]
        row.alpha_adjusted = alpha * shares[i]
        row.weight = first[i]
        if row.verdict == "regressed" and adjusted[i] > alpha:
            row.verdict = "inconclusive"
            row.note = join_notes(
                row.note,
                f"beyond the allowance at {policy.confidence:.0%}, but not at the level held "
                f"for {m} tests (Holm-adjusted p {adjusted[i]:.3g} > {alpha:g})",
            )
    return alpha


def apply_rounds(rows_by_suite: dict[str, list[MetricRow]], policy: ComparePolicy,
                 family_size: int) -> None:
    """Decide the fixed-suite gating rows of the suites run in rounds (`policy.rounds`) by
    the round's confidence sequence: the interval is estimate − c_flat·se to estimate +
    c_regressed·se, where c_flat spends the one-sided α = (1 − confidence)/2 and
    c_regressed spends the row's share of α over the planned rounds (its weight in the
    family: α/m over m equal rows, Bonferroni; conditionalized, τ·w over the weights
    taking part), each a Lan–DeMets error-spending boundary at the rounds' information fractions
    (`stats.sequential.spending_boundaries`), widened to Student's t at the row's degrees
    of freedom. Every round's interval holds at once, so looking after each round and
    stopping at the first decision keeps both error rates."""
    if not policy.rounds:
        return
    alpha = (1.0 - policy.confidence) / 2.0
    for suite, look in policy.rounds.items():
        for row in rows_by_suite.get(suite, []):
            ev: Evidence | None = row._evidence
            fractions = look.fractions.get(row.arm)
            # the row's share of the family's level (weighted Holm's first step; α/m unweighted)
            family = 1.0 / row.weight if row.weight else float(family_size)
            if (not row.gating or row.estimand != "fixed-suite" or ev is None
                    or ev.estimate is None or not fractions or row.better != "higher"):
                if row.gating and ev is not None:
                    looks = max((len(f) for f in look.fractions.values()), default=1)
                    _bonferroni_over_looks(row, ev, alpha, family, looks)
                continue
            est = ev.estimate
            c_flat, c_reg = look_multipliers(fractions, look.round, alpha, family, est.df, look.rho,
                                             look.rho_flat)
            lo = est.value - c_flat * est.se if math.isfinite(c_flat) else -math.inf
            hi = est.value + c_reg * est.se if math.isfinite(c_reg) else math.inf
            row.interval = (max(lo, -1.0), min(hi, 1.0)) if row.name == "pass_rate" else (lo, hi)
            row.verdict = sequential_verdict(est.value, est.se, row.allowance, c_flat, c_reg)  # type: ignore[assignment]
            row.rounds = look.round
            row.method += f"; confidence sequence over rounds (error spending), round {look.round}"


def _bonferroni_over_looks(row: MetricRow, ev: Evidence, alpha: float, family: float,
                           looks: int) -> None:
    """A gating row of a suite in rounds that the confidence sequence does not decide (the
    population estimand, clustered cases, too few varying cases, a lower-is-better row):
    its fixed-n interval is looked at after every round, so each side is held to its level
    over the planned `looks` (Bonferroni: α/K at each look, valid whatever the looks'
    correlation). Only ever turns a decided verdict `inconclusive`; one look is fixed-n."""
    if looks <= 1 or row.verdict not in ("flat", "improved", "regressed"):
        return
    flat = ev.interval(1.0 - 2.0 * alpha / looks)
    reg = ev.interval(1.0 - 2.0 * alpha / (family * looks))
    if flat is None or reg is None:
        return
    iv = (flat[0], reg[1]) if row.better == "higher" else (reg[0], flat[1])
    row.interval = iv
    row.method += f"; Bonferroni over {looks} looks (rounds)"
    if decide(row.change, iv, row.allowance, row.better) == "inconclusive":
        row.note = join_notes(row.note, f"{row.verdict} by its fixed-n interval, not at α/{looks} "
                                        "a side at each look (looked at after every round, "
                                        "outside the rounds' confidence sequence)")
        row.verdict = "inconclusive"


def first_shares(p: Sequence[float], w: Sequence[float], select: float | None) -> list[float]:
    """Each test's share of α at the first step: wᵢ/Σw; conditionalized, τ·wᵢ over the
    weights of the selected tests (and its own)."""
    if select is None:
        total = math.fsum(w)
        return [x / total for x in w]
    chosen = math.fsum(x for q, x in zip(p, w, strict=True) if q <= select)
    return [select * x / (chosen + (x if q > select else 0.0)) for q, x in zip(p, w, strict=True)]


def _row_alpha(row: MetricRow, policy: ComparePolicy, family_size: int) -> float:
    """The one-sided level a row is first tested at: the family alpha times its weight
    (Bonferroni's α/m with equal weights, never easier than the step-down)."""
    share = row.weight if row.weight is not None else 1.0 / max(family_size, 1)
    return (1.0 - policy.confidence) / 2.0 * share


def detect_row(row: MetricRow, policy: ComparePolicy, family_size: int) -> None:
    """The minimum detectable change of a gating row (`detectable_change`): the change on
    the worse side that its current cases, attempts and noise call `regressed` with the
    policy's power at the row's family level: the allowance plus (t₁₋α + t_power) standard
    errors, on the row's test scale (Cohen 1988, ch. 2; Student quantiles at its degrees of
    freedom). None without an interval, or when no change within the scale is caught."""
    ev: Evidence | None = row._evidence
    if not row.gating or ev is None or row.interval is None:
        return
    se = ev.se(policy.confidence)
    if se is None or se <= 0:
        return
    sign = -1.0 if row.better == "higher" else 1.0
    df = ev.estimate.df if ev.estimate is not None else float(max(row.n - 1, 1))
    alpha = _row_alpha(row, policy, family_size)
    if ev.counts is not None:  # the score test's own power, its noise growing with the drop
        row.detectable_change = stats_paired.tango_detectable(
            *ev.counts, sign * row.allowance, sign, alpha, policy.power)
        return
    if row.name in ("pass_rate", "error_rate") and row.change is not None:
        # a rate's noise grows with the change (flips): `stats.power.detectable_rate`
        from evalh.core.stats.power import detectable_rate

        size = detectable_rate(se, row.n, ev.cand_repeats, row.allowance, alpha, policy.power,
                               df=df, already=max(0.0, sign * row.change))
        row.detectable_change = sign * size if size is not None else None
        return
    k = stats.t_quantile(1 - alpha, df) + stats.t_quantile(policy.power, df)
    target = ev.to_test(sign * row.allowance) + sign * k * se
    change = ev.estimate.to_change(target) if ev.estimate is not None else target
    if row.unit == "abs" and abs(change) > 1.0:
        return
    row.detectable_change = change


COST_PLAN_CONFIDENCE = 0.8
"""The cost row plans with this upper confidence limit of its variance: skewed costs give
a pilot standard error that is too small more often than not (the cases holding much of
the spend are often not yet seen), and planning with it delivered 64-73 % power where 80
was promised. Browne (1995); Kieser & Wassmer (1996)."""


def _variance_upper(df: float, confidence: float) -> float:
    """df/χ²₁₋γ(df): the factor from an estimated variance to its one-sided upper γ
    confidence limit, for a variance estimate with `df` degrees of freedom."""
    from scipy.special import chdtri  # the inverse survival function of χ²

    return df / float(chdtri(df, confidence))


def plan_row(row: MetricRow, policy: ComparePolicy, family_size: int) -> None:
    """For an inconclusive row: the paired cases (and, where repeats can do it, the repeats)
    at which a change twice the allowance on the worse side would be `regressed` with the
    policy's power at the family's Bonferroni level, which also gives an unchanged product
    `flat` with at least that power. Nothing is planned with a zero allowance (no change is
    acceptable, so an unchanged product is never shown `flat`).

    The standard error is scaled as 1/√n from the current one, with Student quantiles at
    the current degrees of freedom (the standard error is an estimate)."""
    ev: Evidence | None = row._evidence
    if row.verdict != "inconclusive" or ev is None or row.change is None or row.n < 2:
        return
    if row.name == "corrected_pass_rate":  # more labels, not more cases: `label report --target-width`
        row.note = join_notes(row.note, "more human labels would settle it: see `evalh label report --target-width`")
        return
    se0 = ev.se(policy.confidence)
    if not se0 or se0 <= 0:
        return
    if row.name == "cost_usd" and ev.estimate is not None:
        se0 *= math.sqrt(_variance_upper(ev.estimate.df, COST_PLAN_CONFIDENCE))
    sign = -1.0 if row.better == "higher" else 1.0  # the worse direction, in change units
    a = row.allowance
    if a <= 0:  # no change size is acceptable, so none to plan for; and nothing is ever flat
        row.note = join_notes(row.note, "a zero allowance: no number of cases settles it as flat")
        return
    target = sign * 2 * a
    distance = abs(ev.to_test(target) - ev.to_test(sign * a))
    if distance <= 0:
        return
    alpha = _row_alpha(row, policy, family_size)
    # Student quantiles with the current units' degrees of freedom: the standard error is
    # itself estimated, and planning with z as if it were known falls short of the power.
    df = ev.estimate.df if ev.estimate is not None else float(max(row.n - 1, 1))
    z = stats.t_quantile(1 - alpha, df) + stats.t_quantile(policy.power, df)
    se_target = distance / z
    needed = math.ceil(row.n * (se0 / se_target) ** 2)
    row.cases_needed = max(needed, row.n + 1)
    row.cases_needed_for = target
    if row.cluster_by is not None:
        row.note = join_notes(row.note, f"counted in new {row.cluster_by} clusters of the current "
                                   "size: more cases in the same clusters do not help")
    if needed <= row.n:
        row.note = join_notes(
            row.note,
            "these cases already have that power against a change of twice the allowance: "
            "the estimate sits near the boundary",
        )
    if ev.within is not None and ev.within > 0:
        total = row.n * se0 * se0  # variance of one case's difference
        between = max(0.0, total - ev.within)
        room = row.n * se_target * se_target - between
        if room > 0:
            r_new = math.ceil(ev.within * ev.repeats / room)
            if ev.repeats < r_new <= 100:
                row.repeats_needed = r_new
