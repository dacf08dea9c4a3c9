"""The one module that talks to the terminal. stdout is data; stderr is talk."""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def _width(stream: object) -> int | None:
    """Terminals report their width. Piped output (CI logs, files) would otherwise be cut at
    80 columns, which folds every results table; use $COLUMNS, else a log-friendly 160."""
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() else 160


@lru_cache(maxsize=1)
def err() -> Console:
    """Progress, warnings and errors."""
    from rich.console import Console

    return Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")) or None,
                   highlight=False, width=_width(sys.stderr))


@lru_cache(maxsize=1)
def out() -> Console:
    """Reports and tables meant to be read or piped."""
    from rich.console import Console

    return Console(no_color=bool(os.environ.get("NO_COLOR")) or None, highlight=False,
                   soft_wrap=False, width=_width(sys.stdout))


def error_line(message: str) -> None:
    """One line on stderr, no markup interpretation (messages may quote user input)."""
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()


def warn(message: str) -> None:
    from rich.text import Text

    err().print(Text(f"warning: {message}", style="yellow"))
