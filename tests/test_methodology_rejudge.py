"""The bias-aware preset holds on `evalh rejudge` too: a rejudge writes a new run judged by
today's judges, so the judge requirements (no --allow-self-judge, blind, calibrated,
distinct) are checked before any judge call, one line and exit 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from tests.test_methodology_preset import (
    CALIBRATED,
    FULL,
    GOOD_JUDGE,
    JUDGE,
    _judges,
    _one_line,
    _project,
)

runner = CliRunner()


def _first_run(tmp: Path) -> tuple[Path, Path, str]:
    cfg = _project(tmp, top='methodology = "bias-aware"', judge=GOOD_JUDGE)
    runs = tmp / "runs"
    result = runner.invoke(app, ["run", "--config", str(cfg), "-q", "--runs-dir", str(runs), *FULL])
    assert result.exit_code == 0, result.output
    (doc,) = runs.glob("*.json")
    return cfg, runs, json.loads(doc.read_text())["run_id"]


@pytest.mark.parametrize(("judge", "args", "says"), [
    (GOOD_JUDGE, ["--allow-self-judge"], "--allow-self-judge is refused (methodology 'bias-aware'"),
    (JUDGE.format(extra=CALIBRATED, judges=_judges(*["claude-sonnet-4-5"] * 3)), [],
     "requires distinct judge models: judge 'stance' names 'claude-sonnet-4-5' more than once"),
    (JUDGE.format(extra="", judges=_judges("claude-sonnet-4-0")), [],
     "requires calibration first: judge 'stance' has no `calibration` dataset"),
])
def test_a_rejudge_under_the_preset_is_refused_like_a_run(tmp_path: Path, judge: str, args: list[str],
                                                          says: str) -> None:
    cfg, runs, run_id = _first_run(tmp_path)
    _project(tmp_path, top='methodology = "bias-aware"', judge=judge)  # today's judges
    result = runner.invoke(app, ["rejudge", run_id, "--all", "--config", str(cfg), "--runs-dir", str(runs),
                                 "-q", *args])
    assert result.exit_code == 2, result.output
    assert says in _one_line(result)
    assert len(list(runs.glob("*.json"))) == 1  # nothing written


def test_a_rejudge_that_meets_the_preset_runs(tmp_path: Path) -> None:
    cfg, runs, run_id = _first_run(tmp_path)
    result = runner.invoke(app, ["rejudge", run_id, "--all", "--config", str(cfg), "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 0, result.output
    assert len(list(runs.glob("*.json"))) == 2
