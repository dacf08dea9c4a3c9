"""Terminal rendering of `evalh runs`: one line per run, newest last."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalh.numbers import num

if TYPE_CHECKING:
    from rich.console import Console

    from evalh.run_header import RunListing


def render_runs(rows: list[RunListing], title: str, console: Console) -> None:
    """The listing: id (BASELINE marked), label, status, git sha, per-suite pass rates, or
    the command that resumes an interrupted run."""
    from rich.table import Table

    from evalh.console import safe_text

    table = Table(title=safe_text(title), title_justify="left")
    for col in ("run id", "label", "status", "git", "suites (pass rate)"):
        table.add_column(col)
    for row in rows:
        sha = (row.git_sha or "–")[:8] + ("*" if row.dirty else "")
        rates = "  ".join(f"{n} {num(v, '.0%', none='n/a')}" for n, v in row.suites.items())
        if row.resume:
            rates = f"resume with: {row.resume}"
        elif row.status == "running" and not row.suites:
            rates = "(in flight)"
        rid = row.run_id + (" (BASELINE)" if row.baseline else "")
        table.add_row(safe_text(rid), safe_text(row.label or ""), safe_text(row.status), safe_text(sha), safe_text(rates))
    console.print(table)
