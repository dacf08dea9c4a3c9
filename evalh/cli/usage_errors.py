"""A mistake in the command line is one line: what is wrong, naming the option, and exit 2.

Click (inside typer) prints a usage error as three lines and a blank one — `Usage: …`,
`Try '… -h' for help.`, `Error: …` — which a CI log shows as a wall in which the one line
that matters is last. `EvalhGroup`, the class of evalh's app, catches every usage error
raised while the command line is read (an unknown option or command, a missing option or
argument, a value that is not an int, not one of the choices, out of range) and shows it
as evalh shows every error:

    error: evalh run: Invalid value for '--procs': 'x' is not a valid integer. (evalh run -h)

`evalh` alone, and a group alone (`evalh label`), still print their help.

(Typer carries its own copy of click, `typer._click`: its exceptions are those raised.)
"""

from __future__ import annotations

from typing import IO, Any

from typer._click import exceptions as click_errors
from typer.core import TyperGroup

_UsageError: type[Exception] = click_errors.UsageError
_NoArgsIsHelp: type[Exception] = click_errors.NoArgsIsHelpError


def _command_path(ctx: Any) -> str:
    """`evalh run`, `evalh label import`, whatever the program was started as."""
    names: list[str] = []
    while ctx is not None:
        names.append(ctx.info_name or "" if ctx.parent is not None else "evalh")
        ctx = ctx.parent
    return " ".join(reversed([n for n in names if n]))


class OneLineUsageError(click_errors.UsageError):
    """A usage error shown as one line (`error: COMMAND: what is wrong (COMMAND -h)`)."""

    def __init__(self, error: Any, where: str | None = None) -> None:
        super().__init__(error.format_message(), error.ctx)
        self.exit_code = 2
        self.where = where or (_command_path(error.ctx) if error.ctx is not None else "evalh")

    def show(self, file: IO[Any] | None = None) -> None:
        from evalh.console import error_line

        message = " ".join(str(self.format_message()).split())
        error_line(f"{self.where}: {message} ({self.where} -h)")


def _one_line(exc: Exception, where: str | None = None) -> Exception:
    if isinstance(exc, OneLineUsageError | _NoArgsIsHelp):
        return exc
    return OneLineUsageError(exc, where)


class OneLineUsage:
    """Mixed into a click command: a usage error met while reading its part of the command
    line is a `OneLineUsageError` naming the command (click leaves some, such as an option
    given without its value, without a context to name it by)."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)  # type: ignore[misc]
        except _UsageError as exc:
            where = f"{_command_path(parent)} {info_name}" if parent is not None else "evalh"
            raise _one_line(exc, where) from None


class EvalhGroup(OneLineUsage, TyperGroup):
    """evalh's app: usage errors of the command line, its own and its commands', as one line."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _UsageError as exc:
            raise _one_line(exc) from None
