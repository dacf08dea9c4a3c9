"""The cases × arms (or cases × attempts) grid of one suite, computed once for every surface
that draws it: the dashboard's `/api/runs/RUN/matrix` and the HTML report's arms matrix.

A row per case, a column per arm (`by="arm"`) or per attempt of one arm (`by="attempt"`,
with each case's flakiness class); each cell one result: status, score, tokens, latency
(a cached reply is marked, not timed) and the start of its output. Rows sort by how much
the columns disagree (`sort="disagreement"`) or by case. Pure: reads case rows as the
dashboard lists them (`evalh.ui.index.case_row`: `i`, `case_id`, `arm`, `attempt`, `status`,
`score`, `latency_ms`, tokens, `cost_usd`, `cached`) and each row's output text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PREVIEW = 240
"""Characters of an output a cell shows."""


def grid(rows: Sequence[dict[str, Any]], outputs: Sequence[str], by: str, sort: str, arm: str,
         arms: list[str], q: str = "") -> tuple[list[str], list[dict[str, Any]], dict[str, int]]:
    """(columns, rows, flakiness classes counted) of the grid of `rows` (case rows, each
    with its index `i` into `outputs`); `q` keeps the case ids holding it (lower case)."""
    from evalh.report.repeats import flakiness_of

    cases: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        if by == "attempt" and r["arm"] != arm:
            continue
        col = r["arm"] if by == "arm" else str(r["attempt"] or 0)
        cases.setdefault(r["case_id"], {}).setdefault(col, []).append(r)
    columns = arms if by == "arm" else sorted({c for g in cases.values() for c in g}, key=int)
    out = []
    for cid, cols in cases.items():
        if q and q not in cid.lower():
            continue
        cells: dict[str, Any] = {}
        for col in columns:
            rs = sorted(cols.get(col, []), key=lambda r: r["attempt"] or 0)
            if not rs:
                cells[col] = None
                continue
            r = rs[0]
            text = outputs[r["i"]] if r["i"] < len(outputs) else ""
            cells[col] = {"i": r["i"], "status": r["status"], "score": r["score"], "latency_ms": r["latency_ms"],
                          "tokens_in": r["tokens_in"], "tokens_out": r["tokens_out"], "cost_usd": r["cost_usd"],
                          "cached": bool(r.get("cached")),
                          "attempts": len(rs), "passes": sum(x["status"] == "passed" for x in rs),
                          "preview": text[:PREVIEW], "truncated": len(text) > PREVIEW}
        present = [c for c in cells.values() if c is not None]
        statuses = {c["status"] for c in present} | ({"(missing)"} if len(present) < len(columns) else set())
        scores = [c["score"] for c in present if c["score"] is not None]
        disagreement = len(statuses) - 1 + ((max(scores) - min(scores)) if len(scores) > 1 else 0.0)
        row: dict[str, Any] = {"case_id": cid, "disagreement": round(disagreement, 6), "cells": cells}
        if by == "attempt":
            row["flakiness"] = flakiness_of([c["status"] for c in present])
        out.append(row)
    if sort == "disagreement":
        out.sort(key=lambda r: -r["disagreement"])
    classes: dict[str, int] = {}
    for r in out:
        if "flakiness" in r:
            classes[r["flakiness"]] = classes.get(r["flakiness"], 0) + 1
    return columns, out, classes


def arms_matrices(run: Any, limit: int = 200) -> list[dict[str, Any]]:
    """Each suite of `run` (a `Run`) with several arms as its cases × arms grid, the cases
    where the arms disagree most first, at most `limit` rows: what the HTML report draws."""
    from evalh.report.textdiff import as_text

    out = []
    for name, suite in run.suites.items():
        rows = [{"i": i, "case_id": r.case_id, "arm": r.arm, "attempt": r.attempt, "status": r.status,
                 "score": r.score, "latency_ms": r.latency_ms, "cost_usd": r.cost_usd, "cached": r.cached,
                 "tokens_in": r.tokens_in, "tokens_out": r.tokens_out} for i, r in enumerate(suite.cases)]
        seen = list(dict.fromkeys(r["arm"] for r in rows))
        if len(seen) < 2:
            continue
        arms = [a for a in suite.arms if a in seen] + [a for a in seen if a not in suite.arms]
        columns, grid_rows, _ = grid(rows, [as_text(c.output) for c in suite.cases], "arm", "disagreement", "", arms)
        out.append({"run_id": run.run_id, "suite": name, "columns": columns, "baseline_arm": suite.baseline_arm,
                    "total": len(grid_rows), "rows": grid_rows[:limit]})
    return out
