"""The raw-runs table: every result of an arm (a run of a case) with each scorer's value,
each judge criterion's value, the presented order of shuffled fields and the measured
sizes — characters and words measured, tokens reported or derived (chars/4, marked `~`) —
followed by the arithmetic of each case's mean and sample variance, so every aggregate can
be re-verified by hand from the table above it."""

from __future__ import annotations

from typing import Any

from evalh.core.results.sizes import tokens_of
from evalh.core.stats.intervals import mean, sample_variance
from evalh.models import CaseResult
from evalh.report.models import RawRunRow, RawRuns


def _criteria(details: dict[str, Any]) -> dict[str, float]:
    """Criterion → value, averaged over a panel's judges."""
    sums: dict[str, list[float]] = {}
    for vote in details.get("judges") or []:
        for item in (vote.get("criteria") or []) if isinstance(vote, dict) else []:
            v = item.get("value") if isinstance(item, dict) else None
            if isinstance(v, int | float) and not isinstance(v, bool):
                sums.setdefault(str(item.get("name")), []).append(float(v))
    return {k: sum(v) / len(v) for k, v in sums.items()}


def _g(v: float) -> str:
    return f"{v:.4g}"


def raw_run_row(r: CaseResult) -> RawRunRow:
    """One result's row of the table."""
    values: dict[str, float | None] = {"score": r.score}
    for s in r.scores:
        if s.value is not None or s.error is None and not s.abstained:
            values[s.scorer] = s.value if s.error is None else None
        for name, v in _criteria(s.details).items():
            values[f"{s.scorer}.{name}"] = v
    m = r.measured or {}
    tokens, derived = tokens_of(r.measured, r.tokens_out)
    order = "; ".join(f"{f.removeprefix('input.')}: {','.join(map(str, o))}" for f, o in (r.shuffle or {}).items()) or None
    return RawRunRow(case_id=r.case_id, attempt=r.attempt, status=r.status, order=order, values=values,
                     chars=m.get("chars"), words=m.get("words"), tokens=tokens, tokens_derived=derived)


def raw_runs(rows: list[RawRunRow]) -> RawRuns:
    """The table of these rows (one per result, `raw_run_row`), ordered by case and attempt."""
    rows = sorted(rows, key=lambda row: (row.case_id, row.attempt))
    columns: list[str] = ["score"]
    for row in rows:
        for k in row.values:
            if k not in columns:
                columns.append(k)
    arithmetic = []
    cases = list(dict.fromkeys(row.case_id for row in rows))
    mine_of: dict[str, list[RawRunRow]] = {}
    for row in rows:
        if row.status in ("passed", "failed"):
            mine_of.setdefault(row.case_id, []).append(row)
    for cid in cases:
        mine = mine_of.get(cid, [])
        for col in columns:
            xs = [x for row in mine if (x := row.values.get(col)) is not None]
            if len(xs) < 2:
                continue
            mu, var = mean(xs), sample_variance(xs)
            assert mu is not None and var is not None
            arithmetic.append(f"{cid} {col}: mean = ({' + '.join(map(_g, xs))}) / {len(xs)} = {_g(mu)}; "
                              f"variance (n − 1) = {_g(var)}")
    return RawRuns(columns=columns, rows=rows, arithmetic=arithmetic)
