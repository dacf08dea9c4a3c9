"""Terminal rendering of `evalh rejudge`: what was judged again, and each judge's drift."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalh.numbers import num

if TYPE_CHECKING:
    from rich.console import Console

    from evalh.core.rejudge.rejudge import RejudgeResult


def render_rejudge(result: RejudgeResult, console: Console) -> None:
    """What was judged again, and the drift of each judge (untrusted text kept as Text)."""
    from evalh.console import safe_text

    console.print(safe_text(f"rejudge of {result.source.run_id} → {result.run.run_id}", style="bold"))
    rejudged = result.run.config.get("rejudge")
    everything = isinstance(rejudged, dict) and bool(rejudged.get("all"))
    for name, s in result.suites.items():
        line = safe_text(f"{name}: {s.rescored} judged again, {s.carried_over} carried over; "
                    f"judge errors {s.judge_error_before} → {s.judge_error_after}")
        if s.note:
            line.append(f" ({s.note})", style="dim")
        console.print(line)
        for scorer, d in s.drift.items():
            _render_drift(console, name, scorer, d.as_dict() if d is not None else {}, everything=everything)


def _render_drift(console: Console, suite: str, scorer: str, d: dict[str, Any], *, everything: bool) -> None:
    from rich.table import Table

    from evalh.console import safe_text

    head = safe_text(f"  {scorer}: judged again {d.get('judged_again', 0)}, newly judged {d.get('newly_judged', 0)}, "
                f"still failing {d.get('still_failed', 0)}")
    console.print(head)
    n = d.get("n", 0)
    if not n:
        # with --all every stored judgment was asked again: none of them was usable
        hint = "" if everything else "; use --all to judge everything again"
        console.print(safe_text(f"  drift: no judgment to compare (the old ones were missing or failed{hint})",
                                style="dim"))
        return
    console.print(safe_text(f"  drift over {n} judgments: agreement {num(d.get('agreement'), none='n/a')}, "
                       f"Cohen's kappa {num(d.get('kappa'), none='n/a')}"))
    confusion: dict[str, dict[str, int]] = d.get("confusion") or {}
    labels = sorted(set(confusion) | {new for row in confusion.values() for new in row})
    console.print(safe_text(f"  {suite} · {scorer}: old verdicts (rows) vs new (columns)"))
    table = Table()
    table.add_column("old \\ new")
    for label in labels:
        table.add_column(safe_text(label), justify="right")
    for old in labels:
        row = confusion.get(old, {})
        table.add_row(safe_text(old), *(safe_text(str(row.get(new, 0))) for new in labels))
    console.print(table)
