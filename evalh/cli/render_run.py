"""Terminal rendering of a run: the results table and the named failures."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from evalh.models import Aggregate, Run


def fmt_rate(num: int, den: int, rate: float | None) -> str:
    return "n/a (0)" if rate is None else f"{rate:.1%} ({num}/{den})"


def fmt_num(value: float | None, spec: str = ".3f", none: str = "–") -> str:
    return none if value is None else format(value, spec)


def _row(name: str, a: Aggregate) -> list[str]:
    return [
        name, str(a.n), str(a.passed), str(a.failed), str(a.errored),
        str(a.judge_error), fmt_rate(a.passed, a.pass_rate_denominator, a.pass_rate),
        fmt_num(a.mean_score), fmt_num(a.latency_ms_p50, ".0f"), fmt_num(a.latency_ms_p95, ".0f"),
        f"{a.tokens_in + a.tokens_out}" if (a.tokens_in or a.tokens_out) else "–",
        "–" if a.cost_usd is None else f"${a.cost_usd:.4f}" + (f" (+{a.cost_unknown} unpriced)" if a.cost_unknown else ""),
    ]


_COLUMNS = ("suite", "n", "passed", "failed", "errored", "judge err", "pass rate",
            "mean score", "p50 ms", "p95 ms", "tokens", "cost")
_OPTIONAL = {"judge err", "tokens", "cost"}


def render_run(run: Run, console: Console, *, max_failures: int = 20) -> None:
    from rich.table import Table
    from rich.text import Text as RichText

    from evalh.console import inert
    from evalh.snapshot import scrub_text, secret_env_values

    def Text(text: str, style: str = "") -> RichText:  # noqa: N802 - untrusted: no markup, no escapes
        return RichText(inert(text), style=style)

    # the run in memory is not scrubbed (only its document is): errors and rationales may
    # quote a key the product echoed, and CI keeps this output as a log
    secrets = secret_env_values()
    title = Text(f"run {run.run_id}" + (f" · {run.label}" if run.label else ""))
    table = Table(title=title, title_justify="left")
    rows = []
    for name, suite in run.suites.items():
        rows.append(_row(f"{name} ({suite.regime})", suite.aggregate))
        if len(suite.arms) > 1:
            rows.extend(_row(f"  arm {arm}", agg) for arm, agg in suite.arms.items())
    # Columns that say nothing in this run (no judges, no tokens) are left out.
    keep = [i for i, col in enumerate(_COLUMNS)
            if col not in _OPTIONAL or any(r[i] not in ("0", "–") for r in rows)]
    for i in keep:
        table.add_column(_COLUMNS[i], justify="left" if i == 0 else "right")
    for r in rows:
        table.add_row(*(Text(r[i]) for i in keep))
    console.print(table)
    for name, suite in run.suites.items():
        bad = [r for r in suite.cases if r.status in ("failed", "errored", "judge_error")]
        if not bad:
            continue
        console.print(Text(f"{name}: {len(bad)} not passed", style="bold red"))
        for r in bad[:max_failures]:
            why = r.error.message if r.error else "; ".join(
                s.rationale or "" for s in r.scores if s.passed is not True
            )
            arm = f" [{r.arm}]" if r.arm != "default" else ""
            att = f" #{r.attempt}" if r.attempt else ""
            line = Text(scrub_text(f"  {r.status:<11} {r.case_id}{arm}{att}  ", env=secrets))
            line.append(inert(scrub_text(why, env=secrets)[:160]), style="dim")
            console.print(line)
        if len(bad) > max_failures:
            console.print(Text(f"  … and {len(bad) - max_failures} more (evalh show {run.run_id})", style="dim"))
    if run.status != "complete":
        console.print(Text(scrub_text(f"run is {run.status}: {run.status_reason}", env=secrets),
                           style="yellow"))
