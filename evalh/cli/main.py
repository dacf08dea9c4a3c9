"""`evalh`: did this change make the product better, worse, or just noisier?

Run labelled cases against your product, score them, keep every run as a JSON document in
eval_runs/, and compare runs with verdicts CI can gate on. Start with `evalh init` in a new
project, or `evalh run` where an evalh.toml exists.

Exit codes: 0 success; 1 a deterministic case failed, a suite errored past its
max_error_rate, the run is partial (a budget stopped it) or skipped a suite for its key, a
regression was found, or nothing (or less than the baseline) was measured; 2 bad usage or
bad input, or evalh ended before its verdict; 3 inconclusive (only with --fail-on-inconclusive); 4 a file could not
be written (disk full, read-only filesystem); 130 interrupted (the run is kept partial).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

import typer

from evalh.cli import (
    baseline_cmd,
    ci_cmd,
    compare_cmd,
    export_cmd,
    generate_cmd,
    import_cmd,
    init_cmd,
    label_cmd,
    merge_cmd,
    mock_provider_cmd,
    plugins_cmd,
    rejudge_cmd,
    report_cmd,
    run_cmd,
    runs_cmd,
    sweep_cmd,
    ui_cmd,
    validate_cmd,
)
from evalh.cli.help_format import use_evalh_help
from evalh.cli.usage_errors import EvalhGroup

_SETTINGS: dict[str, Any] = dict(
    name="evalh",
    cls=EvalhGroup,  # a mistake in the command line is one line, exit 2
    help=__doc__,
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command
)


def _version(value: bool) -> None:
    if not value:
        return
    import platform

    from evalh import __version__, registry

    lines = [f"evalh {__version__} (Python {platform.python_version()})"]
    for p in registry.load_plugins():
        dist = f"{p.distribution} {p.version}" if p.version else (p.distribution or "?")
        lines.append(f"plugin {p.kind} {p.name}: {p.module} ({dist}){'' if p.status == 'loaded' else ' ' + p.status}")
    typer.echo("\n".join(lines))
    raise typer.Exit()


def _root(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Print evalh's version and the plugins installed, and exit.")] = False,
) -> None:
    pass


_COMMANDS: dict[str, tuple[Any, dict[str, Any]]] = {  # in the order `evalh --help` lists them
    "init": (init_cmd.init, {}),
    "run": (run_cmd.run, {}),
    "merge": (merge_cmd.merge, {}),
    "generate": (generate_cmd.generate, {}),
    "validate": (validate_cmd.validate, {}),
    "runs": (runs_cmd.runs, {}),
    "show": (runs_cmd.show, {}),
    "sweep": (sweep_cmd.sweep, {}),
    "export-requests": (export_cmd.export_requests, {}),
    "label": (label_cmd.app, {}),
    "report": (report_cmd.report, {"cls": report_cmd.ReportCommand}),
    "ui": (ui_cmd.ui, {}),
    "mock-provider": (mock_provider_cmd.mock_provider, {}),
    "plugins": (plugins_cmd.plugins, {}),
    "rejudge": (rejudge_cmd.rejudge, {}),
    "import": (import_cmd.import_, {}),
    "compare": (compare_cmd.compare, {}),
    "baseline": (baseline_cmd.app, {}),
    "ci": (ci_cmd.app, {}),
}


def _make_app(names: Iterable[str] = _COMMANDS) -> typer.Typer:
    """The evalh app with the commands `names` (all of them: `app`)."""
    made = typer.Typer(**_SETTINGS)
    made.callback()(_root)
    for name in names:
        command, kwargs = _COMMANDS[name]
        if isinstance(command, typer.Typer):
            made.add_typer(command, name=name)
        else:
            made.command(name, **kwargs)(command)
    use_evalh_help(made)  # arguments and options read as words in every --help
    return made


app = _make_app()


def _app_for(argv: list[str]) -> typer.Typer:
    """The app `main` runs for `argv`: `evalh COMMAND ...` gets an app of that one command,
    which reads and prints the same (typer turns every command of an app into a click
    command before it runs one: ~60 ms of `evalh runs`' 0.4 s CPU for the other sixteen).
    Anything else — `evalh --help`, an option before the command, a misspelt command (its
    suggestions), shell completion — gets the whole app."""
    import os

    if len(argv) > 1 and argv[1] in _COMMANDS and not any(k.startswith("_EVALH_COMPLETE") for k in os.environ):
        return _make_app([argv[1]])
    return app


START_HINT = ("Start with `evalh init` in a new\nproject, or `evalh run` where an evalh.toml exists.")


def _adapt_help() -> None:
    """The first hint of `evalh --help` says what to do here: `evalh init` where no
    evalh.toml is found, `evalh run` where one is."""
    from evalh.scaffold import has_config

    hint = ("Run `evalh run` (evalh.toml found), or `evalh\nvalidate` to check it first."
            if has_config() else "No evalh.toml here: start with `evalh\ninit`, then `evalh run`.")
    if app.info.help:
        app.info.help = app.info.help.replace(START_HINT, hint)


def main() -> None:
    import sys

    chosen = _app_for(sys.argv)
    if chosen is app:  # the only one with the top-level help
        _adapt_help()
    if sys.argv[1:2] != ["run"]:  # `evalh run` ends the program's start when its run starts
        from evalh.gcpause import end_startup

        end_startup()
    chosen()


def entry() -> None:
    """The `evalh` program: `main`, then the process ends without freeing what the command
    loaded (evalh.cli.process_exit). `main` itself raises SystemExit, for callers in Python."""
    import sys

    from evalh.gcpause import pause_for_startup

    pause_for_startup()  # until the command's work starts (evalh.gcpause)
    from evalh.cli.process_exit import run_and_exit

    if _needs_guard(sys.argv):
        from evalh.cli.verdict_guard import guard

        guard()  # the command runs in a child; this process exits with its verdict
    run_and_exit(main)


def _needs_guard(argv: list[str]) -> bool:
    """Whether the command may run code that is not evalh's (a command, not `--help`,
    `--version` or shell completion): it then runs under `evalh.cli.verdict_guard`."""
    import os

    args = argv[1:]
    if not args or any(k.startswith("_EVALH_COMPLETE") for k in os.environ):
        return False
    return not any(a in ("-h", "--help", "-V", "--version") for a in args)


if __name__ == "__main__":  # pragma: no cover
    entry()
