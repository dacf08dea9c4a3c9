"""CLI conventions: --version, -h everywhere, shell completion, --json where --format json is."""

from __future__ import annotations

import json
import re
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


def every_command() -> list[list[str]]:
    """The path of every command and group, `evalh` itself first."""
    from typer.main import get_command

    def walk(command: object, path: list[str]) -> list[list[str]]:
        found = [path]
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            found += walk(sub, [*path, name])
        return found

    return walk(get_command(app), [])


TYPE_METAVAR = re.compile(r"<(list\[|str|int|float|bool|file|dir|path|text)[^>]*>|\{[A-Za-z_.]+\}|range>")


def test_every_help_names_what_options_take_in_words() -> None:
    """No Python type as a metavar (`<list[str]>`, `<int range>`, `<file>`), no `{RUN_ID}`
    usage, anywhere in any command's --help; the term column of every option and argument
    is words and choices only."""
    commands = every_command()
    assert len(commands) > 20 and ["label", "serve"] in commands and ["baseline", "noise"] in commands
    for path in commands:
        text = invoke(*path, "--help").stdout
        where = " ".join(["evalh", *path])
        assert text.startswith("Usage: "), where
        assert not TYPE_METAVAR.search(text), (where, TYPE_METAVAR.search(text))
        section = ""
        for line in text.splitlines():
            if re.fullmatch(r"[A-Z][a-z]+:", line):
                section = line
            elif section in ("Arguments:", "Options:") and re.match(r"  (-|[A-Z])", line):
                term = re.split(r"\s{2,}", line.strip())[0]
                assert re.fullmatch(r"[-a-zA-Z0-9_,/ .:=\[\]|.]+", term), (where, term)


QUIET = [["run"], ["merge"], ["generate"], ["validate"], ["rejudge"], ["init"], ["export-requests"],
         ["report"], ["compare"], ["baseline", "set"], ["baseline", "noise"], ["label", "import"]]


@pytest.mark.parametrize("command", QUIET)
def test_quiet_is_on_every_command_that_talks(command: list[str]) -> None:
    """Every command that prints progress or notes on stderr takes -q/--quiet. (runs, show,
    sweep, baseline show, label report and plugins print only data; ui, label serve and
    mock-provider print the one line that says where they listen, which is their result.)"""
    assert "-q, --quiet" in invoke(*command, "--help").stdout, command


def test_quiet_leaves_the_result_and_nothing_on_stderr(project: Path, tmp_path: Path) -> None:
    """-q means one thing: the result stays (stdout, the file written, the exit code),
    progress and notes on stderr go."""
    common = ["--config", str(project / "evalh.toml"), "--runs-dir", str(project / "runs")]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    steps: list[tuple[list[str], int]] = [
        (["init", str(fresh), "-q"], 0),
        (["validate", *common[:2], "-q"], 0),
        (["run", *common, "-q"], 0),
        (["run", *common, "-q"], 0),
    ]
    for args, code in steps:
        result = invoke(*args)
        assert result.exit_code == code and result.stderr == "", (args, result.stderr)
    assert (fresh / "evalh.toml").is_file()
    base, cand = sorted(p.stem for p in (project / "runs").glob("*.json"))
    rubric = tmp_path / "rubric.md"
    rubric.write_text("Is the verdict right?\n")
    for args, made in ((["baseline", "set", base, *common, "-q"], project / "BASELINE"),
                       (["report", cand, *common, "-o", str(tmp_path / "r.md"), "-f", "md", "-q"], tmp_path / "r.md"),
                       (["export-requests", cand, *common, "-o", str(tmp_path / "q.json"), "-r", str(rubric), "-q"],
                        tmp_path / "q.json")):
        result = invoke(*args)
        assert result.exit_code == 0 and result.stderr == "", (args, result.stderr)
        assert made.is_file(), args
    loud = invoke("compare", base, cand, *common, "--format", "json")
    quiet = invoke("compare", base, cand, *common, "--format", "json", "-q")
    assert "evalh compare: " in loud.stderr and quiet.stderr == ""
    assert quiet.exit_code == 0 and json.loads(quiet.stdout)["verdict"] == json.loads(loud.stdout)["verdict"]


def test_shared_options_come_in_one_order() -> None:
    """--config before --runs-dir before --quiet, wherever a command has them (--json sits
    beside --format where there is one)."""
    order = ["-c, --config", "--runs-dir", "-q, --quiet"]
    for path in every_command():
        text = invoke(*path, "--help").stdout
        options = text.split("Options:")[-1]
        found = [o for o in order if f"\n  {o} " in options or f"\n  {o}\n" in options]
        assert sorted(found, key=options.index) == found, (path, found)


# Commands that print no data: messages on stderr only (baseline set, label import), servers
# (ui, label serve, mock-provider), and export-requests, whose data is a JSON document already.
NO_DATA = {("baseline", "set"), ("label", "import"), ("label", "serve"), ("mock-provider",), ("ui",),
           ("export-requests",)}


def test_json_is_on_every_command_that_prints_data() -> None:
    leaves = [c for c in every_command() if c and "Commands" not in invoke(*c, "--help").stdout]
    assert {tuple(c) for c in leaves} >= NO_DATA  # none of them is gone unnoticed
    for command in leaves:
        text = invoke(*command, "--help").stdout
        if tuple(command) in NO_DATA:
            assert "--format" not in text, command
            continue
        assert "--json" in text, f"evalh {' '.join(command)} prints data but has no --json"


def test_baseline_set_prints_no_data(project: Path) -> None:
    config, runs = str(project / "evalh.toml"), str(project / "runs")
    assert invoke("run", "--config", config, "--runs-dir", runs, "-q").exit_code == 0
    (run_id,) = [p.stem for p in (project / "runs").glob("*.json")]
    result = invoke("baseline", "set", run_id, "--config", config, "--runs-dir", runs)
    assert result.exit_code == 0 and result.stdout == "" and run_id in result.stderr
