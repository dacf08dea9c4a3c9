"""A case whose claim quotes text a secret scrub cut is refused on its own (issue 29, item
8): `label report` and `evalh report` of its run still work — the corrected figures' human
labels skipped the refusal and stopped both commands (exit 2) for the whole run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from tests.test_exact_text import RUBRIC, SECRET, project, run

runner = CliRunner()


def test_one_refused_case_does_not_stop_the_reports_of_its_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H29_API_KEY", SECRET)
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))
    original = "Key " + SECRET + ". The retry count is 3."
    at = original.index("The retry count is 3")
    rows = [{"id": "quoted", "input": {"n": 0},
             "expected": {"claims": [{"id": "c1", "start": 0, "end": at - 2, "text": original[:at - 2]}]}}]
    rows += [{"id": f"x{i}", "input": {"n": i + 1}, "expected": {"claims": [{"id": "c1", "start": at, "end": at + 20}]}}
             for i in range(5)]
    cfg = project(tmp_path, rows, target="product29:leaky", judged=True)
    _, doc = run(cfg)
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC)
    where = ["--config", str(cfg), "--runs-dir", str(tmp_path / "runs")]
    out = tmp_path / "requests.json"
    exported = runner.invoke(app, ["export-requests", doc["run_id"], *where, "--rubric", str(rubric), "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    assert len(json.loads(out.read_text())["requests"]) == 5
    labelled = runner.invoke(app, ["label", "report", doc["run_id"], *where, "--json"])
    assert labelled.exit_code == 0, labelled.output
    assert json.loads(labelled.stdout)["counts"]
    reported = runner.invoke(app, ["report", doc["run_id"], *where, "--format", "md"])
    assert reported.exit_code == 0, reported.output
    assert SECRET not in labelled.stdout + reported.stdout
