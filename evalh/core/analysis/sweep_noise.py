"""Is a sweep's win beyond noise? The top candidate against another, paired over the results.

Every candidate of a sweep is scored on the same results, so two candidates are compared
by the results they decide *differently*, never by the overlap of two separate intervals.
The difference of their objectives gets the interval `evalh compare` uses for a paired
difference (`evalh.core.stats.intervals`, sources in docs/methodology.md):

- `accuracy` with one result per case: Newcombe's paired score interval (method 10) of
  the difference of the two shares right, with McNemar's mid-p on the results only one of
  the two decides right;
- otherwise (repeats of a case, or `balanced_accuracy`): the delete-one-case jackknife of
  the difference (for accuracy it is `clustered_mean` of the per-result differences: a
  case's attempts are one unit, never independent trials) with Student's t.

The win is *within noise* when the interval reaches 0. The top was chosen on these same
results, so a win beyond noise here is still optimistic (the best of many candidates);
a win within noise says the data cannot tell the two apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from evalh.core.analysis.sweep_models import Margin, PolicyParams

CONFIDENCE = 0.95


def _objective(objective: str, totals: dict[str, list[int]]) -> float:
    """`accuracy` or `balanced_accuracy` from label → [right, results]."""
    cells = [c for c in totals.values() if c[1]]
    if not cells:
        return 0.0
    if objective == "accuracy":
        return sum(c[0] for c in cells) / sum(c[1] for c in cells)
    return sum(c[0] / c[1] for c in cells) / len(cells)


def _totals(labels: Sequence[str], right: Sequence[bool], members: Sequence[int] | None = None) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i in range(len(labels)) if members is None else members:
        cell = out.setdefault(labels[i], [0, 0])
        cell[0] += int(right[i])
        cell[1] += 1
    return out


def _difference(objective: str, labels: Sequence[str], a: Sequence[bool], b: Sequence[bool]) -> float:
    return _objective(objective, _totals(labels, a)) - _objective(objective, _totals(labels, b))


def _effective_df(sizes: Sequence[int]) -> float:
    """As `evalh.core.stats.intervals.clustered_mean`: G − 1, fewer for unequal clusters."""
    n = sum(sizes)
    g_star = n * n / sum(m * m for m in sizes)
    return max(1.0, min(len(sizes) - 1.0, g_star - 1.0))


def _jackknife(objective: str, labels: Sequence[str], case_ids: Sequence[str], a: Sequence[bool],
               b: Sequence[bool]) -> tuple[float, float, float, int] | None:
    """(difference, se, df, cases) of `objective(a) − objective(b)`, leaving one case out at a
    time (from per-label totals: one pass, not one per case)."""
    cases: dict[str, list[int]] = {}
    for i, c in enumerate(case_ids):
        cases.setdefault(c, []).append(i)
    g = len(cases)
    if g < 2:
        return None
    ta, tb = _totals(labels, a), _totals(labels, b)
    est = _objective(objective, ta) - _objective(objective, tb)

    def without(total: dict[str, list[int]], part: dict[str, list[int]]) -> dict[str, list[int]]:
        return {lab: [c[0] - part.get(lab, [0, 0])[0], c[1] - part.get(lab, [0, 0])[1]] for lab, c in total.items()}

    loo = [_objective(objective, without(ta, _totals(labels, a, m))) - _objective(objective, without(tb, _totals(labels, b, m)))
           for m in cases.values()]
    mean_loo = math.fsum(loo) / g
    se = math.sqrt((g - 1) / g * math.fsum((x - mean_loo) ** 2 for x in loo))
    return est, se, _effective_df([len(m) for m in cases.values()]), g


def margin(
    objective: str, labels: Sequence[str], case_ids: Sequence[str], a: Sequence[bool], b: Sequence[bool],
    *, top: PolicyParams, other: PolicyParams, against: str, other_current: bool = False,
) -> Margin:
    """The top candidate against `other` over the results both are scored on: `labels` and
    `case_ids` of each result, `a` and `b` whether the top and the other decide it right
    (an errored result is right for neither)."""
    from evalh.core.stats import intervals as stats

    n = len(labels)
    both = sum(x and y for x, y in zip(a, b, strict=True))
    top_only = sum(x and not y for x, y in zip(a, b, strict=True))
    other_only = sum(y and not x for x, y in zip(a, b, strict=True))
    neither = n - both - top_only - other_only
    cases = len(set(case_ids))
    diff = _difference(objective, labels, a, b) if n else 0.0
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    note = None
    if objective == "accuracy" and cases == n:
        iv = stats.newcombe_paired_interval(both, other_only, top_only, neither, CONFIDENCE)
        if iv is not None:
            low, high = iv
        p_value = stats.mcnemar(other_only, top_only).p_mid
        method = "Newcombe paired score interval; McNemar mid-p"
    else:
        what = "the per-result differences" if objective == "accuracy" else "the balanced-accuracy difference"
        method = f"delete-one-case jackknife of {what}, Student's t (a case's attempts are one unit)"
        jk = _jackknife(objective, labels, case_ids, a, b)
        if jk is None:
            note = "fewer than two cases: no interval"
        else:
            diff, se, df, _ = jk
            if se > 0:
                half = stats.t_quantile(0.5 + CONFIDENCE / 2, df) * se
                low, high = max(-1.0, diff - half), min(1.0, diff + half)
            elif diff != 0:
                note = "every case differs by the same amount: no interval"
    within: bool | None
    if diff == 0:
        within = True
        note = note or f"equal on {objective.replace('_', ' ')}"
    else:
        within = None if low is None or high is None else low <= 0.0 <= high
    return Margin(
        against=against, other_current=other_current,
        top=dict(top), other=dict(other),
        difference=diff, low=low, high=high, confidence=CONFIDENCE, method=method, cases=cases,
        results=n, top_only=top_only, other_only=other_only, p_value=p_value,
        within_noise=within, note=note,
    )


def _p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def margin_text(m: Margin, objective: str, *, tied: bool = False) -> str:
    """One line: whom the top is compared with, the difference and whether it is beyond
    noise, then its interval and the results behind it. `tied`: the top is the first of a
    tie (then named, since no winner is)."""
    def policy(p: PolicyParams) -> str:
        return ", ".join(f"{k}={v}" for k, v in p.items())

    who = "the current policy" if m.against == "current" or m.other_current else "the runner-up"
    role = "the runner-up, the current policy" if m.against == "runner-up" and m.other_current else who
    lead = f"{policy(m.top)} (first of the tied top) " if tied else ""
    if m.within_noise is None:
        say = "not to be told from noise"
    elif m.within_noise:
        say = "within noise"
    else:
        say = "beyond noise (optimistic: the top was picked on these same results)"
    if m.low is not None and m.high is not None:
        how = m.method.replace("; McNemar mid-p", f", McNemar mid-p {_p(m.p_value)}") if m.p_value is not None else m.method
        iv = f"{m.confidence:.0%} CI {m.low:+.3f} to {m.high:+.3f} ({how})"
    else:
        iv = m.note or "no interval"
    units = f" in {m.cases} cases" if m.cases != m.results else ""
    return (f"{lead}vs {role} ({policy(m.other)}): {objective.replace('_', ' ')} {m.difference:+.3f}, {say}; {iv}; "
            f"of {m.results} results{units}, {m.top_only} right only with the top, {m.other_only} only with {who}")


def noise_phrase(m: Margin) -> str:
    """`within noise (95% CI −0.12 to +0.26)` and the like, for the verdict."""
    iv = (f" ({m.confidence:.0%} CI {m.low:+.3f} to {m.high:+.3f})"
          if m.low is not None and m.high is not None else f" ({m.note})" if m.note else "")
    if m.within_noise is None:
        return f"not to be told from noise{iv}"
    if m.within_noise:
        return f"within noise{iv}"
    return f"beyond noise{iv}, though picked on these same results"
