"""The one module that talks to the terminal. stdout is data; stderr is talk."""

from __future__ import annotations

import os
import re
import sys
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


def _width(stream: object) -> int | None:
    """Terminals report their width. Piped output (CI logs, files) would otherwise be cut at
    80 columns, which folds every results table; use $COLUMNS, else a log-friendly 160."""
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() else 160


def plain_width(stream: Any = None) -> int | None:
    """The width `out()` lays text out in on `stream` (default stdout) when it would write
    no escape sequence there: not a terminal, and nothing making rich treat it as one
    (`FORCE_COLOR`, `TTY_COMPATIBLE=1`), UTF-8, not Windows nor Jupyter. Plain lines written
    there then read as what `out()` prints, without importing rich. None otherwise."""
    stream = sys.stdout if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    tty_compatible = os.environ.get("TTY_COMPATIBLE", "")
    if (tty_compatible == "1" or (tty_compatible != "0" and os.environ.get("FORCE_COLOR"))
            or (isatty is not None and isatty()) or sys.platform == "win32"
            or not (getattr(stream, "encoding", None) or "").lower().startswith("utf")
            or "ipykernel" in sys.modules):
        return None
    return _width(stream)


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


# C0 controls but tab and newline, DEL, and C1 controls (U+009B is a one-byte CSI); and the
# bidirectional controls (marks U+200E, U+200F, U+061C; embeddings and overrides
# U+202A–U+202E; isolates U+2066–U+2069), which reorder what a reader sees ("Trojan Source").
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def inert(text: str) -> str:
    """Untrusted text made safe for a terminal: every control character but tab and newline,
    and every bidirectional control, becomes U+FFFD. `rich.text.Text` stops markup, not escape sequences: an ESC in a case
    id or a model's output would otherwise colour, hide, relink (OSC 8) or clear what a
    terminal or a CI log shows."""
    return _CONTROL.sub("\ufffd", text)


def safe_text(text: str, style: str = "", **kwargs: Any) -> Text:
    """A `rich.text.Text` of untrusted text: no markup is read and no control sequence
    reaches the terminal. Use it for anything a run, a dataset or a model wrote."""
    from rich.text import Text

    return Text(inert(text), style=style, **kwargs)


def error_line(message: str) -> None:
    """One line on stderr, no markup interpretation (messages may quote user input), no
    secret (a message may quote what a product or provider echoed)."""
    from evalh.redact import scrub_text

    sys.stderr.write(f"error: {inert(scrub_text(message))}\n")
    sys.stderr.flush()


def warn(message: str) -> None:
    from rich.text import Text

    from evalh.redact import scrub_text

    err().print(Text(f"warning: {inert(scrub_text(message))}", style="yellow"))
