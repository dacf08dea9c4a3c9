"""The cells of a comparison's metric row, as text: value, change, allowance, interval,
label and detail — one wording for every renderer of a `Comparison` (terminal, markdown,
JUnit)."""

from __future__ import annotations

from evalh.core.compare.models import MetricRow

_RATES = ("pass_rate", "error_rate", "corrected_pass_rate")


def value(row: MetricRow, v: float | None) -> str:
    if v is None:
        return "—"
    if row.name in _RATES:
        return f"{v * 100:.1f} %"
    if row.name == "cost_usd":
        return f"${v:.4g}"
    if row.name in ("latency_ms", "latency_ms_p50"):
        return f"{v:.0f} ms"
    return f"{v:.3f}"


def _unit(row: MetricRow) -> str:
    """Relative changes are in percent; rates move in percentage points (pp)."""
    return " %" if row.unit == "pct" else (" pp" if row.name in _RATES else "")


def _signed(row: MetricRow, x: float) -> str:
    if row.unit == "pct":
        return f"{x:+.1f}"
    if row.name in _RATES:
        return f"{x * 100:+.1f}"
    return f"{x:+.3f}"


def delta(row: MetricRow) -> str:
    return "—" if row.change is None else _signed(row, row.change) + _unit(row)


def allowance(row: MetricRow) -> str:
    """How far the change may go the wrong way and stay flat (signed that way)."""
    if row.interval is None and row.method.startswith("by case"):
        return "by case"
    a = row.allowance if row.better == "lower" else -row.allowance
    return f"{_signed(row, a)}{_unit(row)}"


def interval(row: MetricRow) -> str:
    if row.interval is None:
        return "—"
    return f"[{_signed(row, row.interval[0])}, {_signed(row, row.interval[1])}]{_unit(row)}"


_LABELS = {"pass_rate": "pass rate", "mean_score": "mean score", "error_rate": "error rate",
           "corrected_pass_rate": "corrected pass rate (PPI++)",
           "cost_usd": "cost", "latency_ms": "latency", "latency_ms_p50": "latency p50"}


def metric_label(row: MetricRow) -> str:
    name = f"score {row.scorer}" if row.name == "score" else _LABELS.get(row.name, row.name)
    if row.name == "mean_score" and not row.gating:
        name = "mean score (blended)"
    return name if row.arm == "default" else f"{name} [{row.arm}]"


def detectable_text(row: MetricRow, power: float = 0.8) -> str | None:
    """"with 100 cases and this noise, drops ≥ 7.0 pp are caught 80 % of the time", from the
    row's `detectable_change`; None without one."""
    d = row.detectable_change
    if d is None:
        return None
    worse = "drops" if row.better == "higher" else "rises"
    size = f"{abs(d) * 100:.1f} pp" if row.name in _RATES else (
        f"{abs(d):.1f} %" if row.unit == "pct" else f"{abs(d):.3f}")
    return (f"with {row.n} cases and this noise, {worse} ≥ {size} are caught "
            f"{power * 100:g} % of the time")


def detail(row: MetricRow, power: float = 0.8) -> str:
    """Method, p-values, cases needed, what the row can detect and note, in one line."""
    parts = [f"n = {row.n}", row.method]
    if row.estimand is not None:  # what the interval is of: these cases, or a population
        parts.insert(1, f"estimand: {row.estimand}")
    if row.p_value is not None:
        parts.append(f"McNemar mid-p = {row.p_value:.3g}")
    if row.p_adjusted is not None:
        parts.append(f"p(worse than allowed) = {row.p_worse:.2g}, adjusted {row.p_adjusted:.2g}")
    if row.verdict == "inconclusive" and row.direction in ("worse", "better"):
        parts.append(f"estimate on the {row.direction} side")
    if row.cases_needed is not None and row.cases_needed_for is not None:
        change = _signed(row, row.cases_needed_for) + _unit(row)
        text = f"~{row.cases_needed} cases would settle a change of {change}"
        if row.repeats_needed:
            text += f" (or {row.repeats_needed} repeats a case)"
        parts.append(text)
    detectable = detectable_text(row, power)
    if detectable:
        parts.append(detectable)
    if not row.gating:
        parts.append("not gating")
    if row.note:
        parts.append(row.note)
    return "; ".join(parts)
