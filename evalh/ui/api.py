"""The dashboard's JSON endpoints, as plain functions of a `RunIndex` (no HTTP here).

Each returns a JSON-ready dict or raises an `EvalhError` (InvalidRunId → 400, RunNotFound
→ 404, other bad input → 400). Verdicts come from `compare_runs` and nothing else, so the
dashboard shows exactly what `evalh compare` decides.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalh.errors import EvalhError, RunNotFound
from evalh.ui.index import RunIndex

MAX_PAGE = 500
STATUSES = ("passed", "failed", "errored", "judge_error", "skipped")


class BadRequest(EvalhError):
    """A query parameter the dashboard cannot use."""


def _int(params: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name}: expected an integer") from None
    if not lo <= value <= hi:
        raise BadRequest(f"{name}: must be between {lo} and {hi}")
    return value


def trends(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Series of the headline numbers across runs, oldest first, one slot per run (null
    where a run has no value). Pass rate, mean score and latency are per suite (and per
    arm when a suite has several): never blended across suites."""
    ids = [s["run_id"] for s in summaries]
    metrics = ("pass_rate", "mean_score", "latency_ms_p50", "latency_ms_p95")
    series: dict[str, dict[str, list[Any]]] = {m: {} for m in metrics}
    for j, s in enumerate(summaries):
        for suite, info in s["suites"].items():
            parts = {suite: info["aggregate"]} if not info["arms"] else {
                f"{suite} · {arm}": agg for arm, agg in info["arms"].items()}
            for name, agg in parts.items():
                for m in metrics:
                    series[m].setdefault(name, [None] * len(ids))[j] = agg.get(m)
    out = {m: [{"name": n, "values": v} for n, v in series[m].items()] for m in metrics}
    out["cost_usd"] = [{"name": "cost per run", "values": [s["cost_usd"] for s in summaries]}]
    return {"runs": [{"run_id": s["run_id"], "label": s["label"], "started_at": s["started_at"]}
                     for s in summaries], "series": out}


class DashboardApi:
    """The endpoints over one runs directory. `root` is the project root (for BASELINE)."""

    def __init__(self, index: RunIndex, root: Path) -> None:
        self.index = index
        self.root = root
        self._compares: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def baseline(self) -> str | None:
        from evalh.baseline import read_baseline

        try:
            return read_baseline(self.root)
        except EvalhError:
            return None

    def runs(self) -> dict[str, Any]:
        """The history: every run's summary, oldest first, the BASELINE run id, and the
        trends of the headline numbers (the same as `/api/trends`, in one request)."""
        summaries = self.index.summaries()
        return {"runs_dir": str(self.index.runs_dir), "baseline": self.baseline(),
                "runs": summaries, "trends": trends(summaries)}

    def trends(self) -> dict[str, Any]:
        return trends(self.index.summaries())

    def run(self, run_id: str) -> dict[str, Any]:
        """One run's header: its summary and its suites with their result counts. Cheap:
        the case rows are listed, not validated (see `report`)."""
        from evalh.ui.index import history_row

        loaded = self.index.load(run_id)
        if "summary" not in loaded.extra:
            loaded.extra["summary"] = history_row(loaded.header)
        return {"summary": loaded.extra["summary"],
                "suites": {n: len(rows) for n, rows in loaded.rows.items()},
                "baseline": self.baseline() == run_id}

    def report(self, run_id: str) -> dict[str, Any]:
        """The run's report (`build_report`), without the raw-attempts rows, which the
        case list pages through."""
        loaded = self.index.load(run_id)
        if "report" not in loaded.extra:
            from evalh.gcpause import gc_paused
            from evalh.report import build_report

            run = loaded.run()
            with gc_paused():
                report = build_report([run]).to_dict()
            for suite in report["suites"]:
                for arm in suite["arms"]:
                    if arm.get("repeats"):
                        arm["repeats"]["raw"] = []
            loaded.extra["report"] = report
        return loaded.extra["report"]

    def cases(self, run_id: str, params: Mapping[str, str]) -> dict[str, Any]:
        """A page of one suite's case rows, filtered by arm, status and id substring."""
        loaded = self.index.load(run_id)
        suite = params.get("suite") or next(iter(loaded.rows), "")
        if suite not in loaded.rows:
            raise BadRequest(f"suite: no suite {suite!r} in run {run_id}")
        status = params.get("status") or ""
        if status and status not in (*STATUSES, "bad"):
            raise BadRequest(f"status: expected one of {', '.join(STATUSES)} or bad")
        arm = params.get("arm") or ""
        q = (params.get("q") or "").lower()
        offset = _int(params, "offset", 0, 0, 10**9)
        limit = _int(params, "limit", 100, 1, MAX_PAGE)
        rows, keys = loaded.rows[suite], loaded.search[suite]
        counts = dict.fromkeys(STATUSES, 0)
        hits = []
        for row, key in zip(rows, keys, strict=True):
            if (arm and row["arm"] != arm) or (q and q not in key):
                continue
            counts[row["status"]] = counts.get(row["status"], 0) + 1
            if not status or row["status"] == status or (
                    status == "bad" and row["status"] in ("failed", "errored")):
                hits.append(row)
        return {"suite": suite, "total": len(hits), "offset": offset, "limit": limit,
                "counts": counts, "arms": sorted({r["arm"] for r in rows}),
                "rows": hits[offset:offset + limit]}

    def case(self, run_id: str, params: Mapping[str, str]) -> dict[str, Any]:
        """Everything stored about one result: input, expected, output, every score with
        its rationale and details, the trace, the error."""
        loaded = self.index.load(run_id)
        suite = params.get("suite") or ""
        if suite not in loaded.rows:
            raise BadRequest(f"suite: no suite {suite!r} in run {run_id}")
        count = len(loaded.rows[suite])
        if not count:
            raise RunNotFound(f"suite {suite!r} of run {run_id} has no results")
        i = _int(params, "i", 0, 0, count - 1)
        return {"run_id": run_id, "suite": suite, "i": i,
                "result": loaded.case(suite, i).model_dump(mode="json")}

    def compare(self, params: Mapping[str, str]) -> dict[str, Any]:
        """`compare_runs` of two runs (default: BASELINE, else the second newest, against
        the newest), with the default policy: the verdict `evalh compare` gives."""
        from evalh.core.compare import ComparePolicy, compare_runs

        ids = self.index.store.list_ids()
        cand = params.get("candidate") or (ids[-1] if ids else "")
        base = params.get("base") or self.baseline() or (ids[-2] if len(ids) > 1 else "")
        if not cand or not base:
            raise RunNotFound("compare needs two runs")
        b, c = self.index.load(base), self.index.load(cand)
        key = (b.key, c.key)
        with self._lock:
            hit = self._compares.get(key)
        if hit is None:
            hit = compare_runs(b.run(), c.run(), ComparePolicy()).to_dict()
            with self._lock:
                self._compares[key] = hit
                while len(self._compares) > 8:
                    self._compares.popitem(last=False)
        return hit
