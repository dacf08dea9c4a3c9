"""Options shared by several commands, defined once as `Annotated` aliases."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="Path to evalh.toml (default: found in . or a parent).",
                 dir_okay=False),
]
RunsDirOpt = Annotated[
    Path | None,
    typer.Option("--runs-dir", help="Where run documents live (default: $EVAL_RUNS_DIR or ./eval_runs).",
                 file_okay=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or tables; errors only.")]
