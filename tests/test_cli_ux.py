"""What a new user hits on the command line: bad input is one line and exit 2, progress
is honest, help teaches, and the results table reads at 80 and 160 columns."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
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


# ----------------------------------------------------------------------------- progress


def test_each_suite_bar_counts_its_own_errors(project: Path) -> None:
    """One bar per suite: a later suite's bar must not carry the errors of the one before."""
    (project / "evalh.toml").write_text((project / "evalh.toml").read_text() + """
[suites.a_crash]
dataset = "data/smoke.jsonl"
target = "evalh_fixture_target:crash"
regime = "deterministic"
scorers = [{ type = "exact", field = "verdict" }]
""")
    result = run_project(project)
    assert result.exit_code == 1, result.output
    bars = {line.split()[0]: line for line in result.stderr.splitlines() if "errored" in line}
    assert "errored 3" in bars["a_crash"], bars
    assert "errored 0" in bars["smoke"], bars


def test_quiet_silences_the_progress_bar(project: Path) -> None:
    result = run_project(project, "--quiet")
    assert result.exit_code == 0, result.output
    assert result.stderr == "" and result.stdout == ""


# ----------------------------------------------------------------------------- report --by


def test_report_by_a_field_no_case_carries_is_bad_input(project: Path) -> None:
    """`--by splt` (a typo) used to exit 0 with an empty breakdown; it names the fields there are."""
    assert run_project(project, "-q").exit_code == 0
    result = invoke("report", "--runs-dir", str(project / "runs"), "--by", "splt")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "splt" in lines[0] and "split" in lines[0], lines
    ok = invoke("report", "--runs-dir", str(project / "runs"), "--by", "split", "--by", "tags")
    assert ok.exit_code == 0, ok.output


# ----------------------------------------------------------------------------- the results table


@pytest.fixture
def columns(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], None]]:
    """Set the width of piped output for the next command (the consoles are cached)."""
    from evalh import console

    def set_width(width: int) -> None:
        monkeypatch.setenv("COLUMNS", str(width))
        console.out.cache_clear()
        console.err.cache_clear()

    yield set_width
    console.out.cache_clear()
    console.err.cache_clear()


@pytest.mark.parametrize("width", [80, 160])
def test_results_table_fits_the_terminal_without_cutting_a_value(project: Path, width: int,
                                                                   columns: Callable[[int], None]) -> None:
    """At 80 columns the table used to cut every cell ("100.0… (3/…", "smo…"): whole columns
    give way instead, named under the table, and counts and rates stay whole."""
    toml = (project / "evalh.toml").read_text().replace("[suites.smoke]", "[suites.smoke_with_a_long_name]")
    (project / "evalh.toml").write_text(toml)
    assert run_project(project, "-q").exit_code == 0
    columns(width)
    result = invoke("show", "--runs-dir", str(project / "runs"),
                    next((project / "runs").glob("*.json")).stem)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
    row = next(line for line in lines if "smoke_with_a_long_name" in line)
    assert "100.0% (3/3)" in row and "…" not in row, row
    if width == 160:
        assert "deterministic" in row and "not shown" not in result.stdout


# ----------------------------------------------------------------------------- help

COMMANDS = ["init", "run", "validate", "runs", "show", "baseline", "compare", "report", "ui", "rejudge",
            "sweep", "label", "export-requests", "mock-provider", "plugins", "generate", "merge", "import", "ci"]
LEAVES = [["run"], ["validate"], ["runs"], ["show"], ["baseline", "set"], ["baseline", "show"], ["baseline", "noise"],
          ["compare"], ["report"], ["ui"], ["rejudge"], ["sweep"], ["label", "import"],
          ["label", "report"], ["export-requests"], ["mock-provider"], ["init"], ["plugins"], ["merge"],
          ["import"], ["ci", "comment"]]


def test_top_level_help_lists_every_command() -> None:
    result = invoke("--help")
    assert result.exit_code == 0, result.output
    listed = {line.split()[0] for line in result.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(COMMANDS)


@pytest.mark.parametrize("command", LEAVES, ids=" ".join)
def test_every_command_help_teaches_with_examples(command: list[str]) -> None:
    """A first line that says what it does, examples, and no Python type as a metavar
    (`--suite <list[str]>` reads as if a list were expected)."""
    result = invoke(*command, "--help")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "Examples:" in text and f"evalh {' '.join(command)}" in text.split("Examples:")[1]
    options = [line for line in text.split("Options:")[1].splitlines() if line.lstrip().startswith("-")]
    assert not [line for line in options if "list[" in line], options


# ----------------------------------------------------------------------------- runs


def test_runs_names_an_unreadable_run_document_instead_of_hiding_it(project: Path) -> None:
    assert run_project(project, "-q").exit_code == 0
    broken = project / "runs" / "20261129T000000000Z-aaaaaa.json"
    broken.write_text('{"schema": "evalh.run/1"')
    result = invoke("runs", "--runs-dir", str(project / "runs"), "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == 1
    assert broken.name in result.stderr and "not valid JSON" in result.stderr, result.stderr


# ----------------------------------------------------------------------------- the shipped suites


def test_shipped_suites_run_cheapest_first_and_live_is_named_as_skipped(repo_root: Path) -> None:
    """Offline python suites, then deterministic suites on the scripted mock, then the judged
    suites (a target call plus judge and scorer calls per case; parliament's cases generated
    first), then live (needs a key)."""
    result = invoke("run", "--config", str(repo_root / "evalh.toml"), "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    order = [s["name"] for s in json.loads(result.stdout)["suites"]]
    assert order == ["gate", "guards", "panel", "scenarios", "scenarios_model", "parliament", "citations"], order
    assert "skipped suite 'live': needs ANTHROPIC_API_KEY" in result.stderr
