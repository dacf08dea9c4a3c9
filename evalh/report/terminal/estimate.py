"""Render a dry-run estimate (`evalh run --dry-run`) as a table (`--json` is
`PlanEstimate.to_dict`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalh.numbers import num

if TYPE_CHECKING:
    from rich.console import Console

    from evalh.core.run.estimate import PlanEstimate, Tally


def _int(value: int | None) -> str:
    return num(value, ",", none="-")


def _cost(t: Tally) -> str:
    if t.cost_usd is None:
        return "unpriced" if t.unpriced else "-"
    return "$" + num(t.cost_usd, ",.4f") + (" + unpriced" if t.unpriced else "")


def _requests(t: Tally) -> str:
    return f"{t.requests:,}" + (" + ?" if t.requests_unknown else "")


def render_estimate(est: PlanEstimate, console: Console) -> None:
    """The plan as a table: one row per suite in run order, then the total and the basis
    of every estimate. `-` = not estimated (a target that is not a model)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(f"dry run: the plan, cheapest suite first (seed {est.seed})"))
    # items: cases x arms x repeats
    for col in ("suite", "items", "requests", "tokens in~", "out<=", "cost~"):
        table.add_column(col, justify="left" if col == "suite" else "right", no_wrap=True)
    for s in est.suites:
        total = s.total
        shape = (f"{s.cases:,}x{len(s.arms)}x1..{s.repeats}<={s.items + s.done:,}" if s.budget else
                 f"{s.cases:,}x{len(s.arms)}x{s.repeats}={s.cases * len(s.arms) * s.repeats:,}")
        if s.done:
            shape += f" ({s.done:,} done)"
        table.add_row(
            Text(s.name), shape, _requests(total), _int(total.tokens_in),
            _int(total.tokens_out_max), _cost(total),
        )
    total = est.total
    items = sum(s.items for s in est.suites)
    table.add_row(
        "total", f"{items:,} to run", _requests(total), _int(total.tokens_in),
        _int(total.tokens_out_max), _cost(total), style="bold",
    )
    console.print(table)
    if total.batch_requests:  # batch = true: the batch price, and what it saves
        saving = "" if total.batch_saving_usd is None else f", saving ${num(total.batch_saving_usd, ',.4f')} against list prices"
        console.print(Text(f"  {total.batch_requests:,} of the requests go through batch APIs at the batch "
                           f"price (50 % of list){saving}"))
    for s in est.suites:
        judges = s.judges
        if judges.requests or judges.requests_unknown:
            console.print(Text(f"  {s.name}: {_requests(judges)} of the requests are judge calls"))
        if s.setup.requests:
            console.print(Text(f"  {s.name}: {_requests(s.setup)} of the requests are judge "
                               "calibration, before the first case"))
        for basis in s.basis:
            console.print(Text(f"  {s.name}: {basis}"))
        if s.detectable is not None:
            from evalh.core.compare.noise import detectable_line

            console.print(Text(f"  {s.name}: {detectable_line(s.detectable)}"))
        if s.until_decided is not None:
            from evalh.core.compare.noise import expected_line

            console.print(Text(f"  {s.name}: {expected_line(s.until_decided)}"))
        if s.budget:
            console.print(Text(f"  {s.name}: in rounds: its row is the whole budget (x1..{s.repeats}: "
                               "attempts a case, more where the baseline varies), the most it can spend"))
    console.print(Text(
        "items: cases x arms x repeats; tokens in: estimated (characters / 4 unless the "
        "target estimates); out: max_tokens, an upper bound; cost: from the price table; "
        "-: not a model, not estimated. Nothing was called or written."
    ))

