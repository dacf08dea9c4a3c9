"""Terminal rendering of a run: the results table and the named failures."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalh.numbers import money, num, rate

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from evalh.models import Aggregate, Run


def _row(name: str, regime: str, a: Aggregate) -> list[str]:
    return [
        name, regime, str(a.n), str(a.passed), str(a.failed), str(a.errored),
        str(a.judge_error), rate(a.pass_rate, a.passed, a.pass_rate_denominator, none="n/a (0)"),
        num(a.mean_score), num(a.latency_ms_p50, ".0f"), num(a.latency_ms_p95, ".0f"),
        f"{a.tokens_in + a.tokens_out}" if (a.tokens_in or a.tokens_out) else "–",
        money(a.cost_usd, none="–") + (f" (+{a.cost_unknown} unpriced)" if a.cost_usd is not None and a.cost_unknown else "")
        + (f" ({a.cached} cached)" if a.cached else ""),
    ]


_COLUMNS = ("suite", "regime", "n", "passed", "failed", "errored", "judge err", "pass rate",
            "mean score", "p50 ms", "p95 ms", "tokens", "cost")
_OPTIONAL = {"judge err", "tokens", "cost"}
# What gives way, in this order, when the table would not fit the terminal: a value is never
# cut ("100.0% (5…" is worse than no column), and counts, rates and cost always stay.
_SHRINK = ("p95 ms", "tokens", "short headers", "p50 ms", "mean score")
_HEADERS = {"mean score": "mean\nscore", "judge err": "judge\nerr"}
_SHORT = {"passed": "pass", "failed": "fail", "errored": "err", "judge err": "j.err",
          "mean score": "mean", "p50 ms": "p50", "p95 ms": "p95", "tokens": "tok"}
_SHORT_REGIME = {"deterministic": "det.", "stochastic": "stoch."}


def _table(title: str, rows: list[list[str]], keep: list[int], short: bool) -> Table:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from evalh.console import inert

    # suite and arm names and the label are user text: no markup, no escape sequences
    table = Table(title=Text(inert(title)), title_justify="left", box=box.SIMPLE_HEAD,
                  show_edge=False, collapse_padding=True)
    for i in keep:
        col = _COLUMNS[i]
        header = _SHORT.get(col, col) if short else _HEADERS.get(col, col)
        table.add_column(header, justify="left" if i < 2 else "right", no_wrap=True)
    for r in rows:
        cells = [_SHORT_REGIME.get(r[i], r[i]) if short and i == 1 else r[i] for i in keep]
        table.add_row(*(Text(inert(c)) for c in cells))
    return table


def results_table(run: Run, console: Console) -> Table:
    """The per-suite (and per-arm) results table, with the columns that fit `console`:
    columns that say nothing in this run (no judges, no tokens) are left out; on a narrow
    terminal, headers get shorter and latency, token and mean-score columns go (named in a
    caption), rather than cutting values."""
    from rich.text import Text

    title = f"run {run.run_id}" + (f" · {run.label}" if run.label else "")
    rows = []
    for name, suite in run.suites.items():
        rows.append(_row(name, suite.regime, suite.aggregate))
        if len(suite.arms) > 1:
            rows.extend(_row(f"  arm {arm}", "", agg) for arm, agg in suite.arms.items())
    keep = [i for i, col in enumerate(_COLUMNS)
            if col not in _OPTIONAL or any(r[i] not in ("0", "–") for r in rows)]
    short = False
    table = _table(title, rows, keep, short)
    natural = console.options.update(width=10_000, max_width=10_000)  # measure without the cap
    dropped = []
    for step in _SHRINK:
        if console.measure(table, options=natural).maximum <= console.width:
            break
        if step == "short headers":
            short = True
        elif _COLUMNS.index(step) in keep:
            keep.remove(_COLUMNS.index(step))
            dropped.append(step)
        table = _table(title, rows, keep, short)
    if dropped:
        table.caption = Text(f"not shown at {console.width} columns: {', '.join(dropped)}")
        table.caption_justify = "left"
    return table


def bill_line(run: Run) -> str | None:
    """The run's bill line (`evalh.core.results.bill.bill_text`): the table's cost column
    is the target's; judges and generators are paid too (and the budget counts them)."""
    from evalh.core.results.bill import bill_text, run_bill, total_bill

    return bill_text(total_bill(run_bill(run).values()))


def render_run(run: Run, console: Console, *, max_failures: int = 20,
               not_passed: dict[str, int] | None = None) -> None:
    """The results table, then per suite the results in `run` that did not pass (at most
    `max_failures`) and how many there are: from the suite's aggregate, or `not_passed`
    (suite → count) when the caller counted them as it read the results."""
    from rich.text import Text as RichText

    from evalh.console import inert
    from evalh.redact import scrub_text, secret_env_values

    def Text(text: str, style: str = "") -> RichText:  # noqa: N802 - untrusted: no markup, no escapes
        return RichText(inert(text), style=style)

    # the run in memory is not scrubbed (only its document is): errors and rationales may
    # quote a key the product echoed, and CI keeps this output as a log
    secrets = secret_env_values()
    console.print(results_table(run, console))
    paid = bill_line(run)
    if paid:
        console.print(Text(paid, style="dim"))
    for name, suite in run.suites.items():
        # the count from the aggregate: `evalh run` hands a run holding only the first
        # `max_failures` results that did not pass (evalh.core.run.retained.not_passed)
        a = suite.aggregate
        bad = [r for r in suite.cases if r.status in ("failed", "errored", "judge_error")]
        count = max(a.failed + a.errored + a.judge_error, len(bad), (not_passed or {}).get(name, 0))
        if not count:
            continue
        console.print(Text(f"{name}: {count} not passed", style="bold red"))
        for r in bad[:max_failures]:
            why = r.error.message if r.error else "; ".join(
                s.rationale or "" for s in r.scores if s.passed is not True
            )
            arm = f" [{r.arm}]" if r.arm != "default" else ""
            att = f" #{r.attempt}" if r.attempt else ""
            line = Text(scrub_text(f"  {r.status:<11} {r.case_id}{arm}{att}  ", env=secrets))
            why = scrub_text(why, env=secrets)
            line.append(inert(why if len(why) <= 160 else why[:159] + "…"), style="dim")  # reads as cut
            console.print(line)
        if count > max_failures:
            console.print(Text(f"  … and {count - max_failures} more (evalh show {run.run_id})", style="dim"))
    if run.status != "complete":
        console.print(Text(scrub_text(f"run is {run.status}: {run.status_reason}", env=secrets),
                           style="yellow"))
