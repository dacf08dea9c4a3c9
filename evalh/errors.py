"""Domain errors. The core raises these with text a user can act on; the CLI prints one
line to stderr and exits with the error's code (2 for bad input, unless stated)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError


class EvalhError(Exception):
    """Base of every error evalh reports to a user. `exit_code` is what the CLI returns."""

    exit_code: int = 2

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.__class__.__name__


class ConfigError(EvalhError):
    """evalh.toml is missing, malformed, or names something that does not exist."""


class DatasetError(EvalhError):
    """A dataset line is malformed, a case id is duplicated, a group crosses splits."""


class RunNotFound(EvalhError):
    """No run document with that id or path."""


class InvalidRunId(EvalhError):
    """A run id that could escape the runs directory or is not of evalh's form."""


class RunDocumentError(EvalhError):
    """A run document that cannot be read or does not validate."""


class WriteFailed(EvalhError, OSError):
    """A file could not be written: the disk is full, the filesystem read-only, a quota or a
    permission refused it (exit 4; a bad path, such as a directory that is a file, is bad
    input: exit 2). Also an OSError, so code that tolerates a failed write (the response
    cache) keeps doing so."""

    exit_code = 4


class RunInUse(EvalhError):
    """Another live evalh process holds the run (it is running or resuming it)."""


class MissingCredentials(EvalhError):
    """A live suite was asked to run without the key it needs."""


class TargetError(Exception):
    """Raised by a target when the system under test failed in a way worth naming
    (bad reply, upstream failure). The runner records it as an `errored` result."""


class BudgetExceeded(Exception):
    """Raised inside the runner when a cost or token budget is reached."""


def first_validation_error(exc: ValidationError, prefix: tuple[Any, ...] = ()) -> tuple[str, str]:
    """(dotted location, message) of a pydantic error's first problem, for the one line a
    user reads. Empty location parts are dropped; `prefix` names where the value came from."""
    err = exc.errors()[0]
    return ".".join(str(p) for p in (*prefix, *err["loc"]) if p != ""), err["msg"]
