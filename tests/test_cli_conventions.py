"""CLI conventions: --version, -h everywhere, shell completion, --json where --format json is."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_json_is_format_json_on_compare_and_report(project: Path) -> None:
    config, runs = str(project / "evalh.toml"), str(project / "runs")
    for _ in range(2):
        assert invoke("run", "--config", config, "--runs-dir", runs, "-q").exit_code == 0
    base, cand = sorted(p.stem for p in (project / "runs").glob("*.json"))
    common = ["--config", config, "--runs-dir", runs]
    for command in (["compare", base, cand], ["report", cand]):
        short = invoke(*command, *common, "--json")
        long = invoke(*command, *common, "--format", "json")
        assert short.exit_code == long.exit_code == 0, short.output
        assert json.loads(short.stdout).keys() == json.loads(long.stdout).keys()
        clash = invoke(*command, *common, "--json", "--format", "markdown")
        assert clash.exit_code == 2 and "--json" in clash.stderr


@pytest.mark.parametrize("command", [["show"], ["rejudge"], ["sweep"], ["export-requests"], ["label", "report"]])
def test_run_arguments_read_as_words(command: list[str]) -> None:
    usage = invoke(*command, "--help").stdout.splitlines()[0]
    assert "{run_id}" not in usage and "{run}" not in usage and ("RUN_ID" in usage or "RUN" in usage), usage


def test_run_options_read_as_words() -> None:
    text = invoke("run", "--help").stdout
    for option, metavar in (("--label", "LABEL"), ("--repeats", "N"), ("--timeout", "SECONDS"),
                            ("--max-cost", "USD"), ("--max-tokens", "TOKENS"), ("--seed", "SEED")):
        assert f"{option} {metavar}" in text, option
    assert "<str>" not in text and "range>" not in text
