"""Options shared by several commands, defined once as `Annotated` aliases."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", "-c", metavar="FILE", help="Path to evalh.toml (default: found in . or a parent).",
                 dir_okay=False),
]
RunsDirOpt = Annotated[
    Path | None,
    typer.Option("--runs-dir", metavar="DIR", help="Where run documents live (default: $EVAL_RUNS_DIR or ./eval_runs).",
                 file_okay=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
QuietOpt = Annotated[bool, typer.Option(
    "--quiet", "-q", help="Print only the result and errors: no progress, no notes on stderr (wrote …, next steps).")]
"""`--quiet` means one thing on every command that talks: the result (stdout, the files it
writes, the exit code) and errors stay, progress bars and notes go. Warnings stay too."""
RunQuietOpt = Annotated[bool, typer.Option(
    "--quiet", "-q", help="Print only errors and why the run fails: no progress bar, no results table, no notes "
    "(the run document and the exit code are the result).")]
