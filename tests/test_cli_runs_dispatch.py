"""`evalh COMMAND ...` runs an app of that one command (evalh.cli.main._app_for): typer
turns every command of an app into a click command before it runs one. That app must read
and print as the whole one does, for every command: help, usage errors, a group's commands."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evalh.cli import main as cli

GROUPS = {"label": ["import", "report", "serve"], "baseline": ["set", "show", "noise"]}


def _same(argv: list[str]) -> None:
    one = cli._app_for(["evalh", *argv])
    assert one is not cli.app
    whole, alone = CliRunner().invoke(cli.app, argv), CliRunner().invoke(one, argv)
    assert (alone.exit_code, alone.stdout, alone.stderr) == (whole.exit_code, whole.stdout, whole.stderr), argv


@pytest.mark.parametrize("name", list(cli._COMMANDS))
def test_one_command_app_reads_as_the_whole_app(name: str) -> None:
    _same([name, "--help"])
    _same([name, "--no-such-option"])
    if name in GROUPS:
        _same([name])  # a group without its command: its help
    for sub in GROUPS.get(name, []):
        _same([name, sub, "--help"])
        _same([name, sub, "--no-such-option"])


def test_the_groups_listed_are_all_there_is() -> None:
    for name, subs in GROUPS.items():
        group = cli._COMMANDS[name][0]
        assert sorted(c.name for c in group.registered_commands) == sorted(subs)
    assert set(cli._COMMANDS) == {c.name for c in cli.app.registered_commands} | {
        g.name for g in cli.app.registered_groups}


@pytest.mark.parametrize("argv", [[], ["--help"], ["--version"], ["rnus"], ["-V", "runs"], ["--show-completion"]])
def test_anything_but_a_command_first_gets_the_whole_app(argv: list[str]) -> None:
    assert cli._app_for(["evalh", *argv]) is cli.app


def test_completion_gets_the_whole_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_EVALH_COMPLETE", "complete_bash")
    assert cli._app_for(["evalh", "runs"]) is cli.app
