"""What a new user hits on the command line: bad input is one line and exit 2, progress
is honest, help teaches, and the results table reads at 80 and 160 columns."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def run_project(project: Path, *args: str) -> Result:
    return invoke("run", "--config", str(project / "evalh.toml"), "--runs-dir", str(project / "runs"), *args)


# ----------------------------------------------------------------------------- a broken evalh.toml


@pytest.mark.parametrize("command", [["runs"], ["compare"], ["report"], ["baseline", "show"]])
def test_a_broken_evalh_toml_is_named_not_silently_ignored(project: Path, command: list[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands that read runs find evalh.toml from the current directory; a typo in it must
    not send them to another runs directory (or BASELINE) without a word."""
    (project / "evalh.toml").write_text((project / "evalh.toml").read_text()
                                        + '\n[suites.smoke.thresholds]\npass_rate_dorp = 0.1\n')
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")
    result = invoke(*command)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "evalh.toml" in lines[0] and "pass_rate_dorp" in lines[0], lines
    assert "Traceback" not in result.output
