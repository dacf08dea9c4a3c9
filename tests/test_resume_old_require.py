"""A partial run written before the methodology's require keys existed (blind, calibrated,
distinct_judges, destination, methodology, digests, claims) resumes with the same
evalh.toml: its recorded `require` lacks those keys, today's holds their defaults — the
same requirements, which resume refused as 'evalh.toml changed since it started'."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.methodology_spec import RequireConfig
from tests.runner_project import load, write_project

runner = CliRunner()
BEFORE = frozenset({"min_repeats", "explicit", "label", "judge_not_subject", "required_paths", "input_schema",
                    "expected_schema", "input_schema_path", "expected_schema_path"})
"""What `[suites.S.require]` snapshotted before issue 29."""


def test_an_earlier_partial_run_with_a_require_table_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = write_project(tmp_path, cases=12, concurrency=1, target="priced",
                        suite_extra="[suites.s.require]\nlabel = true\n")
    runs = tmp_path / "runs"
    monkeypatch.setenv("CALLS_FILE", str(tmp_path / "calls.txt"))
    with monkeypatch.context() as m:  # the run as the earlier code recorded it
        m.setattr(RequireConfig, "SNAPSHOT", BEFORE)
        first = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--seed", "5",
                                    "--label", "x", "--max-cost", "0.05"])
    assert first.exit_code in (0, 1), first.output
    (path,) = runs.glob("*.json")
    doc = load(path)
    assert doc["status"] == "partial" and set(doc["config"]["suites"]["s"]["require"]) == BEFORE
    resumed = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--resume",
                                  doc["run_id"], "--max-cost", "1"])
    assert resumed.exit_code in (0, 1), resumed.output
    assert load(path)["status"] == "complete"
