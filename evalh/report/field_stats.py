"""`evalh report --stat`: the tables of `evalh.core.analysis.field_stats`, as report blocks (drawn on
the terminal by the report's own renderer) and as markdown."""

from __future__ import annotations

from collections.abc import Sequence

from evalh.core.analysis.field_stats import FieldStats
from evalh.report.blocks import Block, Heading, Table, num


def _n(v: float | None) -> str:
    if v is None:
        return "n/a"
    return str(int(v)) if float(v).is_integer() else num(v, ".4g")


def stat_blocks(stats: Sequence[FieldStats], *, several_runs: bool) -> list[Block]:
    blocks: list[Block] = []
    for s in stats:
        where = f"{s.suite}" + (f" / arm {s.arm}" if s.arm else "") + (f" (run {s.run_id})" if several_runs else "")
        blocks.append(Heading(f"{s.path} — {where}", level=2))
        table = Table(columns=["group", "results", "count", "missing", "mean", "min", "max", "p50", "p95"])
        for r in s.rows:
            label = "all" if r.group is None else f"{r.group} = {r.value}"
            table.rows.append([label, str(r.results), str(r.count), str(r.missing), _n(r.mean), _n(r.min),
                               _n(r.max), _n(r.p50), _n(r.p95)])
        blocks.append(table)
    return blocks


def stat_markdown(stats: Sequence[FieldStats], *, several_runs: bool) -> str:
    from evalh.report.render import md_escape

    lines: list[str] = []
    for block in stat_blocks(stats, several_runs=several_runs):
        if isinstance(block, Heading):
            lines += ["#" * (block.level + 1) + " " + md_escape(block.text), ""]
        elif isinstance(block, Table):
            lines.append("| " + " | ".join(md_escape(c) for c in block.columns) + " |")
            lines.append("|" + "|".join(" --- " if i == 0 else " ---: " for i in range(len(block.columns))) + "|")
            lines += ["| " + " | ".join(md_escape(c) or " " for c in row) + " |" for row in block.rows]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def stat_text(stats: Sequence[FieldStats], *, several_runs: bool) -> str:
    """The tables as plain text for a file (`--output`), as `terminal_text` draws the report."""
    from io import StringIO

    from rich.console import Console

    from evalh.report.render import draw_blocks

    buf = StringIO()
    draw_blocks(stat_blocks(stats, several_runs=several_runs), Console(file=buf, width=160, no_color=True, highlight=False))
    return buf.getvalue()
