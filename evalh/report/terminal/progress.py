"""A rich progress bar fed by the runner's observer hooks (stderr, respects --quiet)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalh.numbers import money

if TYPE_CHECKING:
    from evalh.core.run.plan import RunPlan, SuitePlan
    from evalh.models import CaseResult, Run


class ProgressObserver:
    """done/total, errored, tokens and cost so far, ETA — one bar per suite, each counting
    only its own suite (the results table below it shows the same per-suite numbers)."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._progress: Any = None
        self._task: Any = None
        self.errored = 0
        self.tokens = 0
        self.cost: float | None = None
        """Known cost so far; None while no result had one."""
        self.cost_unknown = 0
        """Results with tokens but no price: their cost is unknown, never $0."""

    def on_start(self, plan: RunPlan) -> None:
        if not self.enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from evalh.console import err

        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("errored {task.fields[errored]}"),
            TextColumn("tokens {task.fields[tokens]}"),
            TextColumn("{task.fields[cost]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=err(),
            transient=False,
        )
        self._progress.start()

    def on_suite(self, suite: SuitePlan, todo: int) -> None:
        self.errored, self.tokens, self.cost, self.cost_unknown = 0, 0, None, 0
        if self._progress is None:
            return
        from rich.markup import escape

        from evalh.console import inert

        # the description is formatted into markup ("[bold]{task.description}"): escape it
        self._task = self._progress.add_task(
            escape(inert(suite.name)), total=todo, errored=0, tokens=0, cost=self.cost_text()
        )

    def cost_text(self) -> str:
        """What the results so far cost, their judges' calls included: `$0.0123`; with unpriced results `$0.0123 + cost unknown (N)`, or `cost unknown (N)`
        when no result had a price: an unknown cost is not $0 (as in the results table)."""
        known = money(self.cost, none="")
        if not self.cost_unknown:
            return known or "$0.0000"
        unknown = f"cost unknown ({self.cost_unknown})"
        return f"{known} + {unknown}" if known else unknown

    def on_result(self, suite: SuitePlan, result: CaseResult) -> None:
        if result.status == "errored":
            self.errored += 1
        self.tokens += (result.tokens_in or 0) + (result.tokens_out or 0)
        if result.cost_usd is not None:
            self.cost = (self.cost or 0.0) + result.cost_usd
        elif not result.cached and (result.tokens_in is not None or result.tokens_out is not None):
            self.cost_unknown += 1  # counted as evalh.core.results.aggregate counts cost_unknown
        for score in result.scores:  # the judges' calls on this result: billed too (evalh.core.results.bill)
            u = score.details.get("usage") if isinstance(score.details, dict) else None
            if isinstance(u, dict) and u.get("calls"):
                self.tokens += int(u.get("tokens_in") or 0) + int(u.get("tokens_out") or 0)
                if isinstance(u.get("cost_usd"), int | float):
                    self.cost = (self.cost or 0.0) + float(u["cost_usd"])
                elif int(u.get("calls") or 0) > int(u.get("cached") or 0):
                    self.cost_unknown += 1
        if self._progress is not None and self._task is not None:
            self._progress.update(
                self._task, advance=1, errored=self.errored, tokens=self.tokens, cost=self.cost_text()
            )

    def on_finish(self, run: Run) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
