"""Arm contrasts (`[[suites.S.contrasts]]`): a named `arm − against` difference, paired
over cases, with an interval and pass rules — the only claims a report makes about arms.

For each figure, every case's value in each arm is the mean over its attempts (results
without a value left out), and a case counts when both arms have one. The difference is the
mean of the per-case differences, with the interval of `evalh.core.stats.intervals.clustered_mean`:
with each case its own unit it is the paired t interval (mean ± t(n−1) · s/√n); cases of
one `cluster` group (the suite's `cluster`, default `metadata.group`) count as one unit
(cluster jackknife). Fewer than two units: no interval, and a rule on it is not met.

Figures: `tokens_out` (reported, else the derived estimate of `evalh.core.results.sizes` — the
record says how many were derived), `tokens_in`, `chars`, `words`, `mean_score` (the
result's score), `pass_rate` (1 passed, 0 failed), `cost_usd`, `latency_ms`,
`score:<scorer>` (one scorer's value) and `metric:<name>` (a suite metric of each arm: its
difference only — one value per arm has no paired interval).

A rule `figure OP number` holds, with `on = "interval"` (the default), when the whole
interval satisfies it (`tokens_out < 0`: the upper bound is below 0; `mean_score >= -0.02`:
the lower bound is at least −0.02); with `on = "estimate"`, when the difference does. The
contrast passes when every rule holds. A contrast with `gate = true` that does not pass
makes `evalh run` exit 1 (`contrast_reasons`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from evalh.core.results.sizes import tokens_of
from evalh.methodology_spec import parse_rule

if TYPE_CHECKING:
    from evalh.config import SuiteConfig
    from evalh.methodology_spec import ContrastConfig
    from evalh.models import CaseResult, Run

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _value(r: CaseResult, figure: str) -> tuple[float | None, bool]:
    """(value, derived?) of one result for a figure."""
    if r.status in ("errored", "skipped"):
        return None, False
    m = r.measured or {}
    if figure == "tokens_out":
        v, derived = tokens_of(r.measured, r.tokens_out)
        return (float(v) if v is not None else None), derived
    if figure in ("chars", "words"):
        x = m.get(figure)
        return (float(x) if isinstance(x, int | float) else None), False
    if figure == "mean_score":
        return (r.score if r.status in ("passed", "failed") else None), False
    if figure == "pass_rate":
        return {"passed": 1.0, "failed": 0.0}.get(r.status), False
    if figure.startswith("score:"):
        s = next((s for s in r.scores if s.scorer == figure[6:]), None)
        return (s.value if s is not None and s.error is None else None), False
    x = getattr(r, figure, None)
    if figure == "cost_usd" and r.cached:
        return None, False
    return (float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None), False


def paired(results: Sequence[CaseResult], arm: str, against: str, figure: str,
           cluster: str | None, confidence: float) -> dict[str, Any]:
    """The paired difference `arm − against` of one figure over cases, with its interval."""
    from evalh.core.stats.intervals import clustered_mean

    per: dict[tuple[str, str], list[float]] = {}
    meta: dict[str, dict[str, Any]] = {}
    derived = 0
    for r in results:
        if r.arm not in (arm, against):
            continue
        v, d = _value(r, figure)
        if v is None:
            continue
        derived += d
        per.setdefault((r.case_id, r.arm), []).append(v)
        meta[r.case_id] = r.metadata
    cases = sorted({c for c, a in per if a == arm} & {c for c, a in per if a == against})
    a_means = [sum(per[(c, arm)]) / len(per[(c, arm)]) for c in cases]
    b_means = [sum(per[(c, against)]) / len(per[(c, against)]) for c in cases]
    diffs = [x - y for x, y in zip(a_means, b_means, strict=True)]
    clusters = None
    if cluster and cluster != "case":
        clusters = [str(meta[c].get(cluster)) if meta[c].get(cluster) is not None else f"\x00{c}" for c in cases]
        if len(set(clusters)) == len(clusters):
            clusters = None  # every case its own unit: the paired t interval
    est = clustered_mean(diffs, clusters) if diffs else None
    low = high = None
    if est is not None:
        low, high = est.interval(confidence)
    out: dict[str, Any] = {
        "figure": figure, "cases": len(cases),
        "arm_mean": sum(a_means) / len(a_means) if a_means else None,
        "against_mean": sum(b_means) / len(b_means) if b_means else None,
        "difference": sum(diffs) / len(diffs) if diffs else None,
        "low": low, "high": high, "confidence": confidence,
        "se": est.se if est is not None else None, "df": est.df if est is not None else None,
        "units": est.clusters if est is not None else len(cases),
        "method": ("paired t over cases" if clusters is None else f"cluster jackknife over {cluster}")
                  if est is not None else "no interval: fewer than two units",
        "per_case": [{"case_id": c, "arm": x, "against": y, "difference": x - y}
                     for c, x, y in zip(cases, a_means, b_means, strict=True)],
    }
    if figure == "tokens_out" and derived:
        out["derived"] = derived
        out["note"] = f"{derived} token counts derived (chars/4): the provider reported none"
    return out


def _metric_difference(metrics: Sequence[dict[str, Any]], name: str, arm: str, against: str) -> dict[str, Any]:
    def val(a: str) -> float | None:
        f = next((m for m in metrics if m.get("name") == name and m.get("arm") == a), None)
        v = f.get("value") if f else None
        return float(v) if isinstance(v, int | float) else None

    x, y = val(arm), val(against)
    return {"figure": f"metric:{name}", "arm_mean": x, "against_mean": y,
            "difference": x - y if x is not None and y is not None else None, "low": None, "high": None,
            "method": "difference of the suite metric (one value per arm: no paired interval)"}


def _rule(c: ContrastConfig, text: str, figures: dict[str, dict[str, Any]]) -> dict[str, Any]:
    rule = parse_rule(text)
    f = figures[rule.figure]
    holds = _OPS[rule.op]
    if c.on == "estimate" or f.get("low") is None and f["figure"].startswith("metric:"):
        d = f.get("difference")
        if d is None:
            return {"rule": text, "passed": False, "why": "no difference: the arms share no case with a value"}
        ok = holds(d, rule.value)
        return {"rule": text, "passed": ok, "why": f"difference {d:.6g} {'meets' if ok else 'misses'} {rule.op} {rule.value:g}"}
    low, high = f.get("low"), f.get("high")
    if low is None or high is None:
        return {"rule": text, "passed": False, "why": f"not assessed: {f.get('method')}"}
    bound = high if rule.op in ("<", "<=") else low
    side = "upper" if rule.op in ("<", "<=") else "lower"
    ok = holds(bound, rule.value)
    return {"rule": text, "passed": ok,
            "why": f"{side} bound {bound:.6g} of the {c.confidence:.0%} interval {'meets' if ok else 'misses'} "
                   f"{rule.op} {rule.value:g}"}


def compute_contrasts(suite: SuiteConfig, results: Sequence[CaseResult],
                      metrics: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    out = []
    for c in suite.contrasts:
        figures: dict[str, dict[str, Any]] = {}
        for fig in c.figures:
            if fig.startswith("metric:"):
                figures[fig] = _metric_difference(metrics, fig[7:], c.arm, c.against)
            else:
                figures[fig] = paired(results, c.arm, c.against, fig, suite.cluster, c.confidence)
        rules = [_rule(c, r, figures) for r in c.rules]
        out.append({
            "name": c.display_name, "arm": c.arm, "against": c.against, "claim": True, "gate": c.gate,
            "on": c.on, "confidence": c.confidence, "figures": list(figures.values()), "rules": rules,
            "passed": all(r["passed"] for r in rules) if rules else None,
        })
    return out


def suite_claims(suite: SuiteConfig | None, results: Sequence[CaseResult], root: Any = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(metrics, contrasts) of a suite's results: what the runner stores in the suite (none
    for a suite planned without its config)."""
    if suite is None or not suite.metrics and not suite.contrasts:
        return [], []
    from evalh.core.analysis.suite_metrics import compute_metrics

    metrics = compute_metrics(suite, results, root)
    return metrics, compute_contrasts(suite, results, metrics)


def contrast_reasons(run: Run) -> list[str]:
    """One line per gating contrast whose rules do not all hold (`evalh run` exits 1)."""
    out = []
    for name, s in run.suites.items():
        for c in s.contrasts:
            if c.get("gate") and c.get("passed") is False:
                failed = [r for r in c.get("rules", []) if not r.get("passed")]
                out.append(f"suite {name}: contrast {c.get('name')} fails: "
                           + "; ".join(f"{r['rule']} ({r['why']})" for r in failed))
    return out
