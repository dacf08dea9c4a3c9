"""The dashboard's in-memory index of a runs directory.

Run summaries (everything but the case rows) are cached per file by (path, mtime, size),
so the history page re-reads only documents that changed. Whole runs, with their case
rows flattened for listing, are kept in a small LRU, so paging and filtering the cases of
a 10,000-case run does not parse it again. Safe to share between server threads.
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from evalh.errors import RunDocumentError, RunNotFound
from evalh.models import CaseResult, Run
from evalh.store import RunStore, parse_run, validate_run_id

FileKey = tuple[str, int, int]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Parsing a large run allocates millions of acyclic objects; a cycle collection in
    the middle would walk them all again for nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _file_key(path: Path) -> FileKey:
    st = path.stat()
    return (str(path), st.st_mtime_ns, st.st_size)


def summarize(run: Run) -> dict[str, Any]:
    """The history row of a run: identity, status, git, and per suite and arm the stored
    aggregates (counts with denominators, rates null over zero)."""
    suites: dict[str, Any] = {}
    costs = []
    for name, s in run.suites.items():
        agg = s.aggregate.model_dump(mode="json")
        suites[name] = {
            "regime": s.regime, "cases": s.dataset.cases, "aggregate": agg,
            "arms": {a: v.model_dump(mode="json") for a, v in s.arms.items()} if len(s.arms) > 1 else {},
            "baseline_arm": s.baseline_arm,
        }
        if s.aggregate.cost_usd is not None:
            costs.append(s.aggregate.cost_usd)
    return {
        "run_id": run.run_id, "label": run.label, "status": run.status,
        "status_reason": run.status_reason, "started_at": run.started_at,
        "finished_at": run.finished_at, "git": run.git.model_dump(mode="json"),
        "derived_from": run.derived_from.model_dump(mode="json") if run.derived_from else None,
        "suites": suites,
        "cost_usd": sum(costs) if costs else None,
        "cost_suites": len(costs),
    }


def _light_run(data: bytes, shown: str) -> Run:
    """The run without its case rows: validated like any run, at a fraction of the cost."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RunDocumentError(f"{shown}: not valid JSON: {exc}") from None
    if isinstance(raw, dict):
        for suite in (raw.get("suites") or {}).values():
            if isinstance(suite, dict):
                suite["cases"] = []
    return parse_run(orjson.dumps(raw), shown)


def case_row(i: int, r: CaseResult) -> dict[str, Any]:
    """One line of the case list (the detail is fetched on demand)."""
    return {
        "i": i, "case_id": r.case_id, "arm": r.arm, "attempt": r.attempt, "status": r.status,
        "score": r.score, "latency_ms": r.latency_ms, "cost_usd": r.cost_usd,
        "error": r.error.type if r.error else None,
    }


@dataclass
class LoadedRun:
    """A whole run, with its case rows flattened per suite for listing."""

    key: FileKey
    run: Run
    rows: dict[str, list[dict[str, Any]]]
    search: dict[str, list[str]]
    """Lower-cased case id of each row, for the text filter."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Things derived from the run and cached with it (the report)."""


class RunIndex:
    """Summaries and loaded runs of one runs directory."""

    def __init__(self, runs_dir: Path, *, max_loaded: int = 3) -> None:
        self.store = RunStore(runs_dir)
        self.max_loaded = max_loaded
        self._lock = threading.Lock()
        self._summaries: dict[str, tuple[FileKey, dict[str, Any] | None]] = {}
        self._loaded: OrderedDict[str, LoadedRun] = OrderedDict()

    @property
    def runs_dir(self) -> Path:
        return self.store.runs_dir

    def summaries(self) -> list[dict[str, Any]]:
        """Every readable run's summary, oldest first. Unreadable documents are left out."""
        out = []
        for run_id in self.store.list_ids():
            path = self.store.path_for(run_id)
            try:
                key = _file_key(path)
            except OSError:
                continue
            with self._lock:
                cached = self._summaries.get(run_id)
            if cached is None or cached[0] != key:
                try:
                    with _gc_paused():
                        summary: dict[str, Any] | None = summarize(_light_run(path.read_bytes(), str(path)))
                except (OSError, RunDocumentError):
                    summary = None
                with self._lock:
                    self._summaries[run_id] = (key, summary)
                cached = (key, summary)
            if cached[1] is not None:
                out.append(cached[1])
        return out

    def load(self, run_id: str) -> LoadedRun:
        """The whole run (from the LRU when its file did not change). Raises InvalidRunId,
        RunNotFound or RunDocumentError."""
        path = self.store.path_for(validate_run_id(run_id))
        try:
            key = _file_key(path)
        except OSError:
            raise RunNotFound(f"no run {run_id!r} in {self.store.runs_dir}") from None
        with self._lock:
            hit = self._loaded.get(run_id)
            if hit is not None and hit.key == key:
                self._loaded.move_to_end(run_id)
                return hit
        with _gc_paused():
            run = parse_run(path.read_bytes(), str(path))
            rows = {n: [case_row(i, r) for i, r in enumerate(s.cases)] for n, s in run.suites.items()}
        search = {n: [r["case_id"].lower() for r in rs] for n, rs in rows.items()}
        loaded = LoadedRun(key=key, run=run, rows=rows, search=search)
        with self._lock:
            self._loaded[run_id] = loaded
            self._loaded.move_to_end(run_id)
            while len(self._loaded) > self.max_loaded:
                self._loaded.popitem(last=False)
        return loaded
