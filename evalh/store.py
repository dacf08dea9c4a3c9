"""The run store: one self-contained JSON document per run in `eval_runs/`.

Writes are atomic (temporary file in the same directory, fsync, rename), so a reader never
sees half a document; files get the permissions of the process's umask, like any file a
program creates. While a run is in flight its finished results are appended to a journal
beside it (`<run_id>.journal.jsonl`), so a crash loses at most the cases in flight. A
process running or resuming a run holds an exclusive lock on it (`.<run_id>.lock`), so two
processes never do the same run's work, and what a dead or finished run left behind
(temporary files of a write a kill cut short, the journal of a complete run) can be told
from what a live one is writing. Run ids are generated, sortable by time, and validated
before they touch the filesystem. A write the OS refuses (disk full, read-only filesystem)
is one `WriteFailed` naming the file (exit 4).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

import orjson
from pydantic import ValidationError

from evalh.atomic import atomic_write_chunks, write_failed
from evalh.document import HEADS, document_chunks, iter_case_lines, light_raw, read_head
from evalh.errors import (
    InvalidRunId,
    RunDocumentError,
    RunNotFound,
    WriteFailed,
    first_validation_error,
)
from evalh.gcpause import gc_paused
from evalh.journal import Journal, shared_fields_set
from evalh.redact import scrub_secrets, secret_env_values
from evalh.run_lock import RunLock

if TYPE_CHECKING:  # imported where a model is made: listing runs and ids needs none
    from evalh.models import CaseResult, Run

DEFAULT_RUNS_DIR = "eval_runs"
RUNS_DIR_ENV = "EVAL_RUNS_DIR"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SIDECAR_SUFFIXES = (".labels",)
"""Stems of JSON files kept beside a run that are not runs (`<run_id>.labels.json`)."""


def new_run_id(now: datetime | None = None) -> str:
    """A new id, sortable by time: `20261129T201530123Z-3fa9c1`."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%S}{now.microsecond // 1000:03d}Z-{secrets.token_hex(3)}"


def validate_run_id(run_id: str) -> str:
    """Refuse anything that could leave the runs directory (separators, `..`, odd bytes)."""
    # fullmatch: `$` alone would let a trailing newline through
    if not _RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise InvalidRunId(f"invalid run id {run_id!r}: use the id `evalh runs` lists")
    return run_id


_SECOND: dict[int, str] = {}
"""The last second `now_iso` formatted → its text up to the seconds. One dict for the
process, its entry replaced: a lookup is atomic for threads, and no object a run froze
(`evalh.gcpause`) is ever freed by it (that would move the frozen count)."""


def now_iso() -> str:
    """The time now, UTC, to the millisecond: `2026-12-01T15:57:03.481Z`. Every result is
    stamped with it: the text up to the second is formatted once a second, not per call."""
    second, ns = divmod(time.time_ns(), 1_000_000_000)
    text = _SECOND.get(second)
    if text is None:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _SECOND.clear()
        _SECOND[second] = text
    return f"{text}.{ns // 1_000_000:03d}Z"


def parse_iso(value: str | None) -> datetime | None:
    """An ISO 8601 time (`Z` or an offset; none is read as UTC) as an aware datetime; None
    for no time or one that is not ISO 8601."""
    if not value:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _runs_dir_env() -> str | None:
    """$EVAL_RUNS_DIR, or None when unset or blank (an unfilled CI variable names nothing)."""
    value = os.environ.get(RUNS_DIR_ENV)
    return value if value and value.strip() else None


def resolve_runs_dir(option: Path | str | None, root: Path | None = None, configured: str | None = None) -> Path:
    """--runs-dir, else $EVAL_RUNS_DIR, else the config's `runs_dir`, else ./eval_runs."""
    chosen = option or _runs_dir_env() or configured or DEFAULT_RUNS_DIR
    path = Path(chosen)
    if not path.is_absolute() and root is not None and option is None and not _runs_dir_env():
        path = root / path
    return path


def runs_dir_named(option: Path | str | None, configured: str | None = None) -> bool:
    """Whether where runs go was named (--runs-dir, $EVAL_RUNS_DIR, the config's `runs_dir`),
    not the implicit ./eval_runs (`require.destination`)."""
    return bool(option or _runs_dir_env() or configured)


def run_chunks(run: Run, patches: list[tuple[int, bytes]] | None = None, *,
               lines: ResultLines | None = None) -> Iterator[bytes]:
    """The document of `run` in the streamed layout (`evalh.document`), a few lines at a
    time, secrets scrubbed: no copy of the whole run as one dict or one buffer. `patches`
    receives what fills in the header's line index once the lines are made. `lines` (the
    runner's, from its journal) gives each suite's count and result lines instead of
    `run.suites[name].cases`."""
    top, heads, scrub = run_parts(run, lines)

    def cases(name: str) -> Iterator[bytes]:
        if lines is not None:
            yield from lines.lines(name)
            return
        for c in run.suites[name].cases:
            yield orjson.dumps(c.model_dump(mode="json"))

    yield from document_chunks(top, heads, cases, scrub=scrub, patches=patches)


def run_parts(run: Run, lines: ResultLines | None = None) -> tuple[
        dict[str, Any], dict[str, dict[str, Any]], Callable[[bytes], bytes]]:
    """What `evalh.document` lays `run`'s document out from: its top-level members, each
    suite's head (its count of results from `lines` when given) and the scrub of secrets."""
    env = secret_env_values()
    top = run.model_dump(mode="json", by_alias=True, exclude={"suites"})
    heads = {name: {**s.model_dump(mode="json", exclude={"cases"}),
                    "results": lines.count(name) if lines is not None else len(s.cases)}
             for name, s in run.suites.items()}
    return top, heads, lambda b: scrub_secrets(b, env=env)


class ResultLines(Protocol):
    """A run's results as compact JSON lines, suite by suite in document order, without the
    models (`evalh.core.run.retained`: streamed from the run's journal)."""

    def count(self, suite: str) -> int: ...
    def lines(self, suite: str) -> Iterator[bytes]: ...


def serialize_run(run: Run) -> bytes:
    """The whole document of `run` as bytes (what `RunStore.write` streams to the file)."""
    patches: list[tuple[int, bytes]] = []
    data = bytearray(b"".join(run_chunks(run, patches)))
    for at, value in patches:
        data[at:at + len(value)] = value
    return bytes(data)


def parse_run(data: bytes, shown: str) -> Run:
    with gc_paused():
        return _parse_run(data, shown)


def parse_raw_run(data: bytes, shown: str) -> dict[str, Any]:
    """The raw dict of a run document, migrated to the current schema but not validated
    (the dashboard lists cases without validating every row)."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RunDocumentError(f"{shown}: not valid JSON: {exc}") from None
    if not isinstance(raw, dict) or not str(raw.get("schema", "")).startswith("evalh.run/"):
        raise RunDocumentError(f"{shown}: not an evalh run document (no `schema: evalh.run/1`)")
    from evalh.migrations import migrate

    return migrate(raw, shown)


def _parse_run(data: bytes, shown: str, drop: tuple[str, ...] = ()) -> Run:
    raw = parse_raw_run(data, shown)
    if drop:
        for suite in (raw.get("suites") or {}).values():
            for c in (suite.get("cases") or []) if isinstance(suite, dict) else []:
                if isinstance(c, dict):
                    for key in drop:
                        c.pop(key, None)
    run = _validated(raw, shown)
    for suite in run.suites.values():
        for result in suite.cases:
            shared_fields_set(result)
    return run


def _validated(raw: dict[str, Any], shown: str) -> Run:
    try:
        from evalh.models import Run

        return Run.model_validate(raw)
    except ValidationError as exc:
        loc, msg = first_validation_error(exc)
        raise RunDocumentError(f"{shown}: invalid run document at {loc}: {msg}") from None


FACTS_LEFT_OUT = ("input", "expected", "output", "trace")
"""What `RunStore.load_facts` leaves out of each result: the bulk of a document, which
comparing two runs never reads (`output_sha256` stands for the output)."""


def _header_run(head: dict[str, Any], shown: str) -> Run:
    raw = light_raw(head)
    if not str(raw.get("schema", "")).startswith("evalh.run/"):
        raise RunDocumentError(f"{shown}: not an evalh run document (no `schema: evalh.run/1`)")
    from evalh.migrations import migrate

    return _validated(migrate(raw, shown), shown)


def read_streamed(path: Path, shown: str, *, header_only: bool = False,
                  drop: tuple[str, ...] = ()) -> Run | None:
    """The run at `path` when its document has the streamed layout (`evalh.document`):
    the header parsed from the first line, then (unless `header_only`) each result
    validated from its own line, without `drop`ped keys, so memory holds the models and one
    line, never the whole document as a dict. None when the document has another layout."""
    try:
        with path.open("rb") as fh:
            head = read_head(fh)
            if head is None:
                return None
            run = _header_run(head, shown)
            if header_only:
                return run

            with gc_paused():
                cases: dict[str, list[CaseResult]] = {name: [] for name in head[HEADS]}
                for name, _, result in iter_results(fh, head, shown, drop):
                    cases[name].append(shared_fields_set(result))
                for name, suite in run.suites.items():
                    suite.cases = cases.get(name, [])
            return run
    except OSError as exc:
        raise RunDocumentError(f"{path}: cannot read: {exc}") from None


def iter_results(fh: IO[bytes], head: dict[str, Any], shown: str,
                 drop: tuple[str, ...] = ()) -> Iterator[tuple[str, int, CaseResult]]:
    """(suite, byte offset of its line, the result validated) of every result of a streamed
    document, in document order, from a file positioned after its header line; `drop`ped
    keys left out. A line that is not a valid result is one `RunDocumentError` naming it."""
    from evalh.models import CaseResult

    seen: dict[str, int] = {}
    for name, at, body in iter_case_lines(fh, head, shown):
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise RunDocumentError(f"{shown}: not valid JSON: {exc}") from None
        if drop and isinstance(obj, dict):
            for key in drop:
                obj.pop(key, None)
        index = seen[name] = seen.get(name, -1) + 1
        try:
            result = CaseResult.model_validate(obj)
        except ValidationError as exc:
            loc, msg = first_validation_error(exc, (f"suites.{name}.cases.{index}",))
            raise RunDocumentError(f"{shown}: invalid run document at {loc}: {msg}") from None
        yield name, at, result


def read_document(path: Path) -> bytes:
    """The whole file of a run document (for the readers of the earlier, indented layout);
    an OS error is a `RunDocumentError` naming it."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise RunDocumentError(f"{path}: cannot read: {exc}") from None


_LEFTOVER_TMP = re.compile(r"^\.(?P<id>.+)\.json\.[A-Za-z0-9_]+\.tmp$")
_LOCK_FILE = re.compile(r"^\.(?P<id>.+)\.lock$")
_JOURNAL = re.compile(r"^(?P<id>.+)\.journal\.jsonl$")
_FINISH_TMP = re.compile(r"^\.\.(?P<id>.+)\.finish\.[A-Za-z0-9_]+\.tmp$")
_FINISH = re.compile(r"^\.(?P<id>.+)\.finish(?:-stage|-doc)?$")
FINISH_SUFFIXES = (".finish", ".finish-stage", ".finish-doc")
"""The files of a document being made from its journal (`evalh.core.run.finish`): `.<run_id>`
then its plan, its staged results and the document itself."""


def _is_complete(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = read_head(fh)  # the streamed layout: its first line says
        raw = head if head is not None else orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(raw, dict) and raw.get("status") == "complete"


class RunStore:
    """Run documents in one directory, addressed by run id (or by path to a .json file)."""

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = Path(runs_dir)

    def path_for(self, run_id: str) -> Path:
        return self.runs_dir / f"{validate_run_id(run_id)}.json"

    def journal_path(self, run_id: str) -> Path:
        return self.runs_dir / f"{validate_run_id(run_id)}.journal.jsonl"

    def journal(self, run_id: str) -> Journal:
        return Journal(self.journal_path(run_id))

    def finish_paths(self, run_id: str) -> tuple[Path, Path, Path]:
        """The plan, the staged results and the document of a finish that consumes the
        run's journal as it writes the document (`evalh.core.run.finish`)."""
        stem = f".{validate_run_id(run_id)}"
        plan, stage, doc = (self.runs_dir / f"{stem}{suffix}" for suffix in FINISH_SUFFIXES)
        return plan, stage, doc

    def lock_path(self, run_id: str) -> Path:
        return self.runs_dir / f".{validate_run_id(run_id)}.lock"

    def lock(self, run_id: str, *, wait_s: float = 0.0) -> RunLock:
        """Hold run `run_id` for this process (re-entrant); `RunInUse` (exit 2) naming the
        holder's pid when another live process holds it."""
        path = self.lock_path(run_id)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_failed(path.parent, exc) from None
        return RunLock.acquire(path, run_id, wait_s=wait_s)

    def write(self, run: Run, lines: ResultLines | None = None) -> Path:
        """Write `run`'s document atomically (its results from `lines` when given, see
        `run_chunks`)."""
        path = self.path_for(run.run_id)
        # A process running the run already holds it; anyone else (rejudge) holds it for the
        # write, so a sweep never takes its temporary file for a dead run's.
        lock = self.lock(run.run_id, wait_s=30)
        try:
            patches: list[tuple[int, bytes]] = []
            atomic_write_chunks(path, run_chunks(run, patches, lines=lines), patches=patches)
        finally:
            lock.release()
        return path

    def sweep(self, own: str | None = None) -> list[Path]:
        """Remove what finished or dead runs left behind: temporary files of a document write
        a kill cut short, the journal of a run whose document is complete, lock files of
        dead processes. The files of a document being made from its journal
        (`evalh.core.run.finish`) stay while they hold results the journal no longer does.
        A run another live process holds is left alone; so is anything not
        beside a run (a file a user keeps here). `own` is a run this process holds: its
        leftovers are dead too. Best effort: what cannot be removed stays. Returns what was
        removed."""
        try:
            names = [p.name for p in self.runs_dir.iterdir()]
        except OSError:
            return []
        present = set(names)
        by_run: dict[str, list[str]] = {}
        for name in names:
            for pattern in (_LEFTOVER_TMP, _JOURNAL, _LOCK_FILE, _FINISH_TMP, _FINISH):
                m = pattern.fullmatch(name)
                if m:
                    by_run.setdefault(m.group("id"), []).append(name)
                    break
        removed: list[Path] = []
        for run_id, found in sorted(by_run.items()):
            if not _RUN_ID.fullmatch(run_id) or ".." in run_id or run_id.endswith(SIDECAR_SUFFIXES):
                continue
            doc, journal = f"{run_id}.json", f"{run_id}.journal.jsonl"
            if not ({doc, journal, f".{run_id}.lock"} & present):
                continue
            lock = None
            if run_id != own:
                try:
                    lock = RunLock.try_acquire(self.runs_dir / f".{run_id}.lock")
                except WriteFailed:
                    continue
                if lock is None:
                    continue  # a live process holds it
            try:
                doomed = [n for n in found if _LEFTOVER_TMP.fullmatch(n) or _FINISH_TMP.fullmatch(n)]
                complete = doc in present and _is_complete(self.runs_dir / doc)
                if journal in found and complete:
                    doomed.append(journal)
                # a finish's staged files without its plan are a finish killed before it
                # began consuming the journal (the journal is whole); with the plan and no
                # complete document, they hold results: `evalh run --resume` completes it
                if complete or f".{run_id}.finish" not in found:
                    doomed += [n for n in found if _FINISH.fullmatch(n)]
                for name in doomed:
                    with contextlib.suppress(OSError):
                        (self.runs_dir / name).unlink()
                        removed.append(self.runs_dir / name)
            finally:
                if lock is not None:
                    lock.release()  # removes the dead holder's lock file too
        return removed

    def resolve(self, ref: str) -> Path:
        """A run id, or a path to a run document (anything ending in .json)."""
        if ref.endswith(".json"):
            path = Path(ref)
            if path.is_file():
                return path
            if os.sep not in ref and "/" not in ref:
                path = self.runs_dir / ref
                if path.is_file():
                    return path
            raise RunNotFound(f"run document not found: {ref}")
        path = self.path_for(ref)
        if not path.is_file():
            raise RunNotFound(f"no run {ref!r} in {self.runs_dir}")
        return path

    def load(self, ref: str) -> Run:
        """The whole run, every result validated."""
        return self._load(ref)

    def load_facts(self, ref: str) -> Run:
        """The run with each result's facts (status, scores, cost, latency, digests) but not
        its input, expected value, output or trace (`FACTS_LEFT_OUT`): what a comparison
        pairs, in a fraction of the memory."""
        return self._load(ref, drop=FACTS_LEFT_OUT)

    def load_header(self, ref: str) -> Run:
        """The run without its results (every suite's `cases` empty): run facts, config
        snapshot, summary and each suite's aggregates, arms, details, metrics and contrasts.
        A document in the streamed layout is read up to its first line only (its results
        are not read, a damaged result does not stop it); one of the earlier layout is
        parsed whole and its results dropped unvalidated."""
        path = self.resolve(ref)
        run = read_streamed(path, str(path), header_only=True)
        if run is not None:
            return run
        data = read_document(path)
        with gc_paused():
            raw = parse_raw_run(data, str(path))
            for suite in (raw.get("suites") or {}).values():
                if isinstance(suite, dict):
                    suite["cases"] = []
            return _validated(raw, str(path))

    def _load(self, ref: str, drop: tuple[str, ...] = ()) -> Run:
        path = self.resolve(ref)
        run = read_streamed(path, str(path), drop=drop)
        if run is not None:
            return run
        data = read_document(path)
        with gc_paused():
            return _parse_run(data, str(path), drop)

    def list_ids(self) -> list[str]:
        """Run ids in the directory, oldest first (ids sort by time)."""
        if not self.runs_dir.is_dir():
            return []
        ids = []
        for p in self.runs_dir.glob("*.json"):
            stem = p.name[: -len(".json")]
            if _RUN_ID.fullmatch(stem) and ".." not in stem and not stem.endswith(SIDECAR_SUFFIXES):
                ids.append(stem)
        return sorted(ids)

    def iter_runs(self) -> Iterator[Run]:
        """Every readable run, oldest first; unreadable documents are skipped."""
        for run_id in self.list_ids():
            try:
                yield self.load(run_id)
            except (RunDocumentError, RunNotFound):
                continue

    def latest(self) -> Run | None:
        ids = self.list_ids()
        return self.load(ids[-1]) if ids else None
