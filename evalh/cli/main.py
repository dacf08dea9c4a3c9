"""`evalh`: did this change make the product better, worse, or just noisier?

Run labelled cases against your product, score them, keep every run as a JSON document in
eval_runs/, and compare runs with verdicts CI can gate on. Start with `evalh init` in a new
project, or `evalh run` where an evalh.toml exists.

Exit codes: 0 success; 1 a deterministic case failed, a suite errored past its
max_error_rate, the run is partial (a budget stopped it), or a regression was found; 2 bad
usage or bad input; 3 inconclusive (only with --fail-on-inconclusive); 4 a file could not
be written (disk full, read-only filesystem); 130 interrupted (the run is kept partial).
"""

from __future__ import annotations

from typing import Annotated

import typer

from evalh.cli import (
    baseline_cmd,
    compare_cmd,
    export_cmd,
    generate_cmd,
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

app = typer.Typer(
    name="evalh",
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


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Print evalh's version and the plugins installed, and exit.")] = False,
) -> None:
    pass

app.command("init")(init_cmd.init)
app.command("run")(run_cmd.run)
app.command("merge")(merge_cmd.merge)
app.command("generate")(generate_cmd.generate)
app.command("validate")(validate_cmd.validate)
app.command("runs")(runs_cmd.runs)
app.command("show")(runs_cmd.show)
app.command("sweep")(sweep_cmd.sweep)
app.command("export-requests")(export_cmd.export_requests)
app.add_typer(label_cmd.app, name="label")
app.command("report", cls=report_cmd.ReportCommand)(report_cmd.report)
app.command("ui")(ui_cmd.ui)
app.command("mock-provider")(mock_provider_cmd.mock_provider)
app.command("plugins")(plugins_cmd.plugins)
app.command("rejudge")(rejudge_cmd.rejudge)
app.command("compare")(compare_cmd.compare)
app.add_typer(baseline_cmd.app, name="baseline")
use_evalh_help(app)  # arguments and options read as words in every --help


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
    _adapt_help()
    app()


def entry() -> None:
    """The `evalh` program: `main`, then the process ends without freeing what the command
    loaded (evalh.cli.process_exit). `main` itself raises SystemExit, for callers in Python."""
    from evalh.cli.process_exit import run_and_exit

    run_and_exit(main)


if __name__ == "__main__":  # pragma: no cover
    entry()
