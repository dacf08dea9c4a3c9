"""The header of a run document, read without loading its cases, and the listing of
`evalh runs` made from the headers and the journals of unfinished runs (`list_runs`).

`evalh runs` needs a handful of fields per run (id, label, status, git, per-suite pass
rates). Loading whole documents to get them cost memory in proportion to the directory
(2.6 GB for 524 MB of runs). A document in the streamed layout (`evalh.document`) gives
all of them on its first line, which is all that is read. Documents of the earlier
(indented) layout are read top-level key by key, from a buffer filled in chunks, stopping
as soon as what a listing shows is there:

- documents written since the run model puts `summary` before `suites` give every field
  before the first byte of `suites`: the read is bounded by the size of the header
  (config snapshot and summary), whatever the number of cases;
- older documents (`suites` before `summary`) are read suite by suite: each suite's keys are
  decoded except `cases` (last in a suite), which is stepped over. In a document indented
  as evalh writes it the end of the array is found by its closing line (a string search);
  otherwise, or when that guess leads to a parse error, its items are decoded one at a
  time and dropped. Memory stays that of a chunk or one case; time is that of reading the
  file.

A document of another schema version goes through the migrations (a full parse of that one
document, not kept). Nothing here keeps more than one document at a time.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from evalh.errors import RunDocumentError

if TYPE_CHECKING:
    from evalh.models import Run
    from evalh.store import RunStore

CHUNK = 64 * 1024
_WS = " \t\n\r"
_UNDECODABLE = re.compile("[\udc80-\udcff]")
"""What `surrogateescape` makes of a byte that is not UTF-8: bytes past the header are never
judged, bytes in it are refused as a full load would."""


@dataclass
class RunHeader:
    """What a listing shows of one run."""

    run_id: str
    label: str | None
    status: str
    started_at: str
    git_sha: str | None
    git_dirty: bool | None
    pass_rates: dict[str, float | None] = field(default_factory=dict)
    """Suite name → pass rate (null when no case passed or failed), in document order."""


class _Incomplete(Exception):
    """The buffer ends inside the value being read (and the file goes on)."""


class _Reader:
    """A str buffer over a file, decoded from UTF-8 chunk by chunk; `pos` is the cursor."""

    def __init__(self, fh: IO[bytes], shown: str) -> None:
        self.fh = fh
        self.shown = shown
        self.buf = ""
        self.pos = 0
        self.eof = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
        self._json = json.JSONDecoder()
        self.key_indent: int | None = None
        """Indent of the line of the last key read (None: not at the start of a line)."""

    def _more(self, size: int = CHUNK) -> None:
        if self.eof:
            raise RunDocumentError(f"{self.shown}: not valid JSON: the document ends early")
        data = self.fh.read(size)
        text = self._decoder.decode(data, final=not data)
        if not data:
            self.eof = True
        if self.pos > CHUNK:  # drop what was read: the buffer holds the current value only
            self.buf = self.buf[self.pos:]
            self.pos = 0
        self.buf += text

    def peek(self) -> str:
        """The next non-blank character (the cursor moves past the blanks)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            self._more()

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise RunDocumentError(f"{self.shown}: not valid JSON: expected {char!r}")
        self.pos += 1

    def value(self) -> Any:
        """Decode one JSON value at the cursor, reading more of the file as needed."""
        self.peek()
        size = CHUNK  # doubled at each retry: a large value is decoded O(log n) times
        while True:
            try:
                obj, end = self._json.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if self.eof:
                    raise RunDocumentError(f"{self.shown}: not valid JSON: {exc.msg}") from None
                self._more(size)
                size *= 2
                continue
            # a number that ends where the buffer does may go on in the next chunk
            if end == len(self.buf) and not self.eof:
                self._more(size)
                size *= 2
                continue
            if _UNDECODABLE.search(self.buf, self.pos, end):
                raise RunDocumentError(f"{self.shown}: not valid UTF-8")
            self.pos = end
            return obj

    def members(self) -> Any:
        """The keys of the object at the cursor, one at a time; the caller reads or skips
        each value before asking for the next key."""
        self.expect("{")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            self.peek()
            self.key_indent = self._indent()
            key = self.value()
            if not isinstance(key, str):
                raise RunDocumentError(f"{self.shown}: not valid JSON: an object key is not a string")
            self.expect(":")
            yield key
            nxt = self.peek()
            self.pos += 1
            if nxt == "}":
                return
            if nxt != ",":
                raise RunDocumentError(f"{self.shown}: not valid JSON: expected ',' or '}}'")

    def _indent(self) -> int | None:
        """The number of spaces between the last newline and the cursor, when the line
        holds nothing else before it (None when unknown)."""
        start = self.buf.rfind("\n", 0, self.pos)
        if start < 0 or self.buf[start + 1:self.pos].strip(" "):
            return None
        return self.pos - start - 1

    def skip_indented_array(self, indent: int) -> bool:
        """Step over the array at the cursor by finding its closing line: in a document
        indented as evalh writes it (two spaces a level, no raw newline in a string), the
        first line that is `indent` spaces and `]` after the opening `[` closes it. False
        (cursor unmoved) when the array does not open a line of its own."""
        self.peek()
        while len(self.buf) - self.pos < 2 and not self.eof:
            self._more()
        if self.buf[self.pos:self.pos + 2] != "[\n":
            return False
        needle = "\n" + " " * indent + "]"
        at = self.pos + 1
        while True:
            found = self.buf.find(needle, at)
            if found >= 0:
                if _UNDECODABLE.search(self.buf, self.pos, found):
                    raise RunDocumentError(f"{self.shown}: not valid UTF-8")
                self.pos = found + len(needle)
                return True
            # keep only what could begin the closing line; what was searched is dropped
            self.pos = max(self.pos, len(self.buf) - len(needle) + 1)
            self._more()  # may drop what is before the cursor: offsets move
            at = self.pos

    def skip_array(self) -> None:
        """Step over an array item by item, keeping none of them."""
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            self.value()
            nxt = self.peek()
            self.pos += 1
            if nxt == "]":
                return
            if nxt != ",":
                raise RunDocumentError(f"{self.shown}: not valid JSON: expected ',' or ']'")

    def skip_value(self) -> None:
        if self.peek() == "[":
            self.skip_array()
        else:
            self.value()


def _suites_from_summary(summary: Any) -> dict[str, float | None] | None:
    per_suite = summary.get("suites") if isinstance(summary, dict) else None
    if not isinstance(per_suite, dict):
        return None
    rates: dict[str, float | None] = {}
    for name, row in per_suite.items():
        if not isinstance(row, dict) or "pass_rate" not in row:
            return None
        rates[name] = row["pass_rate"]
    return rates


def _suites_by_scan(reader: _Reader, fast: bool) -> dict[str, Any]:
    """`suites` read in place: every key of every suite but its `cases`."""
    suites: dict[str, Any] = {}
    if reader.peek() != "{":
        return {"": reader.value()}  # not an object: validation names it
    for name in reader.members():
        if reader.peek() != "{":
            suites[name] = reader.value()
            continue
        suite: dict[str, Any] = {}
        for key in reader.members():
            if key == "cases":
                indent = reader.key_indent
                if not (fast and indent is not None and reader.skip_indented_array(indent)):
                    reader.skip_value()
            else:
                suite[key] = reader.value()
        suites[name] = suite
    return suites


def _validate(raw: dict[str, Any], shown: str) -> Run:
    from pydantic import ValidationError

    from evalh.errors import first_validation_error
    from evalh.models import Run

    try:
        return Run.model_validate(raw)
    except ValidationError as exc:
        loc, msg = first_validation_error(exc)
        raise RunDocumentError(f"{shown}: invalid run document at {loc}: {msg}") from None


def _from_run(run: Run) -> RunHeader:
    return RunHeader(
        run_id=run.run_id, label=run.label, status=run.status, started_at=run.started_at,
        git_sha=run.git.sha, git_dirty=run.git.dirty,
        pass_rates={n: s.aggregate.pass_rate for n, s in run.suites.items()},
    )


def _read(fh: IO[bytes], shown: str, fast: bool) -> dict[str, Any] | None:
    """The top-level keys a listing needs; None when the document must go through the
    migrations (another schema version)."""
    from evalh.models import RUN_SCHEMA

    reader = _Reader(fh, shown)
    if reader.peek() != "{":
        raise RunDocumentError(f"{shown}: not an evalh run document (no `schema: evalh.run/1`)")
    raw: dict[str, Any] = {}
    rates: dict[str, float | None] | None = None
    for key in reader.members():
        if key == "suites":
            if rates is not None:  # the summary came first and named every suite's rate
                raw["suites"] = {}
                break
            raw["suites"] = _suites_by_scan(reader, fast)
        else:
            raw[key] = reader.value()
            if key == "schema" and raw[key] != RUN_SCHEMA:
                return None
            if key == "summary":
                rates = _suites_from_summary(raw[key])
        if rates is not None and "suites" in raw:
            break
    if not str(raw.get("schema", "")).startswith("evalh.run/"):
        raise RunDocumentError(f"{shown}: not an evalh run document (no `schema: evalh.run/1`)")
    raw["_rates"] = rates
    return raw


def read_run_header(path: Path) -> RunHeader:
    """The listing fields of the run document at `path`, validated like a full load."""
    shown = str(path)
    from evalh.store import read_streamed

    streamed = read_streamed(path, shown, header_only=True)  # the streamed layout: line 1
    if streamed is not None:
        return _from_run(streamed)
    try:
        try:
            with path.open("rb") as fh:
                raw = _read(fh, shown, fast=True)
        except RunDocumentError:
            # the closing line of a `cases` array was guessed from the indentation: when
            # that went wrong, step over every case instead (this raises when the document
            # is bad indeed)
            with path.open("rb") as fh:
                raw = _read(fh, shown, fast=False)
    except OSError as exc:
        raise RunDocumentError(f"{path}: cannot read: {exc}") from None
    if raw is None:  # an older schema: the migrations need the whole document
        from evalh.store import parse_run, read_document

        return _from_run(parse_run(read_document(path), shown))
    rates = raw.pop("_rates")
    run = _validate(raw, shown)
    header = _from_run(run)
    if rates is not None and not run.suites:
        header.pass_rates = rates
    return header


# --------------------------------------------------------------------------- the listing


@dataclass
class RunListing:
    """One line of `evalh runs` (`to_dict`: one item of `evalh runs --json`)."""

    run_id: str
    label: str | None
    status: str
    started_at: str | None
    git_sha: str | None
    dirty: bool | None
    baseline: bool
    suites: dict[str, float | None]
    """Suite → pass rate, as the document's summary stores it (`core.results.outcome.run_summary`)."""
    resume: str | None
    """The command that finishes an interrupted run."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def list_runs(
    store: RunStore, limit: int, *, baseline: set[str], runs_dir: Path | None = None
) -> tuple[list[RunListing], list[str]]:
    """The newest `limit` runs, newest last, and why each unreadable one was left out. A run
    with a journal and no document is `interrupted` (with the command that resumes it, in
    `runs_dir` when one was given) or `running`. `baseline`: the runs BASELINE names.

    Newest first, header only, until `limit` are listed: memory is one header at a time and
    the documents older than the newest `limit` readable ones are not opened."""
    documents = store.list_ids()
    journal_only = set(_journal_only_ids(store, set(documents)))
    newest: list[RunListing] = []
    left_out: list[str] = []
    for ref in sorted({*documents, *journal_only}, reverse=True):
        if len(newest) == limit:
            break
        try:
            if ref in journal_only:
                newest.append(_journal_row(store, ref, runs_dir))
                continue
            h = read_run_header(store.path_for(ref))
        except RunDocumentError as exc:
            left_out.append(exc.message)
            continue
        newest.append(RunListing(
            run_id=h.run_id, label=h.label, status=h.status, started_at=h.started_at,
            git_sha=h.git_sha, dirty=h.git_dirty, baseline=h.run_id in baseline,
            suites=h.pass_rates, resume=None,
        ))
    return list(reversed(newest)), left_out


_JOURNAL_SUFFIX = ".journal.jsonl"
_HEADER_LIMIT = 1 << 20
"""A journal's first line is read up to this many bytes (its header holds the config snapshot)."""


def _journal_only_ids(store: RunStore, documents: set[str]) -> list[str]:
    """Runs with a journal and no document: killed outright (SIGKILL, a crash), or running."""
    from evalh.errors import InvalidRunId
    from evalh.store import SIDECAR_SUFFIXES, validate_run_id

    if not store.runs_dir.is_dir():
        return []
    ids = []
    for p in store.runs_dir.glob(f"*{_JOURNAL_SUFFIX}"):
        run_id = p.name[: -len(_JOURNAL_SUFFIX)]
        try:
            validate_run_id(run_id)
        except InvalidRunId:
            continue
        if run_id not in documents and not run_id.endswith(SIDECAR_SUFFIXES):
            ids.append(run_id)
    return ids


def _held_by_a_live_process(lock: Path) -> bool:
    """Whether the pid a run's lock file names is alive. Read only: taking the lock, even for
    a moment, could make a run starting at that instant refuse itself."""
    import os

    try:
        pid = int(lock.read_text(encoding="ascii").strip() or 0)
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: alive, another user's
        return True
    return True


def _journal_row(store: RunStore, run_id: str, runs_dir: Path | None) -> RunListing:
    """A listing row from a journal's header line; `RunDocumentError` when it is unreadable."""
    import orjson

    path = store.journal_path(run_id)
    try:
        with path.open("rb") as fh:
            first = fh.readline(_HEADER_LIMIT)
        header = orjson.loads(first).get("header")
        if not isinstance(header, dict):
            raise ValueError
    except OSError as exc:
        raise RunDocumentError(f"{path}: cannot read the journal: {exc.strerror or exc}") from None
    except (ValueError, AttributeError):
        raise RunDocumentError(f"{path}: line 1: not a journal header") from None
    running = _held_by_a_live_process(store.lock_path(run_id))
    import shlex

    # the directory `evalh runs` was pointed at is where the resume must look too
    resume = f"evalh run --resume {run_id}" + (f" --runs-dir {shlex.quote(str(runs_dir))}" if runs_dir else "")
    label, started = header.get("label"), header.get("started_at")
    return RunListing(
        run_id=run_id, label=label if isinstance(label, str) else None,
        status="running" if running else "interrupted",
        started_at=started if isinstance(started, str) else None,
        git_sha=None, dirty=None, baseline=False, suites={},
        resume=None if running else resume,
    )
