"""What the runner keeps of each result once it is journaled: compact numbers, not models.

A result's model costs a few KB in memory (its input, expected value, output, scores and
pydantic's bookkeeping); a million of them do not fit a CI runner. The journal already
holds every result, one line each, as it finished (`evalh.journal.Journal`). So per suite the
runner keeps, per result, only

- where its line is in the journal (byte offset and length), and its sort key in the run
  document (the case's position in the dataset, the arm, the attempt);
- what `evalh.core.results.aggregate` reads (`aggregate.Facts`: status, score, tokens, cached,
  latency, cost) in typed arrays;

about 90 bytes a result. The aggregates are computed from those arrays, in document order,
by the same code as from models (`aggregate_facts`), and the run document's result lines are
read back from the journal in document order (`JournalLines`, a seek per line) and streamed
through the one document writer (`RunStore.write` → `evalh.document.document_chunks`).

What needs more than those numbers reads the models back one at a time from the journal
(`StreamedResults`, a pass over the suite's lines): the suite metrics, contrasts and sweep
of a suite that configures them (`[[suites.S.metrics]]`, `[[suites.S.contrasts]]`,
`[suites.S.sweep]`); and a scorer's `finalize` hook (a pairwise judge), which is handed
every result of the suite as a list — that suite's results are then in memory while it
finalizes (`SuiteResults.load`).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import overload

import orjson

from evalh.core.results.aggregate import Facts
from evalh.document import iter_case_lines, read_head
from evalh.errors import RunDocumentError
from evalh.models import CaseResult, Run
from evalh.store import RunStore

STATUSES = ("passed", "failed", "errored", "judge_error", "skipped")
_STATUS = {s: i for i, s in enumerate(STATUSES)}
_CACHED, _SCORE, _LATENCY, _COST, _TOKENS_IN, _TOKENS_OUT = 1, 2, 4, 8, 16, 32
_RESULT = b',"result":'


class SuiteResults:
    """One suite's results as the runner keeps them (see the module docstring): row `j` is
    the `j`th result recorded (carried results first), in the arrays below."""

    def __init__(self, name: str, order: Callable[[], dict[str, int]]) -> None:
        self.name = name
        self._make_order = order
        self._order: dict[str, int] | None = None
        self.arms: list[str] = []
        self._arm_index: dict[str, int] = {}
        self.case = array("q")
        self.arm = array("l")
        self.attempt = array("q")
        self.at = array("q")
        self.size = array("q")
        self.status = bytearray()
        self.flags = bytearray()
        self.score = array("d")
        self.latency = array("d")
        self.cost = array("d")
        self.tokens_in = array("q")
        self.tokens_out = array("q")
        self._sorted: array[int] | None = None

    def __len__(self) -> int:
        return len(self.at)

    def _arm_of(self, name: str) -> int:
        k = self._arm_index.get(name)
        if k is None:
            k = self._arm_index[name] = len(self.arms)
            self.arms.append(name)
        return k

    def position(self, case_id: str) -> int:
        """The case's position in the dataset (the document's order); -1 for a case not in
        it. The id → position table is made the first time a result comes without its
        position (a carried one, one from a worker process), not for a run's own items."""
        if self._order is None:
            self._order = self._make_order()
        return self._order.get(case_id, -1)

    def add(self, result: CaseResult, where: tuple[int, int], position: int | None = None) -> None:
        """Keep `result`'s numbers and where its journal line is (`Journal.append`);
        `position`: its case's in the dataset, when the caller knows it."""
        self._sorted = None
        self.case.append(self.position(result.case_id) if position is None else position)
        self.arm.append(self._arm_of(result.arm))
        self.attempt.append(result.attempt)
        self.at.append(where[0])
        self.size.append(where[1])
        self.status.append(0)
        self.flags.append(0)
        for column in (self.score, self.latency, self.cost):
            column.append(0.0)
        self.tokens_in.append(0)
        self.tokens_out.append(0)
        self._set(len(self.at) - 1, result)

    def replace(self, j: int, result: CaseResult, where: tuple[int, int]) -> None:
        """Row `j` is now `result`, journaled again at `where` (a scorer's finalize changed it)."""
        self.at[j], self.size[j] = where
        self._set(j, result)

    def _set(self, j: int, r: CaseResult) -> None:
        self.status[j] = _STATUS[r.status]
        flags = _CACHED if r.cached else 0
        if r.score is not None:
            flags |= _SCORE
            self.score[j] = r.score
        if r.latency_ms is not None:
            flags |= _LATENCY
            self.latency[j] = r.latency_ms
        if r.cost_usd is not None:
            flags |= _COST
            self.cost[j] = r.cost_usd
        if r.tokens_in is not None:
            flags |= _TOKENS_IN
            self.tokens_in[j] = r.tokens_in
        if r.tokens_out is not None:
            flags |= _TOKENS_OUT
            self.tokens_out[j] = r.tokens_out
        self.flags[j] = flags

    def facts(self, j: int) -> Facts:
        """Row `j` as `aggregate_facts` reads it (the values the model had)."""
        f = self.flags[j]
        return (
            STATUSES[self.status[j]],
            self.score[j] if f & _SCORE else None,
            self.tokens_in[j] if f & _TOKENS_IN else None,
            self.tokens_out[j] if f & _TOKENS_OUT else None,
            bool(f & _CACHED),
            self.latency[j] if f & _LATENCY else None,
            self.cost[j] if f & _COST else None,
        )

    def row_keys(self) -> Iterator[tuple[int, str, int]]:
        """(case position — -1 for a case not in the dataset —, arm, attempt) of each row."""
        for j in range(len(self.at)):
            yield self.case[j], self.arms[self.arm[j]], self.attempt[j]

    def sorted_rows(self) -> array[int]:
        """The rows in document order: by the case's position in the dataset, the arm's name,
        the attempt — a stable sort, as `sorted` over the models was."""
        if self._sorted is None:
            rank = {k: i for i, k in enumerate(sorted(range(len(self.arms)), key=self.arms.__getitem__))}
            width = len(self.arms) or 1
            span = (max(self.attempt) + 1) if len(self.attempt) else 1
            n = len(self.at)
            case, arm, attempt = self.case, self.arm, self.attempt
            # one list of n integers, each the key and then the row (ties: the earlier row first)
            packed = sorted(((max(case[j], 0) * width + rank[arm[j]]) * span + attempt[j]) * n + j for j in range(n))
            self._sorted = array("q", (v % n for v in packed))
        return self._sorted

    def facts_in_order(self, arm: str | None = None) -> Iterator[Facts]:
        """Each row's facts in document order (only `arm`'s when given)."""
        k = self._arm_index.get(arm, -1) if arm is not None else None
        for j in self.sorted_rows():
            if k is None or self.arm[j] == k:
                yield self.facts(j)


class JournalLines:
    """The run's results read back from its journal: each suite's result lines in document
    order (`evalh.store.ResultLines`, what `RunStore.write` streams), or its models one at
    a time. The journal's lines are read by offset (`os.pread`), one at a time."""

    def __init__(self, path: Path, suites: dict[str, SuiteResults]) -> None:
        self.path = path
        self.suites = suites

    def count(self, suite: str) -> int:
        kept = self.suites.get(suite)
        return len(kept) if kept is not None else 0

    def _line(self, fd: int, kept: SuiteResults, j: int) -> bytes:
        size = kept.size[j]
        data = os.pread(fd, size, kept.at[j])
        if len(data) != size or not data.endswith(b"}\n"):
            raise RunDocumentError(f"{self.path}: the journal line at byte {kept.at[j]} is not the result "
                                   "written there: the journal was changed while the run wrote it")
        start = data.find(_RESULT)
        return data[start + len(_RESULT):-2]

    def _rows(self, suite: str, rows: Sequence[int] | None) -> Iterator[bytes]:
        kept = self.suites.get(suite)
        if kept is None or not len(kept):
            return
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            for j in (kept.sorted_rows() if rows is None else rows):
                yield self._line(fd, kept, j)
        finally:
            os.close(fd)

    def lines(self, suite: str) -> Iterator[bytes]:
        """The suite's results as compact JSON (the document's result lines), in document order."""
        return self._rows(suite, None)

    def models(self, suite: str, rows: Sequence[int] | None = None) -> Iterator[CaseResult]:
        """The suite's results validated one at a time, in document order (or in `rows`'s)."""
        for body in self._rows(suite, rows):
            yield CaseResult.model_validate(orjson.loads(body))  # as a resume reads the journal

    def result(self, suite: str, j: int) -> CaseResult:
        return next(self.models(suite, [j]))


class StreamedResults(Sequence[CaseResult]):
    """A suite's results in document order, read from the journal each time they are
    iterated (one model at a time): what the suite metrics, contrasts and sweep are given."""

    def __init__(self, lines: JournalLines, suite: str) -> None:
        self._lines = lines
        self._suite = suite

    def __len__(self) -> int:
        return self._lines.count(self._suite)

    def __iter__(self) -> Iterator[CaseResult]:
        return self._lines.models(self._suite)

    @overload
    def __getitem__(self, i: int) -> CaseResult: ...
    @overload
    def __getitem__(self, i: slice) -> list[CaseResult]: ...
    def __getitem__(self, i: int | slice) -> CaseResult | list[CaseResult]:
        rows = self._lines.suites[self._suite].sorted_rows()
        if isinstance(i, slice):
            return list(self._lines.models(self._suite, rows[i]))
        return self._lines.result(self._suite, rows[i])


def not_passed(store: RunStore, run_id: str, limit: int | None = None) -> Run:
    """Run `run_id` as its document holds it, with only the results that did not pass
    (failed, errored, judge_error, skipped) as models — the first `limit` of each suite
    when given: what `evalh run` prints its failures from (their count is the aggregate's),
    without a model for every result of the run."""
    run = store.load_header(run_id)
    path = store.path_for(run_id)
    keep: dict[str, list[CaseResult]] = {name: [] for name in run.suites}
    with path.open("rb") as fh:
        head = read_head(fh)
        if head is None:  # not the streamed layout (evalh writes no other now): read it whole
            full = store.load(run_id)
            for name, suite in full.suites.items():
                keep[name] = [r for r in suite.cases if r.status != "passed"][:limit]
        else:
            for name, _, body in iter_case_lines(fh, head, str(path)):
                if limit is not None and len(keep[name]) >= limit:
                    continue
                obj = orjson.loads(body)
                if obj.get("status") != "passed":
                    keep[name].append(CaseResult.model_validate(obj))
    for name, suite in run.suites.items():
        suite.cases = keep.get(name, [])
    return run
