"""Several runs of one configuration pooled into one: a BASELINE that is not one lucky run.

Pure (no I/O). `pool_runs` returns a `Run` whose suites hold every given run's results per
case, their attempts renumbered 0..k-1 per (case, arm) across the runs, so `compare_runs`
sees one base whose cases carry every baseline attempt (compare reduces a case's attempts
to per-case figures, so each case still counts once). `what_ran_differences` says whether
runs may be pooled at all: only runs that ran the same thing (target, scorers, dataset
digest, regime, arms) measure the same quantity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalh.core.compare.config import config_differences
from evalh.core.results.aggregate import aggregate
from evalh.core.results.outcome import summarize
from evalh.errors import EvalhError
from evalh.models import CaseResult, Run, SuiteResult

WHAT_RAN = ("target", "scorers", "dataset_sha256", "regime", "arms")
"""Heads of the per-suite config keys that say what ran. Anything else (seed, label,
thresholds, description, tier, repeats, concurrency, the evalh version) may differ
between pooled runs: it changes how a run was driven or judged, not what it measured."""

_STATUS_RANK = {"complete": 0, "running": 1, "partial": 2, "failed": 3}


class PoolError(EvalhError):
    """Runs that cannot be pooled (different configuration, conflicting case content)."""


@dataclass(frozen=True, slots=True)
class WhatRanDifference:
    """One per-suite setting that differs between two runs of a would-be pool."""

    suite: str
    key: str
    run_a: str
    value_a: object
    run_b: str
    value_b: object

    def text(self) -> str:
        return (f"suite {self.suite}: {self.key} is {self.value_a!r} in {self.run_a} "
                f"but {self.value_b!r} in {self.run_b}")


def _is_what_ran(key: str) -> bool:
    head = key.split(".")[0].split("[")[0]
    return head in WHAT_RAN


def what_ran_differences(runs: Sequence[Run]) -> list[WhatRanDifference]:
    """Differences in what ran between the first run having each suite and every other run
    having it (suites only some runs have are not differences: their cases pool as they
    are). Empty when the runs may be pooled."""
    out: list[WhatRanDifference] = []
    for i, later in enumerate(runs[1:], start=1):
        for name in later.suites:
            first = next((r for r in runs[:i] if name in r.suites), None)
            if first is None:
                continue
            only = first.model_copy(update={"suites": {name: first.suites[name]}})
            for d in config_differences(only, later):
                if d.suite == name and _is_what_ran(d.key):
                    out.append(WhatRanDifference(name, d.key, first.run_id, d.base,
                                                 later.run_id, d.candidate))
    return out


def suite_coverage(runs: Sequence[Run]) -> dict[str, list[str]]:
    """Suite name → ids of the runs that have it, in the runs' order."""
    out: dict[str, list[str]] = {}
    for run in runs:
        for name in run.suites:
            out.setdefault(name, []).append(run.run_id)
    return out


def pool_runs(runs: list[Run]) -> Run:
    """One `Run` holding every run's results, per suite and case.

    - Each (case, arm) gets attempts 0..k-1 across the runs: the first run's attempts
      first (in their own attempt order), then the next run's, and so on. Results whose
      number does not change are shared with the input runs; none is modified.
    - A case or suite only some runs have keeps the results that exist.
    - `pooled_from` lists the pooled run ids, in order; `run_id`, label, git, config and
      seed are the first run's (the config is the same in what ran: see
      `what_ran_differences`); aggregates and summary are recomputed over the pool.
    - The status is the worst of the runs' (`failed` > `partial` > `running` >
      `complete`), with a reason naming the run, so a comparison says the base is not
      complete when one of its runs is not.

    Raises `PoolError` for no runs, a run given twice, a suite whose regime differs, or a
    case whose content digest differs between runs (the dataset changed under them).
    """
    if not runs:
        raise PoolError("no runs to pool")
    ids = [r.run_id for r in runs]
    dup = next((i for i in ids if ids.count(i) > 1), None)
    if dup is not None:
        raise PoolError(f"run {dup} is named twice: a run pooled with itself is not a second run")
    first = runs[0]
    suites: dict[str, SuiteResult] = {}
    for name, owners in suite_coverage(runs).items():
        parts = [r.suites[name] for r in runs if name in r.suites]
        regimes = {p.regime for p in parts}
        if len(regimes) > 1:
            raise PoolError(f"suite {name}: regime differs between the runs "
                            f"({', '.join(sorted(regimes))}); they cannot be pooled")
        suites[name] = _pool_suite(name, parts, owners)
    worst = max(runs, key=lambda r: _STATUS_RANK.get(r.status, 0))
    status, reason = first.status, first.status_reason
    if worst.status != "complete":
        status = worst.status
        why = f": {worst.status_reason}" if worst.status_reason else ""
        reason = f"pooled run {worst.run_id} is {worst.status}{why}"
    pooled = first.model_copy(update={
        "status": status,
        "status_reason": reason if status != "complete" else None,
        "started_at": min(r.started_at for r in runs),
        "finished_at": max((r.finished_at for r in runs if r.finished_at), default=None),
        "pooled_from": ids,
        "suites": suites,
        "summary": {},
    })
    pooled.summary = summarize(pooled)
    pooled.summary["pooled_runs"] = len(ids)
    return pooled


def _pool_suite(name: str, parts: list[SuiteResult], owners: list[str]) -> SuiteResult:
    by_key: dict[tuple[str, str], list[CaseResult]] = {}
    digests: dict[str, tuple[str, str]] = {}
    for run_id, part in zip(owners, parts, strict=True):
        mine: dict[tuple[str, str], list[CaseResult]] = {}
        for r in part.cases:
            if r.case_digest is not None:
                seen = digests.setdefault(r.case_id, (r.case_digest, run_id))
                if seen[0] != r.case_digest:
                    raise PoolError(
                        f"suite {name}: case {r.case_id} differs between runs {seen[1]} and "
                        f"{run_id} (content digest); they cannot be pooled"
                    )
            mine.setdefault((r.case_id, r.arm), []).append(r)
        for key, results in mine.items():
            bucket = by_key.setdefault(key, [])
            if any(a.attempt > b.attempt for a, b in zip(results, results[1:], strict=False)):
                results = sorted(results, key=lambda r: r.attempt)
            for r in results:
                # a result already numbered right is shared, not copied (never mutated)
                bucket.append(r if r.attempt == len(bucket) else
                              r.model_copy(update={"attempt": len(bucket)}))
    cases = [r for bucket in by_key.values() for r in bucket]
    head = parts[0]
    arm_names: list[str] = []
    for part in parts:
        arm_names += [a for a in part.arms if a not in arm_names]
    arms = {a: aggregate(r for r in cases if r.arm == a) for a in arm_names}
    return head.model_copy(update={
        "cases": cases,
        "aggregate": aggregate(cases),
        "arms": arms,
    })
