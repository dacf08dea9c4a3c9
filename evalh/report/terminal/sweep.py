"""Terminal rendering of `evalh sweep`: the sweep figure (`evalh.report.figures.sweep`, the
one layout every surface draws), then the recommendation and the verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from evalh.core.analysis.sweep_models import SweepResult


def _params(p: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items())


def render_sweep(result: SweepResult, console: Console, *, top: int = 15) -> None:
    """The ranking as the report draws it (the first `top` rows and the current policy's),
    then the recommendation and the verdict. Every value is shown as plain text."""
    from evalh.console import safe_text
    from evalh.report.blocks import Note, Table
    from evalh.report.figures import sweep
    from evalh.report.render import draw_blocks

    fig = sweep(result.to_dict(), top=top)
    title = f"sweep {result.run_id} · {result.suite}: {fig.title}"
    draw_blocks([Table(columns=fig.columns, rows=fig.rows, title=title),
                 *(Note(n) for n in fig.notes), *(Note(f, warn=True) for f in fig.flags)], console)
    if result.recommended is not None:
        why = " (won on the declared tie-break: fewer under-calls)" if result.won_on == "fewer_under_calls" else ""
        console.print(safe_text(f"recommended: {_params(result.recommended)}{why}", style="bold green"))
    else:
        console.print(safe_text("no recommendation", style="bold yellow"))
    console.print(safe_text(result.verdict))
