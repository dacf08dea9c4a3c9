"""One translation of domain errors at the edge: a line on stderr and the documented code."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import typer

F = TypeVar("F", bound=Callable[..., Any])


def translate_errors(fn: F) -> F:
    """Run a command; turn EvalhError into one stderr line and its exit code (2 by default).

    `EVALH_DEBUG=1` re-raises with the traceback instead. Tracebacks never show locals.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from evalh.console import error_line
        from evalh.errors import EvalhError

        try:
            return fn(*args, **kwargs)
        except EvalhError as exc:
            if os.environ.get("EVALH_DEBUG"):
                raise
            error_line(exc.message)
            raise typer.Exit(code=exc.exit_code) from None
        except KeyboardInterrupt:
            error_line("interrupted")
            raise typer.Exit(code=130) from None

    return wrapper  # type: ignore[return-value]
