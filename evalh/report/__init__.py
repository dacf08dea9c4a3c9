"""Reports: the numbers a person reads, from one or more run documents.

`build_report(runs, by)` is pure and returns a `Report`; the renderers turn it into a
terminal table (`render_terminal`), markdown (`to_markdown`), JSON (`to_json`) or one
self-contained HTML file (`to_html`).
"""

from __future__ import annotations

from evalh.report.build import build_report
from evalh.report.html import to_html
from evalh.report.models import REPORT_SCHEMA, Report
from evalh.report.render import render_terminal, to_json, to_markdown

__all__ = [
    "REPORT_SCHEMA",
    "Report",
    "build_report",
    "render_terminal",
    "to_html",
    "to_json",
    "to_markdown",
]
