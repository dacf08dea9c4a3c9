"""Review of the streamed `evalh show` / `evalh report` (run_results, report.parts): inputs
the report generator does not make, where the streamed report must say what the report of
the whole run in memory said before it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from compare_factory import ENV
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.models import CaseResult, DatasetInfo, Run, Score, SuiteResult
from evalh.report import build_report
from evalh.run_results import open_results
from evalh.store import RunStore

RUN_ID = "20260101T000000000Z-0000aa"


def _failed(case_id: str, attempt: int, rationale: str) -> CaseResult:
    return CaseResult(case_id=case_id, attempt=attempt, status="failed", score=0.0,
                      scores=[Score(scorer="exact", value=0.0, passed=False, rationale=rationale)])


def _run(results: list[CaseResult], run_id: str = RUN_ID) -> Run:
    suite = SuiteResult(regime="stochastic", dataset=DatasetInfo(path="d.jsonl", sha256="ds", cases=2),
                        cases=results)
    return Run(run_id=run_id, status="complete", started_at="2026-01-01T00:00:00Z",  # type: ignore[arg-type]
               environment=ENV, config={}, suites={"s": suite})


def _cli(cwd: Path, *args: str) -> Any:
    import os

    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(app, list(args))
    finally:
        os.chdir(old)


@pytest.mark.parametrize("attempt", [2**62, 2**63, 2**64 - 1])
def test_a_worst_cases_reason_is_found_whatever_its_attempt_number(tmp_path: Path, attempt: int) -> None:
    """The reason is the earliest attempt's that says why: an attempt number past 2**62 (a
    document may hold any integer JSON gives) is an attempt like another, not "none"."""
    store = RunStore(tmp_path / "eval_runs")
    run = _run([_failed("c1", 0, ""), _failed("c1", attempt, "late why"), _failed("c2", attempt, "only why")])
    store.write(run)
    for source in (run, open_results(store, RUN_ID)):
        worst = build_report([source]).suites[0].arms[0].worst
        assert {w.case_id: w.why for w in worst} == {"c1": "late why", "c2": "only why"}
    got = _cli(tmp_path, "report", RUN_ID, "--json")
    assert got.exit_code == 0, got.output
    rows = json.loads(got.stdout)["suites"][0]["arms"][0]["worst"]
    assert [r["why"] for r in rows] == ["late why", "only why"]


def test_a_run_named_twice_gets_its_stat_tables_twice_not_merged(tmp_path: Path) -> None:
    """`evalh report A A --stat score` (an id and its path, say) reports each run given, as
    the report itself does: two tables of A's numbers, not one table of both counted together."""
    store = RunStore(tmp_path / "eval_runs")
    store.write(_run([_failed("c1", 0, "x"), _failed("c2", 0, "y")]))
    path = str(store.path_for(RUN_ID))
    got = _cli(tmp_path, "report", RUN_ID, path, "--stat", "score", "--json")
    assert got.exit_code == 0, got.output
    stats = json.loads(got.stdout)["field_stats"]
    assert [(s["run_id"], s["suite"], s["rows"][0]["results"]) for s in stats] == [(RUN_ID, "s", 2), (RUN_ID, "s", 2)]
    from evalh.core.analysis.field_stats import field_stats

    run = store.load(RUN_ID)
    assert [s.rows[0].results for s in field_stats([run, run], ["score"], [])] == [2, 2]


def _damage_a_result(path: Path) -> None:
    lines = path.read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b'{"case_id"'))
    lines[at + 1] = lines[at + 1].replace(b'"attempt":', b'"attempt":"x","was":', 1)
    path.write_bytes(b"\n".join(lines))


def test_a_damaged_baseline_is_a_note_in_the_report_not_its_failure(tmp_path: Path) -> None:
    """"A report never fails because of the baseline": a BASELINE run whose results are
    damaged gets the note it got when the report loaded it whole, and the report is printed."""
    store = RunStore(tmp_path / "eval_runs")
    base = _run([_failed("c1", 0, "x"), _failed("c2", 0, "y")], run_id="20260101T000000000Z-0000ab")
    store.write(base)
    store.write(_run([_failed("c1", 0, "x"), _failed("c2", 0, "y")]))
    _damage_a_result(store.path_for(base.run_id))
    (tmp_path / "BASELINE").write_text(base.run_id + "\n")
    from evalh.errors import RunDocumentError

    with pytest.raises(RunDocumentError) as loading:
        store.load(base.run_id)
    got = _cli(tmp_path, "report", RUN_ID, "--json")
    assert got.exit_code == 0, got.output
    assert json.loads(got.stdout)["baseline"] == [{
        "run_id": RUN_ID, "base": base.run_id, "verdict": "none", "fails_gate": False, "gate_reasons": [],
        "suites": {}, "note": "cannot load: " + loading.value.message.removeprefix(f"{tmp_path}/")}]
