"""Report formats installed plugins add (`evalh report --format NAME`).

A plugin's module, named by an `evalh.report_formats` entry point, is a
`ReportFormatModule`: a `SUFFIX` for the files it writes and `render(runs) -> str`. The
built-in formats (table, md, json, html) are `evalh report`'s own; a plugin cannot take
their names (`evalh.registry`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from evalh.registry import BUILTIN_REPORT_FORMATS  # a plugin cannot take these names

if TYPE_CHECKING:
    from evalh.models import Run

BUILTIN = BUILTIN_REPORT_FORMATS
"""`evalh report`'s own formats (`markdown` is `md`, as `evalh compare` spells it)."""


class ReportFormatModule(Protocol):
    """What a report format plugin's module defines (docs/plugins.md)."""

    SUFFIX: str
    """The file suffix of what it renders, say `".csv"`."""

    def render(self, runs: list[Run]) -> str:
        """The report of `runs` (the runs `evalh report` was given, in that order)."""
        ...


def known_formats() -> list[str]:
    """The built-in formats, then those of installed plugins (reading the entry points
    imports no plugin)."""
    from evalh import registry

    return [*BUILTIN, *sorted(registry.report_formats())]


def check_format(name: str) -> bool:
    """True for a plugin's format, False for a built-in; `EvalhError` (one line, the
    known formats) for a name neither has."""
    from evalh.errors import EvalhError

    known = known_formats()
    if name not in known:
        raise EvalhError(f"--format: unknown report format {name!r} (known: {', '.join(known)})")
    return name not in BUILTIN


def render_plugin(name: str, runs: list[Run]) -> str:
    """The text the plugin format `name` renders for `runs`; `EvalhError` naming the format
    and its module when it cannot be imported, defines no `render`, fails, or returns
    anything but text."""
    from evalh import registry
    from evalh.errors import EvalhError
    from evalh.imports import ImportFailure

    where = f"report format {name} ({registry.report_formats()[name]})"
    try:
        module = registry.report_format_module(name)
    except ImportFailure as exc:
        raise EvalhError(f"{where}: {exc}") from None
    render = getattr(module, "render", None)
    if not callable(render):
        raise EvalhError(f"{where}: the module defines no render(runs)")
    try:
        text = render(runs)
    except Exception as exc:  # a plugin's bug: one line naming it, never a traceback
        raise EvalhError(f"{where}: render failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(text, str):
        raise EvalhError(f"{where}: render returned {type(text).__name__}, not text")
    return text
