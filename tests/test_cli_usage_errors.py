"""A mistake in the command line is one line on stderr naming the option (or argument, or
command) and what is wrong with it, and exit 2 — not click's `Usage:` / `Try …` / `Error:`
block (issue 27, item 11). Through the CLI, across commands and kinds of mistake."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app

MISTAKES = [
    (["run", "--bogus"], "evalh run: No such option: --bogus"),
    (["run", "--procs", "x"], "evalh run: Invalid value for '--procs'"),
    (["run", "--repeats", "0"], "evalh run: Invalid value for '--repeats'"),
    (["run", "--max-error-rate"], "evalh run: Option '--max-error-rate' requires an argument"),
    (["generate", "-o", "x.jsonl"], "evalh generate: Missing option '--suite'"),
    (["show"], "evalh show: Missing argument 'RUN_ID'"),
    (["compare", "a", "b", "--format", "yaml"], "evalh compare: Invalid value for '--format'"),
    (["compare", "--alpha", "0.1"], "evalh compare: No such option: --alpha"),
    (["runs", "--limit", "many"], "evalh runs: Invalid value for '--limit'"),
    (["rnu"], "evalh: No such command 'rnu'"),
    (["label", "import"], "evalh label import: Missing argument 'FILE'"),
    (["ui", "--port", "seventy"], "evalh ui: Invalid value for '--port'"),
    (["mock-provider", "--latency-ms"], "evalh mock-provider: Option '--latency-ms' requires an argument"),
    (["--bogus"], "evalh: No such option: --bogus"),
    (["sweep", "r1", "--extra", "1"], "evalh sweep: No such option: --extra"),
]


@pytest.mark.parametrize(("argv", "expected"), MISTAKES, ids=[" ".join(m[0]) for m in MISTAKES])
def test_a_command_line_mistake_is_one_line_naming_the_option_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: {expected}"), lines
    assert "Usage:" not in result.output and "Try '" not in result.output
    assert result.stdout == ""


def test_the_installed_program_names_itself_evalh_and_keeps_help_without_arguments(tmp_path: Path) -> None:
    """As a process (whatever the program was started as, the line says `evalh`); `evalh`
    and `evalh label` alone still print their help."""
    run = subprocess.run([sys.executable, "-m", "evalh.cli.main", "run", "--procs", "x"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: evalh run: Invalid value for '--procs': "), lines
    assert lines[0].endswith(" (evalh run -h)"), lines
    for argv in ([], ["label"]):
        result = CliRunner().invoke(app, argv)
        assert "Usage:" in result.output, argv


@pytest.mark.parametrize(("script", "says"), [
    ('{"rules": [{"reply": "x"}]}', "rules.0.reply: Extra inputs are not permitted"),
    ('{"rules": 5}', "rules:"),
])
def test_a_bad_mock_script_is_one_line_naming_the_field(tmp_path: Path, script: str, says: str) -> None:
    """`evalh mock-provider --script` (and a `mock:` base_url) with a script of the wrong
    shape printed pydantic's four-line report; bad input is one line naming the file and
    the field, exit 2."""
    bad = tmp_path / "bad.script.json"
    bad.write_text(script)
    result = CliRunner().invoke(app, ["mock-provider", "--port", "0", "--script", str(bad)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and says in lines[0], lines
