"""CLI conventions: --version, -h everywhere, shell completion, --json where --format json is."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner, Result

from evalh import __version__
from evalh.cli.main import app


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def test_version() -> None:
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.startswith(f"evalh {__version__} (Python ")


@pytest.mark.parametrize("command", [[], ["run"], ["compare"], ["baseline", "set"], ["init"], ["plugins"]])
def test_dash_h_is_help(command: list[str]) -> None:
    short, long = invoke(*command, "-h"), invoke(*command, "--help")
    assert short.exit_code == long.exit_code == 0
    assert short.stdout == long.stdout and "Usage: " in short.stdout


def test_shell_completion_is_typers_own() -> None:
    result = invoke("--show-completion", "bash")
    assert result.exit_code == 0 and "_evalh_completion" in result.stdout
