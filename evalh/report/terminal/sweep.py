"""Terminal rendering of `evalh sweep`: the ranking table, then the verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalh.numbers import num

if TYPE_CHECKING:
    from rich.console import Console

    from evalh.core.sweep_models import SweepResult


def _params(p: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items())


def render_sweep(result: SweepResult, console: Console, *, top: int = 15) -> None:
    """The ranking table, then the verdict. Every value is shown as plain text."""
    from rich import box
    from rich.table import Table

    from evalh.console import safe_text

    o = result.observations
    title = safe_text(
        f"sweep {result.run_id} · {result.suite} [{result.arm}] · measure {result.measure}"
        f" · label {result.label or '(expected)'} · score = {result.objective}"
        f" · under/over = decisions milder/harsher than the label"
    )
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    miss = result.errored == "miss"
    for col in ("rank", *result.params, "score", "right", "under", "over", *(["errored"] if miss else []), ""):
        table.add_column(col, justify="left" if col == "" else "right", no_wrap=True)
    for row in result.candidates[:top]:
        marks = []
        if result.recommended == row.params:
            marks.append("recommended")
        elif row.rank == 1 and result.tied_top:
            marks.append("tied top")
        if row.current:
            marks.append("current")
        cells = [str(row.rank), *(str(v) for v in row.params.values()), num(row.objective),
                 f"{row.correct}/{row.n}", str(row.under_calls), str(row.over_calls),
                 *([str(row.errored)] if miss else []), " · ".join(marks)]
        table.add_row(*(safe_text(c) for c in cells))
    console.print(table)
    shown = min(top, len(result.candidates))
    lo = result.left_out
    console.print(safe_text(
        f"{shown} of {len(result.candidates)} candidates shown; scored on {o.scored} of "
        f"{o.total} results ({o.undecided} without a measure, {o.errored} with an errored input "
        f"{'counted as a miss for every candidate' if miss else 'excluded'}, {o.unlabelled} unlabelled); "
        f"left out: {lo.above_observed} with a threshold above the greatest observed value "
        f"{lo.max_observed}, {lo.not_decreasing} with tiers not strictly decreasing",
        style="dim",
    ))
    if result.recommended is not None:
        why = " (won on the declared tie-break: fewer under-calls)" if result.won_on == "fewer_under_calls" else ""
        console.print(safe_text(f"recommended: {_params(result.recommended)}{why}", style="bold green"))
    else:
        console.print(safe_text("no recommendation", style="bold yellow"))
    console.print(safe_text(result.verdict))
