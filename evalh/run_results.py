"""A run's results read one at a time: what `evalh show` and `evalh report` stream.

`RunResults` is a run's header (every suite's `cases` empty) and an iteration over its
results, in document order, each validated as `evalh show` always validated them. A
document in the streamed layout is read a line at a time: memory holds one result, never
the run. One of the earlier, indented layout (or a run already in memory) is iterated from
its models. Each result comes with a token that `fetch` turns back into it: a reader keeps
a few integers per case and asks again for the handful it shows (the worst cases' reasons).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from evalh.errors import RunDocumentError

if TYPE_CHECKING:
    from evalh.models import CaseResult, Run
    from evalh.store import RunStore


class RunResults:
    """A run in memory: its results are its suites' `cases` (tokens: their index)."""

    def __init__(self, run: Run) -> None:
        self._run = run
        self.header = run.model_copy(update={"suites": {
            name: suite.model_copy(update={"cases": []}) for name, suite in run.suites.items()}})
        self.path: Path | None = None

    def __iter__(self) -> Iterator[tuple[str, int, CaseResult]]:
        for name, suite in self._run.suites.items():
            for i, r in enumerate(suite.cases):
                yield name, i, r

    def fetch(self, suite: str, token: int) -> CaseResult:
        return self._run.suites[suite].cases[token]


class DocumentResults(RunResults):
    """A run document in the streamed layout, read a line at a time on each iteration
    (tokens: a result line's byte offset). The header is validated when this is made; each
    result as it is read, so an iteration may raise `RunDocumentError` naming the line."""

    def __init__(self, path: Path, header: Run) -> None:
        self.header = header
        self.path: Path | None = path
        self._doc = path

    def __iter__(self) -> Iterator[tuple[str, int, CaseResult]]:
        from evalh.document import read_head
        from evalh.gcpause import gc_paused
        from evalh.store import iter_results

        shown = str(self._doc)
        try:
            with self._doc.open("rb") as fh, gc_paused():
                head = read_head(fh)
                if head is None:
                    raise RunDocumentError(f"{shown}: the document changed while it was read")
                yield from iter_results(fh, head, shown)
        except OSError as exc:
            raise RunDocumentError(f"{shown}: cannot read: {exc}") from None

    def fetch(self, suite: str, token: int) -> CaseResult:
        import orjson

        from evalh.models import CaseResult

        shown = str(self._doc)
        try:
            with self._doc.open("rb") as fh:
                fh.seek(token)
                line = fh.readline().rstrip(b"\n").removesuffix(b",")
            return CaseResult.model_validate(orjson.loads(line))
        except (OSError, ValueError) as exc:  # it was read whole a moment ago
            raise RunDocumentError(f"{shown}: the document changed while it was read ({exc})") from None


def open_results(store: RunStore, ref: str) -> RunResults:
    """The run `ref` (an id or a document's path) for reading its results one at a time:
    the header read and validated now, the results as they are iterated."""
    from evalh.store import read_streamed

    path = store.resolve(ref)
    header = read_streamed(path, str(path), header_only=True)
    if header is not None:
        return DocumentResults(path, header)
    # the earlier layout is parsed whole, as `RunStore.load` does
    results = RunResults(store.load(str(path)))
    results.path = path
    return results
