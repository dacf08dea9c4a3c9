"""Reports: the numbers a person reads, from one or more run documents.

`build_report(runs, by)` is pure and returns a `Report`; the renderers turn it into a
terminal table (`render_terminal`), markdown (`to_markdown`), JSON (`to_json`) or one
self-contained HTML file (`to_html`). Everything is imported on first use, so building a
report (what the dashboard does) never loads the template engine, and the terminal
renderers of `evalh.report.terminal` (the progress bar of `evalh run`) load no report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalh.report.build import build_report
    from evalh.report.html import to_html
    from evalh.report.models import REPORT_SCHEMA, Report
    from evalh.report.render import render_terminal, to_json, to_markdown

_LAZY = {"build_report": "evalh.report.build", "REPORT_SCHEMA": "evalh.report.models",
         "Report": "evalh.report.models", "to_html": "evalh.report.html", "render_terminal": "evalh.report.render",
         "to_json": "evalh.report.render", "to_markdown": "evalh.report.render"}

__all__ = [
    "REPORT_SCHEMA",
    "Report",
    "build_report",
    "render_terminal",
    "to_html",
    "to_json",
    "to_markdown",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'evalh.report' has no attribute {name!r}")
