"""The dashboard's in-memory index of a runs directory.

Run summaries (everything but the case rows) are cached per file by (path, mtime, size),
so the history page re-reads only documents that changed; a document in the streamed
layout (`evalh.document`) gives its summary from its first line, its results unread.
Runs opened for their cases are kept in a small LRU, with their case rows flattened for
listing, so paging and filtering the cases of a 10,000-case run does not parse it again.
Of a streamed document only the rows and the byte offset of each result are kept: a case
is opened by reading its one line, a comparison reads only the facts it pairs, into
compact columns (`evalh.core.compare.facts`). Safe to share between server threads.
"""

from __future__ import annotations

import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import ValidationError

from evalh.core.compare.facts import DEFAULT_OPTIONS, Options, SuiteFacts, suite_facts
from evalh.core.compare.facts_read import facts_from
from evalh.core.results.outcome import run_summary
from evalh.document import (
    HEADS,
    indexed_offset,
    iter_case_lines,
    line_offsets,
    read_case_at,
    read_case_near,
    read_head,
)
from evalh.errors import RunDocumentError, RunNotFound, first_validation_error
from evalh.gcpause import gc_paused
from evalh.models import CaseResult, Run
from evalh.store import (
    RunStore,
    parse_raw_run,
    parse_run,
    read_streamed,
    validate_run_id,
)

FileKey = tuple[str, int, int]


def _file_key(path: Path) -> FileKey:
    st = path.stat()
    return (str(path), st.st_mtime_ns, st.st_size)


def history_row(run: Run) -> dict[str, Any]:
    """The history row of a run: the dashboard's form of its one summary
    (`core.results.outcome.run_summary`)."""
    return run_summary(run).history_row()


def _split(raw: dict[str, Any], shown: str) -> tuple[Run, dict[str, list[Any]]]:
    """The run without its case rows (validated as any run is, by `parse_run`), and the
    raw case rows per suite, left unvalidated until somebody needs them."""
    cases: dict[str, list[Any]] = {}
    light = dict(raw)
    suites = raw.get("suites")
    if isinstance(suites, dict):
        light["suites"] = {}
        for name, suite in suites.items():
            if isinstance(suite, dict):
                rows = suite.get("cases")
                cases[name] = rows if isinstance(rows, list) else []
                suite = {**suite, "cases": []}
            light["suites"][name] = suite
    return parse_run(orjson.dumps(light), shown), cases


def _light_run(data: bytes, shown: str) -> Run:
    """The run without its case rows: validated like any run, at a fraction of the cost."""
    return _split(parse_raw_run(data, shown), shown)[0]


def _summary_run(path: Path) -> Run:
    """The run without its cases, for its history row: the first line of a streamed
    document (its results unread), else the whole document parsed and its cases dropped
    unvalidated."""
    return read_streamed(path, str(path), header_only=True) or _light_run(path.read_bytes(), str(path))


def _invalid(shown: str, exc: ValidationError, prefix: str = "") -> RunDocumentError:
    loc, msg = first_validation_error(exc, (prefix,))
    return RunDocumentError(f"{shown}: invalid run document at {loc}: {msg}")


def case_row(i: int, r: dict[str, Any]) -> dict[str, Any]:
    """One line of the case list, from a raw case row (the detail is fetched on demand)."""
    error = r.get("error")
    return {
        "i": i, "case_id": str(r.get("case_id")), "arm": str(r.get("arm", "default")),
        "attempt": r.get("attempt", 0), "status": r.get("status"), "score": r.get("score"),
        "latency_ms": r.get("latency_ms"), "cost_usd": r.get("cost_usd"), "cached": bool(r.get("cached")),
        "tokens_in": r.get("tokens_in"), "tokens_out": r.get("tokens_out"),
        "error": error.get("type") if isinstance(error, dict) else None,
    }


@dataclass
class LoadedRun:
    """A run read for the dashboard: its header validated, its case rows flattened for
    listing, and the whole validated `Run` built on first use (`run()`), since listing and
    opening cases never needs it."""

    key: FileKey
    shown: str
    header: Run
    """The run with empty case lists."""
    raw_cases: dict[str, list[Any]]
    _rows: dict[str, list[dict[str, Any]]] | None = None
    _search: dict[str, list[str]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Things derived from the run and cached with it (the report)."""
    streamed: bool = False
    """A document in the streamed layout: its `raw_cases` stay empty; its rows and the
    byte offset of each result (`offsets`) are read in one pass over the lines when first
    needed, a comparison's facts in a pass of their own, and a result is read from its line
    when it is opened."""
    offsets: dict[str, array[int]] | None = None
    _run: Run | None = None
    _facts: dict[tuple[tuple[str, Options], ...], dict[str, SuiteFacts]] = field(default_factory=dict)
    """The facts of its suites, by the options they were read with (`compare.suite_options`)."""
    _lock: threading.RLock = field(default_factory=threading.RLock)

    @property
    def rows(self) -> dict[str, list[dict[str, Any]]]:
        """Suite → the listing row of each result, in document order."""
        if self._rows is None:
            self._scan()
        assert self._rows is not None
        return self._rows

    @property
    def search(self) -> dict[str, list[str]]:
        """Lower-cased case id of each row, for the text filter."""
        if self._search is None:
            self._scan()
        assert self._search is not None
        return self._search

    def _scan(self) -> None:
        """One pass over a streamed document's lines: the rows and offsets."""
        with self._lock:
            if self._rows is not None:
                return
            rows, offsets = _scan_lines(self.key, self.shown, self.header)
            self._rows = rows
            self.offsets = self.offsets or offsets
            self._search = {n: [r["case_id"].lower() for r in rs] for n, rs in rows.items()}

    def _streamed(self, drop: tuple[str, ...] = ()) -> Run:
        path = Path(self.key[0])
        if _file_key(path) != self.key:
            raise RunDocumentError(f"{self.shown}: changed while it was open: reload the page")
        run = read_streamed(path, self.shown, drop=drop)
        if run is None:
            raise RunDocumentError(f"{self.shown}: changed while it was open: reload the page")
        return run

    def facts(self, options: dict[str, Options]) -> dict[str, SuiteFacts]:
        """The facts of every suite that `compare_runs` pairs, read with `options` (once per
        options: a run is compared with others whose configuration asks the same)."""
        with self._lock:
            key = _options_key(options)
            hit = self._facts.get(key)
            if hit is not None:
                return hit
            if self._run is not None or not self.streamed:
                run = self._whole()
                hit = {name: suite_facts(s.cases, options.get(name, DEFAULT_OPTIONS))
                       for name, s in run.suites.items()}
                self._facts[key] = hit
                return hit
            # the verdict's own pass: the facts a chunk at a time, no listing row (the case
            # list reads those when it asks)
            with _opened(self.key, self.shown) as (fh, head):
                hit = self._facts[key] = facts_from(fh, head, self.shown, options)
            return hit

    def run(self) -> Run:
        """The whole run, validated (once). Raises RunDocumentError."""
        with self._lock:
            return self._whole()

    def _whole(self) -> Run:
        if self._run is None:
            if self.streamed:
                self._run = self._streamed()
            else:
                suites = {}
                with gc_paused():
                    for name, suite in self.header.suites.items():
                        cases = []
                        for i, c in enumerate(self.raw_cases.get(name, [])):
                            try:
                                cases.append(CaseResult.model_validate(c))
                            except ValidationError as exc:
                                raise _invalid(self.shown, exc, f"suites.{name}.cases.{i}") from None
                        suites[name] = suite.model_copy(update={"cases": cases})
                    self._run = self.header.model_copy(update={"suites": suites})
                self.raw_cases = {}  # the validated rows replace them: keep one copy in memory
        return self._run

    def outputs(self, suite: str) -> list[str]:
        """The output of each row of `suite` as the text a reader compares (see
        `evalh.report.textdiff.as_text`), computed once: the search over outputs and the
        previews of the matrix read these."""
        from evalh.report.textdiff import as_text

        cache = self.extra.setdefault("outputs", {})
        hit = cache.get(suite)
        if hit is None:
            raw = self.raw_cases.get(suite)  # read before `_run`, as in `case`
            run = self._run
            with gc_paused():
                if run is None and self.streamed:
                    hit = self._stream_outputs(suite)
                elif run is not None:
                    hit = [as_text(c.output) for c in run.suites[suite].cases]
                else:
                    hit = [as_text(c.get("output")) if isinstance(c, dict) else "" for c in raw or []]
            cache[suite] = hit
        return hit

    def _stream_outputs(self, suite: str) -> list[str]:
        """The output text of each result of `suite`, read from the file line by line."""
        from evalh.report.textdiff import as_text

        path = Path(self.key[0])
        out = []
        with path.open("rb") as fh:
            head = read_head(fh)
            if head is None or _file_key(path) != self.key:
                raise RunDocumentError(f"{self.shown}: changed while it was open: reload the page")
            for name, _, body in iter_case_lines(fh, head, self.shown):
                if name == suite:
                    c = orjson.loads(body)
                    out.append(as_text(c.get("output")) if isinstance(c, dict) else "")
        return out

    def case(self, suite: str, i: int) -> CaseResult:
        """One result, validated on its own (of a streamed document: read from its line)."""
        raw = self.raw_cases  # read before `_run`: `run()` sets `_run` before it drops these
        run = self._run
        if run is not None:
            return run.suites[suite].cases[i]
        if self.streamed:
            return self._case_at(suite, i)
        try:
            return CaseResult.model_validate(raw[suite][i])
        except ValidationError as exc:
            raise _invalid(self.shown, exc, f"suites.{suite}.cases.{i}") from None


    def count(self, suite: str) -> int | None:
        """How many results `suite` holds (None: no such suite). Of a streamed document
        whose rows are not read yet, from its header's count."""
        if self.streamed and self._rows is None:
            head = self._head()
            if suite not in head[HEADS]:
                return None
            n = (head[HEADS][suite] or {}).get("results")
            if isinstance(n, int):
                return n
            offsets = self._line_offsets()
            return len(offsets[suite]) if suite in offsets else None
        return len(self.rows[suite]) if suite in self.rows else None

    def _head(self) -> dict[str, Any]:
        """The raw header of a streamed document (its first line), read once."""
        with self._lock:
            head = self.extra.get("head")
            if head is None:
                fd = self._open()
                try:
                    with open(fd, "rb", closefd=False) as fh:
                        head = read_head(fh)
                finally:
                    os.close(fd)
                if head is None:
                    raise RunDocumentError(f"{self.shown}: changed while it was open: reload the page")
                self.extra["head"] = head
            return head

    def _open(self) -> int:
        """An fd on the document, checked to be the file this run was read from."""
        path = Path(self.key[0])
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise RunNotFound(f"{self.shown}: cannot read: {exc.strerror or exc}") from None
        st = os.fstat(fd)
        if (str(path), st.st_mtime_ns, st.st_size) != self.key:
            os.close(fd)
            raise RunDocumentError(f"{self.shown}: changed while it was open: reload the page")
        return fd

    def _line_offsets(self) -> dict[str, array[int]]:
        """The byte offset of each result's line, found without parsing any (a case opened
        before the list is shown: a million results' offsets in a fraction of a second)."""
        with self._lock:
            if self.offsets is None:
                fd = self._open()
                try:
                    with open(fd, "rb", closefd=False) as fh:
                        head = read_head(fh)
                    if head is None:
                        raise RunDocumentError(f"{self.shown}: changed while it was open: reload the page")
                    self.offsets = line_offsets(fd, head, self.shown)
                finally:
                    os.close(fd)
            return self.offsets

    def _case_at(self, suite: str, i: int) -> CaseResult:
        """Result `i` of `suite` from its line: found from the header's line index (a seek
        and at most `EVERY` lines stepped over), else from every result's offset."""
        near = indexed_offset(self._head(), suite, i) if self.offsets is None else None
        offsets = self._line_offsets() if near is None else None
        fd = self._open()
        try:
            if near is not None:
                raw = read_case_near(fd, near[0], near[1], self.shown)
            else:
                assert offsets is not None
                raw = read_case_at(fd, offsets[suite][i], self.shown)
        finally:
            os.close(fd)
        try:
            return CaseResult.model_validate(raw)
        except ValidationError as exc:
            raise _invalid(self.shown, exc, f"suites.{suite}.cases.{i}") from None


def _options_key(options: dict[str, Options]) -> tuple[tuple[str, Options], ...]:
    return tuple(sorted(options.items(), key=lambda item: item[0]))


@contextmanager
def _opened(key: FileKey, shown: str) -> Iterator[tuple[IO[bytes], dict[str, Any]]]:
    """The streamed document of `key`, open just after its header, and the header, when it
    is still the file the key was taken of."""
    try:
        fh = Path(key[0]).open("rb")  # noqa: SIM115 (the with below closes it)
    except OSError as exc:
        raise RunNotFound(f"{shown}: cannot read: {exc.strerror or exc}") from None
    with fh:
        st = os.fstat(fh.fileno())
        head = read_head(fh)
        if head is None or (shown, st.st_mtime_ns, st.st_size) != key:
            raise RunDocumentError(f"{shown}: changed while it was open: reload the page")
        yield fh, head


def _scan_lines(key: FileKey, shown: str, header: Run) -> tuple[dict[str, list[dict[str, Any]]], dict[str, array[int]]]:
    """Rows and offsets of every result of a streamed document."""
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in header.suites}
    offsets: dict[str, array[int]] = {name: array("q") for name in header.suites}
    with _opened(key, shown) as (fh, head), gc_paused():
        for name, at, body in iter_case_lines(fh, head, shown):
            try:
                c = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                raise RunDocumentError(f"{shown}: not valid JSON: {exc}") from None
            rs = rows.setdefault(name, [])
            rs.append(case_row(len(rs), c if isinstance(c, dict) else {}))
            offsets.setdefault(name, array("q")).append(at)
    return rows, offsets


def _read_streamed(path: Path, key: FileKey) -> LoadedRun | None:
    """A streamed document opened: its header validated, nothing else read yet (the rows
    and offsets come with the first listing, case or comparison). None when the document
    has another layout."""
    header = read_streamed(path, str(path), header_only=True)
    if header is None:
        return None
    return LoadedRun(key=key, shown=str(path), header=header, raw_cases={}, streamed=True)


class RunIndex:
    """Summaries and loaded runs of one runs directory."""

    def __init__(self, runs_dir: Path, *, max_loaded: int = 3) -> None:
        self.store = RunStore(runs_dir)
        self.max_loaded = max_loaded
        self._lock = threading.Lock()
        self._refresh = threading.Lock()
        """Held while summaries are brought up to date: concurrent requests wait for one
        refresh instead of each parsing the same documents."""
        self._load = threading.Lock()
        """Held while a run is read, so two requests for a cold run parse it once."""
        self._summaries: dict[str, tuple[FileKey, dict[str, Any] | None]] = {}
        self._loaded: OrderedDict[str, LoadedRun] = OrderedDict()

    @property
    def runs_dir(self) -> Path:
        return self.store.runs_dir

    def summaries(self) -> list[dict[str, Any]]:
        """Every readable run's summary, oldest first. Unreadable documents are left out."""
        with self._refresh:
            return self._summaries_now()

    def _summaries_now(self) -> list[dict[str, Any]]:
        out = []
        for run_id in self.store.list_ids():
            path = self.store.path_for(run_id)
            try:
                key = _file_key(path)
            except OSError:
                continue
            with self._lock:
                cached = self._summaries.get(run_id)
            if cached is None or cached[0] != key:
                try:
                    with gc_paused():
                        summary: dict[str, Any] | None = history_row(_summary_run(path))
                except (OSError, RunDocumentError):
                    summary = None
                with self._lock:
                    self._summaries[run_id] = (key, summary)
                cached = (key, summary)
            if cached[1] is not None:
                out.append(cached[1])
        return out

    def load(self, run_id: str) -> LoadedRun:
        """The whole run (from the LRU when its file did not change). Raises InvalidRunId,
        RunNotFound or RunDocumentError."""
        path = self.store.path_for(validate_run_id(run_id))
        try:
            key = _file_key(path)
        except OSError:
            raise RunNotFound(f"no run {run_id!r} in {self.store.runs_dir}") from None
        hit = self._cached(run_id, key)
        if hit is not None:
            return hit
        with self._load:
            return self._cached(run_id, key) or self._read(run_id, path, key)

    def _cached(self, run_id: str, key: FileKey) -> LoadedRun | None:
        with self._lock:
            hit = self._loaded.get(run_id)
            if hit is not None and hit.key == key:
                self._loaded.move_to_end(run_id)
                return hit
        return None

    def _read(self, run_id: str, path: Path, key: FileKey) -> LoadedRun:
        try:
            streamed = _read_streamed(path, key)
            data = path.read_bytes() if streamed is None else b""
        except OSError:
            raise RunNotFound(f"no run {run_id!r} in {self.store.runs_dir}") from None
        if streamed is not None:
            loaded = streamed
        else:
            with gc_paused():
                header, raw_cases = _split(parse_raw_run(data, str(path)), str(path))
                rows = {n: [case_row(i, c) if isinstance(c, dict) else case_row(i, {}) for i, c in enumerate(cs)]
                        for n, cs in raw_cases.items()}
            search = {n: [r["case_id"].lower() for r in rs] for n, rs in rows.items()}
            loaded = LoadedRun(key=key, shown=str(path), header=header, raw_cases=raw_cases, _rows=rows,
                               _search=search)
        with self._lock:
            self._loaded[run_id] = loaded
            self._loaded.move_to_end(run_id)
            while len(self._loaded) > self.max_loaded:
                self._loaded.popitem(last=False)
        return loaded
