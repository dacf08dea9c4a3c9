"""What a run hands out and who watches it: a work item is one (case, arm, attempt) of a
suite, made on demand from a compact code (a million of them cost a few MB, not a list of
objects); an observer hears of a run's start, each suite, each result and its end (the
progress bar is one)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, overload

from evalh.core.run.plan import ArmPlan, RunPlan, SuitePlan
from evalh.models import Case, CaseResult, Run


class Observer(Protocol):
    """What the runner tells the outside world (the CLI draws a progress bar from it)."""

    def on_start(self, plan: RunPlan) -> None: ...
    def on_suite(self, suite: SuitePlan, todo: int) -> None: ...
    def on_result(self, suite: SuitePlan, result: CaseResult) -> None: ...
    def on_finish(self, run: Run) -> None: ...


class NullObserver:
    def on_start(self, plan: RunPlan) -> None: ...
    def on_suite(self, suite: SuitePlan, todo: int) -> None: ...
    def on_result(self, suite: SuitePlan, result: CaseResult) -> None: ...
    def on_finish(self, run: Run) -> None: ...


@dataclass(frozen=True)
class WorkItem:
    case: Case
    arm: ArmPlan
    attempt: int
    position: int | None = None
    """The case's position in the suite's cases (the document's order), when known."""


class WorkItems(Sequence[WorkItem]):
    """A suite's items to run, in run order, as one integer each (the case's position, the
    arm's, the attempt): a `WorkItem` is made when one is taken, so a million items cost
    8 MB, not a model each (`procs` hands them out by index too)."""

    def __init__(self, suite: SuitePlan, codes: array[int]) -> None:
        self._suite = suite
        self._codes = codes
        self._per_case = len(suite.arms) * suite.repeats

    def __len__(self) -> int:
        return len(self._codes)

    def _item(self, code: int) -> WorkItem:
        case, rest = divmod(code, self._per_case)
        arm, attempt = divmod(rest, self._suite.repeats)
        return WorkItem(self._suite.cases[case], self._suite.arms[arm], attempt, case)

    @overload
    def __getitem__(self, i: int) -> WorkItem: ...
    @overload
    def __getitem__(self, i: slice) -> list[WorkItem]: ...
    def __getitem__(self, i: int | slice) -> WorkItem | list[WorkItem]:
        if isinstance(i, slice):
            return [self._item(c) for c in self._codes[i]]
        return self._item(self._codes[i])

    def __iter__(self) -> Iterator[WorkItem]:
        for code in self._codes:
            yield self._item(code)
