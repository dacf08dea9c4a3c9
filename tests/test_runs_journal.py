"""`evalh runs` lists a run that only has a journal (killed with SIGKILL, a crash): status
`interrupted` and the command that resumes it; `running` while a live process holds it."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.models import CaseResult, DatasetInfo, EnvironmentInfo, Run, SuiteResult
from evalh.store import RunStore

DONE = "20260101T000000000Z-aaaaaa"
KILLED = "20260101T000100000Z-bbbbbb"


def _store(tmp_path: Path) -> RunStore:
    store = RunStore(tmp_path / "runs")
    store.write(Run(run_id=DONE, started_at="2026-01-01T00:00:00Z", status="complete",
                    environment=EnvironmentInfo(evalh="0", python="3", platform="test"),
                    suites={"s": SuiteResult(regime="deterministic",
                                             dataset=DatasetInfo(path="d", sha256="x", cases=1),
                                             cases=[CaseResult(case_id="a", status="passed", score=1.0)])}))
    journal = store.journal(KILLED)
    journal.open({"run_id": KILLED, "label": "nightly", "seed": 1, "started_at": "2026-01-01T00:01:00Z",
                  "config": {}, "suites": ["s"], "derived_from": None, "datasets": {}, "options": {}})
    journal.append("s", CaseResult(case_id="a", status="passed", score=1.0))
    journal.close()
    return store


def _runs(store: RunStore, *args: str) -> object:
    return CliRunner().invoke(app, ["runs", "--runs-dir", str(store.runs_dir), *args])


def test_a_run_with_only_a_journal_is_listed_interrupted_with_its_resume_command(tmp_path: Path) -> None:
    store = _store(tmp_path)
    result = _runs(store, "--json")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    rows = {r["run_id"]: r for r in json.loads(result.stdout)}  # type: ignore[attr-defined]
    assert list(rows) == [DONE, KILLED]  # oldest first, by id
    assert rows[KILLED]["status"] == "interrupted" and rows[KILLED]["label"] == "nightly"
    assert rows[KILLED]["resume"] == f"evalh run --resume {KILLED} --runs-dir {store.runs_dir}"
    assert rows[DONE]["status"] == "complete" and rows[DONE]["resume"] is None
    table = _runs(store)
    text = " ".join(table.stdout.split())  # type: ignore[attr-defined]
    assert "interrupted" in text and f"evalh run --resume {KILLED}" in text


def test_a_journal_a_live_process_holds_is_running_not_interrupted(tmp_path: Path) -> None:
    store = _store(tmp_path)
    lock = store.lock(KILLED)  # this process is the run's live holder
    try:
        rows = {r["run_id"]: r for r in json.loads(_runs(store, "--json").stdout)}  # type: ignore[attr-defined]
    finally:
        lock.release()
    assert rows[KILLED]["status"] == "running" and rows[KILLED]["resume"] is None


def test_limit_counts_journal_only_runs_too(tmp_path: Path) -> None:
    store = _store(tmp_path)
    rows = json.loads(_runs(store, "--json", "-n", "1").stdout)  # type: ignore[attr-defined]
    assert [r["run_id"] for r in rows] == [KILLED]
