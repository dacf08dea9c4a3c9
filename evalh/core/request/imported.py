"""`evalh import`: another tool's results (`evalh.importers`) as an evalh run document,
through the one runner.

The imported results are the outputs of a `core.run.sources.StoredSource` (the path `evalh
rejudge` takes) and their scores are replayed by `core.rejudge.parts.StoredScorer`s, so
the runner decides each result's status from its scores, aggregates, summarizes and
writes the document as for any run: `errored` where the tool recorded an error, `failed`
where a pass/fail scorer failed or nothing passed (an unscored result is never a pass).
Graded scorers are recorded (their values make the case's score) and decide nothing
alone; a suite whose every scorer is graded is stochastic (its mean score compares) and
noted so. The target is never called.

The run's config snapshot holds, per suite, the regime, what answered (the tool's model
and settings), the scorers, the tool's own task config and the allowances a comparison
applies (`thresholds`: those of the project's suite of the same name, else the defaults,
as a native run records them; so a comparison of two imported runs reads as that of the
same data run by evalh, tests/test_import_identical.py); and an `import` record: the
tool, its version, the file, and the notes naming what could not be mapped. The git
state is the one the tool recorded (none when it recorded none: never the git state of
the directory the import ran in). A result the file lacks for a (case, arm, attempt)
the others have is `errored` ("not in the imported file") and noted.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC
from pathlib import Path
from typing import Any, Literal

from evalh.config import Thresholds
from evalh.core.rejudge.parts import StoredScorer
from evalh.core.run.plan import ArmPlan, RunPlan, SuitePlan
from evalh.core.run.sources import ResultKey, StoredSource
from evalh.datasets import Dataset
from evalh.importers import ImportedRun
from evalh.importers.base import ForeignFileError, ImportedSuite
from evalh.models import Case, CaseMetadata, CaseResult, ErrorInfo, GitInfo, Run
from evalh.scorers.base import Scorer
from evalh.services import Budget, RunServices
from evalh.store import RunStore, new_run_id, parse_iso

Regime = Literal["deterministic", "stochastic"]
IMPORT_CONCURRENCY = 16
"""Results scored at once: the scores are replayed, nothing is called."""


def _iso(value: str | None) -> str | None:
    """A tool's timestamp in the run document's form (UTC, milliseconds, `Z`)."""
    when = parse_iso(value)
    if when is None:
        return None
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _case(r: CaseResult, run: ImportedRun) -> Case:
    try:
        metadata = CaseMetadata.model_validate(r.metadata)
    except ValueError:
        run.note("case metadata whose split, group, stratum or tags are not strings is kept under "
                 "`metadata.imported`")
        metadata = CaseMetadata.model_validate({"imported": r.metadata})
    return Case(id=r.case_id, input=r.input, expected=r.expected, metadata=metadata)


def _suite_plan(suite: ImportedSuite, run: ImportedRun, regime: Regime | None,
                thresholds: Mapping[str, Thresholds]) -> tuple[SuitePlan, dict[str, Any]]:
    if not suite.results:
        raise ForeignFileError(f"{run.source}: suite {suite.name!r} has no results: nothing to import")
    cases = list({r.case_id: _case(r, run) for r in suite.results}.values())
    arms = list(dict.fromkeys(r.arm for r in suite.results))
    repeats = max(r.attempt for r in suite.results) + 1
    stored: dict[ResultKey, CaseResult] = {}
    for r in suite.results:
        stored.setdefault((r.case_id, r.arm, r.attempt), r)
    for case in cases:
        for arm in arms:
            for attempt in range(repeats):
                if (case.id, arm, attempt) not in stored:
                    run.note("results the file lacks for a case, arm and attempt the others have are errored "
                             "(`not in the imported file`)")
                    stored[(case.id, arm, attempt)] = CaseResult(
                        case_id=case.id, arm=arm, attempt=attempt, status="errored",
                        error=ErrorInfo(type="NotImported", message="not in the imported file"))
    graded_only = bool(suite.scorers) and all(k == "graded" for k in suite.scorers.values())
    if graded_only:
        run.note(f"suite {suite.name}: every scorer is graded (no verdict), so no case passes (an unjudged "
                 "result is never a pass): the suite is stochastic and its mean score is what compares")
    chosen: Regime = regime or suite.regime or ("stochastic" if repeats > 1 or graded_only else "deterministic")
    scorers: list[Scorer] = [StoredScorer(name, stored, "deterministic") for name in suite.scorers]
    model = suite.target.get("model")
    plan = SuitePlan(
        name=suite.name, regime=chosen, tier=0,
        dataset=Dataset(Path(suite.dataset or suite.name), cases),
        dataset_display=suite.dataset or suite.name, cases=cases,
        arms=[ArmPlan(a, StoredSource(stored, suite.target)) for a in arms],
        scorers=scorers, repeats=repeats, timeout_s=60.0, concurrency=IMPORT_CONCURRENCY,
        target_snapshot=dict(suite.target), subject_models=[model] if isinstance(model, str) else [],
    )
    snap = {
        "regime": chosen, "target": dict(suite.target), "repeats": repeats,
        "scorers": [{"name": n, "type": "stored", "kind": k} for n, k in suite.scorers.items()],
        "imported_config": suite.config,
        "thresholds": thresholds.get(suite.name, Thresholds()).model_dump(),
    }
    if len(arms) > 1:
        snap["arms"] = [{"name": a} for a in arms]
    return plan, snap


def plan_import(imported: ImportedRun, root: Path, *, regime: Regime | None = None,
                label: str | None = None, thresholds: Mapping[str, Thresholds] | None = None) -> RunPlan:
    """The plan that turns `imported` into a run (nothing is written). `thresholds`: the
    project's allowances by suite name (a suite not named there gets the defaults)."""
    suites, snaps = [], {}
    for suite in imported.suites.values():
        plan, snap = _suite_plan(suite, imported, regime, thresholds or {})
        suites.append(plan)
        snaps[suite.name] = snap
    # after planning: the notes it made (missing results, metadata) belong in the record too
    record = {"format": imported.format, "tool_version": imported.tool_version, "file": imported.source.name,
              "notes": list(imported.notes)}
    return RunPlan(
        run_id=new_run_id(), root=root, suites=suites,
        config_snapshot={"import": record, "suites": snaps}, seed=0,
        services=RunServices(root=root, budget=Budget()),
        label=label or imported.label, started_at=_iso(imported.started_at),
        options={"import": imported.source.name}, git=imported.git or GitInfo(),
    )


def import_runs(imported: list[ImportedRun], store: RunStore, root: Path, *, regime: Regime | None = None,
                label: str | None = None, thresholds: Mapping[str, Thresholds] | None = None) -> list[Run]:
    """Write a run document for each of `imported` and return them (without their
    results). Every one is planned before the first is written: a file that cannot be
    imported stops them all, with nothing written."""
    from evalh.core.run.entry import run_plan

    plans = [plan_import(item, root, regime=regime, label=label, thresholds=thresholds) for item in imported]
    return [run_plan(plan, store, None, results=False) for plan in plans]
