"""Renderers of a `Report`: terminal (rich), markdown and JSON. HTML is in `html.py`.

Every string from a run is untrusted: the terminal gets it as `rich.text.Text` (never
markup), markdown gets it with markdown and HTML metacharacters escaped.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from evalh.report.blocks import TERMINAL_RAW_ROWS, Heading, Note, Table, figure_blocks, layout
from evalh.report.models import Report

if TYPE_CHECKING:
    from rich.console import Console


def to_json(report: Report) -> str:
    """The `evalh.report/1` document, indented, keys in their stable model order."""
    from evalh.jsonio import document_text

    return document_text(report.to_dict())


# --------------------------------------------------------------------------- markdown

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#!{}])")


def md_escape(text: str) -> str:
    """Untrusted text made inert in markdown: no markup, no raw HTML, no control or
    bidirectional control character (U+FFFD instead, as on the terminal), one line."""
    from evalh.console import inert

    text = inert(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return " ".join(text.split())


def to_markdown(report: Report) -> str:
    """The report as GitHub-flavoured markdown (fit for a CI job summary): the raw runs
    first, before any aggregate, then the summary and each suite's aggregates."""
    lines: list[str] = []
    for block in layout(report, raw_first=True):
        if isinstance(block, Heading):
            lines += ["#" * (block.level + 1) + " " + md_escape(block.text), ""]
        elif isinstance(block, Note):
            prefix = "> **warning:** " if block.warn else ""
            lines += [prefix + md_escape(block.text), ""]
        else:
            if block.title:
                lines += [f"**{md_escape(block.title)}**", ""]
            lines.append("| " + " | ".join(md_escape(c) for c in block.columns) + " |")
            lines.append("|" + "|".join(" --- " if i == 0 else " ---: " for i in range(len(block.columns))) + "|")
            for row in block.rows:
                lines.append("| " + " | ".join(md_escape(c) or " " for c in row) + " |")
            lines.append("")
    return "# evalh report\n\n" + "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- terminal


def render_terminal(
    report: Report, console: Console, *, max_raw: int | None = TERMINAL_RAW_ROWS, raw: bool = True
) -> None:
    """Draw the report on a rich console, every string as `Text` (no markup): the summary
    first, then each suite's raw attempts (folded to one line with `raw=False`) and its
    aggregates."""
    draw_blocks(layout(report, max_raw=max_raw, raw=raw), console)


def terminal_text(report: Report, *, raw: bool = True) -> str:
    """The terminal report as plain text for a file (`--output`): 160 columns, no colour,
    every raw-attempts row."""
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    render_terminal(report, Console(file=buf, width=160, no_color=True, highlight=False), max_raw=None, raw=raw)
    return buf.getvalue()


def render_figures(report: Report, console: Console) -> None:
    """Only the figures the suites hold (verdicts, per-lens classification, judging,
    pairwise consistency) with their notes and flags: what `evalh show` adds under its
    results table, drawn as `evalh report` draws them."""
    draw_blocks(figure_blocks(report), console)


def draw_blocks(blocks: list[Heading | Note | Table], console: Console) -> None:
    from rich.table import Table as RichTable
    from rich.text import Text as RichText

    from evalh.console import inert

    def Text(text: str, style: str = "") -> RichText:  # noqa: N802 - untrusted: no markup, no escapes
        return RichText(inert(text), style=style)

    for block in blocks:
        if isinstance(block, Heading):
            console.print(Text(block.text, style="bold" if block.level > 1 else "bold underline"))
        elif isinstance(block, Note):
            console.print(Text(block.text, style="yellow" if block.warn else "dim"))
        elif isinstance(block, Table):
            table = RichTable(title=Text(block.title) if block.title else None, title_justify="left")
            for i, col in enumerate(block.columns):
                table.add_column(Text(col), justify="left" if i == 0 else "right")
            for row in block.rows:
                table.add_row(*(Text(c) for c in row))
            console.print(table)
