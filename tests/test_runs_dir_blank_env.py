"""A blank `$EVAL_RUNS_DIR` (set but only spaces, as an unfilled CI variable is) names no
destination: it was taken as a directory named by spaces — created beside the project,
and counted as the named destination `require.destination` (the bias-aware preset) asks
for. It is now as unset: the preset refuses the run, one line, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from tests.test_methodology_preset import FULL, GOOD_JUDGE, _one_line, _project

runner = CliRunner()


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_runs_dir_variable_is_no_destination(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     blank: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVAL_RUNS_DIR", blank)
    cfg = _project(tmp_path, top='methodology = "bias-aware"', judge=GOOD_JUDGE)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = runner.invoke(app, ["run", "--config", str(cfg), "-q", *FULL])
    assert result.exit_code == 2, result.output
    assert "requires a named output destination" in _one_line(result)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
