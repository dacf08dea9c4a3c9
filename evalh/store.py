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
import errno
import os
import re
import secrets
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from evalh.document import HEADS, document_chunks, iter_case_lines, light_raw, read_head
from evalh.errors import (
    InvalidRunId,
    RunDocumentError,
    RunInUse,
    RunNotFound,
    WriteFailed,
    first_validation_error,
)
from evalh.gcpause import gc_paused
from evalh.jsonio import jsonl_line
from evalh.redact import scrub_secrets, secret_env_values

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


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def resolve_runs_dir(option: Path | str | None, root: Path | None = None, configured: str | None = None) -> Path:
    """--runs-dir, else $EVAL_RUNS_DIR, else the config's `runs_dir`, else ./eval_runs."""
    chosen = option or os.environ.get(RUNS_DIR_ENV) or configured or DEFAULT_RUNS_DIR
    path = Path(chosen)
    if not path.is_absolute() and root is not None and option is None and not os.environ.get(RUNS_DIR_ENV):
        path = root / path
    return path


_BAD_PATH = frozenset({
    errno.ENOTDIR, errno.EISDIR, errno.ENOENT, errno.EEXIST, errno.ENAMETOOLONG, errno.ELOOP,
    errno.EINVAL,
})
"""OS errors that say the path given is wrong (bad input, exit 2), not that the system
refused to store the data (disk full, read-only, quota, permission: exit 4)."""


def write_failed(path: Path | str, exc: OSError) -> WriteFailed:
    """The one-line error for a write the OS refused: the path and the OS's reason."""
    if isinstance(exc, WriteFailed):
        return exc
    reason = exc.strerror or str(exc)
    return WriteFailed(f"{path}: cannot write: {reason}", exit_code=2 if exc.errno in _BAD_PATH else 4)


def current_umask() -> int:
    """The process's umask, read without changing it (Linux: /proc/self/status); elsewhere
    read once by setting and restoring it."""
    global _UMASK
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    if _UMASK is None:
        _UMASK = os.umask(0o022)
        os.umask(_UMASK)
    return _UMASK


_UMASK: int | None = None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically: temp file, fsync, rename, fsync the directory.

    The file gets the permissions a newly created file has under the umask (mkstemp's
    0600 would hide a report from the web server or CI step meant to read it). An OS error
    is a `WriteFailed` naming `path`; the temporary file is removed."""
    atomic_write_chunks(path, [data])


def run_chunks(run: Run, patches: list[tuple[int, bytes]] | None = None, *,
               lines: ResultLines | None = None) -> Iterator[bytes]:
    """The document of `run` in the streamed layout (`evalh.document`), a few lines at a
    time, secrets scrubbed: no copy of the whole run as one dict or one buffer. `patches`
    receives what fills in the header's line index once the lines are made. `lines` (the
    runner's, from its journal) gives each suite's count and result lines instead of
    `run.suites[name].cases`."""
    env = secret_env_values()
    top = run.model_dump(mode="json", by_alias=True, exclude={"suites"})
    heads = {name: {**s.model_dump(mode="json", exclude={"cases"}),
                    "results": lines.count(name) if lines is not None else len(s.cases)}
             for name, s in run.suites.items()}

    def cases(name: str) -> Iterator[bytes]:
        if lines is not None:
            yield from lines.lines(name)
            return
        for c in run.suites[name].cases:
            yield orjson.dumps(c.model_dump(mode="json"))

    yield from document_chunks(top, heads, cases, scrub=lambda b: scrub_secrets(b, env=env), patches=patches)


class ResultLines(Protocol):
    """A run's results as compact JSON lines, suite by suite in document order, without the
    models (`evalh.core.retained`: streamed from the run's journal)."""

    def count(self, suite: str) -> int: ...
    def lines(self, suite: str) -> Iterator[bytes]: ...


def atomic_write_chunks(path: Path, chunks: Iterable[bytes], *, buffer: int = 1 << 20,
                        patches: list[tuple[int, bytes]] | None = None) -> None:
    """`atomic_write_bytes` for data made as it is written (the one writer of both): the chunks are gathered into
    writes of about `buffer` bytes, so memory holds one buffer, never the whole file. Then
    each (position, bytes) of `patches` (filled while the chunks were made) is written in
    place, before the file is synced and renamed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise write_failed(path, exc) from None
    try:
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o666 & ~current_umask())
            pending: list[bytes] = []
            size = 0
            for chunk in chunks:
                pending.append(chunk)
                size += len(chunk)
                if size >= buffer:
                    _write_all(fd, b"".join(pending))
                    pending, size = [], 0
            _write_all(fd, b"".join(pending))
            for at, value in patches or ():
                os.pwrite(fd, value, at)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise write_failed(path, exc) from None
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


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


_ALL_FIELDS: dict[type[BaseModel], set[str]] = {}


def _complete(model: BaseModel) -> None:
    cls = type(model)
    names = _ALL_FIELDS.get(cls)
    if names is None:
        names = _ALL_FIELDS[cls] = set(cls.model_fields)
    object.__setattr__(model, "__pydantic_fields_set__", names)


def shared_fields_set(result: CaseResult) -> CaseResult:
    """Give `result` and its scores the one set of field names their class shares.

    Pydantic keeps per model instance the set of the fields that were given: 2.3 KB for a
    result's two dozen fields and 0.7 KB per score, more than the values in most runs (a
    loaded result took 5.6 KB, 2.6 KB with this). A result read from a document has every
    field given, and nothing in evalh asks which fields a result was given
    (`exclude_unset` and `model_fields_set` serve config models only): one complete set per
    class says the same for all of them. Setting a field adds its name to the set, where it
    already is."""
    _complete(result)
    for score in result.scores:
        _complete(score)
    if result.error is not None:
        _complete(result.error)
    return result


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


class JournalHeader(BaseModel):
    """The first line of a journal: what `evalh run --resume` rebuilds the plan from."""

    model_config = ConfigDict(extra="allow", strict=True)

    run_id: str | None = None
    label: str | None = None
    seed: int | None = None
    started_at: str | None = None
    config: dict[str, Any] = {}
    suites: list[str] | None = None
    derived_from: dict[str, Any] | None = None
    datasets: dict[str, str] = {}
    options: dict[str, Any] = {}


class Journal:
    """Append-only record of finished results, one JSON line each, written as it finishes.

    Each line goes to the file in one unbuffered write. A line a kill cut short (the file
    does not end with a newline) is dropped when the journal is read, and cut off when it
    is opened again, so the next line starts on a line of its own."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._secrets: list[str] | None = None

    def open(self, header: dict[str, Any]) -> None:
        # read once: scanning the environment per line cost more than the rest of a case
        self._secrets = secret_env_values()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
            fresh = _drop_torn_tail(self._fd) == 0
        except OSError as exc:
            self.close()
            raise write_failed(self.path, exc) from None
        if fresh:
            try:
                self._write({"header": header})
            except WriteFailed:  # a journal without its header cannot be resumed: none at all
                self.close()
                with contextlib.suppress(OSError):
                    self.path.unlink()
                raise

    def _write(self, obj: dict[str, Any]) -> tuple[int, int]:
        """Append one line; (its byte offset, its length)."""
        assert self._fd is not None
        line = scrub_secrets(jsonl_line(obj), env=self._secrets)
        try:
            _write_all(self._fd, line)
            end = os.lseek(self._fd, 0, os.SEEK_CUR)  # O_APPEND: just after this line
        except OSError as exc:
            raise write_failed(self.path, exc) from None
        return end - len(line), len(line)

    def append(self, suite: str, result: CaseResult) -> tuple[int, int]:
        """Journal `result`; (byte offset, length) of its line, where the runner reads it back
        (`evalh.core.retained`: the run's document is streamed from these lines)."""
        at = self._write({"suite": suite, "result": result.model_dump(mode="json")})
        shared_fields_set(result)  # a caller that keeps it keeps 3 KB less
        return at

    def note_prepared(self, suite: str, scorer: str, info: dict[str, Any]) -> None:
        """What a scorer's set-up before the suite found (a judge's calibration), so a
        resumed run uses it instead of paying for it again."""
        self._write({"suite": suite, "prepared": {"scorer": scorer, "info": info}})

    def note_batch(self, record: dict[str, Any]) -> None:
        """A batch submitted to a provider's batch API (its id, endpoint and custom_ids), so
        a resumed run re-attaches to it instead of submitting it again (evalh.providers.batch)."""
        self._write({"batch": record})

    @staticmethod
    def batch_notes(path: Path) -> list[dict[str, Any]]:
        """Every `note_batch` record of the journal at `path`, oldest first ([] without one)."""
        try:
            data = path.read_bytes()
        except OSError:
            return []
        lines = data.split(b"\n")
        lines.pop()  # a torn last line is not a record
        notes = []
        for line in lines:
            if line.startswith(b'{"batch":'):
                with contextlib.suppress(orjson.JSONDecodeError):
                    obj = orjson.loads(line)
                    if isinstance(obj.get("batch"), dict):
                        notes.append(obj["batch"])
        return notes

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    @staticmethod
    def read(path: Path) -> tuple[dict[str, Any] | None, list[tuple[str, CaseResult]]]:
        """The header and every result line (see `read_all`)."""
        header, results, _ = Journal.read_all(path)
        return header, results

    @staticmethod
    def read_all(path: Path) -> tuple[dict[str, Any] | None, list[tuple[str, CaseResult]], dict[str, dict[str, Any]]]:
        """The header, every result line, and what scorers' set-up recorded (suite → scorer
        → info, the latest line winning). A torn last line (no newline after it) is
        ignored; any other line that is not a valid header, result or set-up record is a
        `RunDocumentError` naming the file and line."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise RunDocumentError(f"{path}: cannot read the journal: {exc.strerror or exc}") from None
        lines = data.split(b"\n")
        lines.pop()  # b"" after the last newline, or the line a kill cut short
        header: dict[str, Any] | None = None
        results: list[tuple[str, CaseResult]] = []
        prepared: dict[str, dict[str, Any]] = {}
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise RunDocumentError(f"{where}: not valid JSON: {exc}") from None
            if isinstance(obj, dict) and "header" in obj:
                if header is None:
                    header = _journal_header(obj["header"], where)
                continue
            if isinstance(obj, dict) and "prepared" in obj:
                note = obj["prepared"]
                if not (isinstance(obj.get("suite"), str) and isinstance(note, dict)
                        and isinstance(note.get("scorer"), str) and isinstance(note.get("info"), dict)):
                    raise RunDocumentError(
                        f'{where}: invalid journal line: expected {{"suite": ..., "prepared": '
                        '{"scorer": ..., "info": {...}}}'
                    )
                prepared.setdefault(obj["suite"], {})[note["scorer"]] = note["info"]
                continue
            if isinstance(obj, dict) and "batch" in obj:  # a batch's id (Journal.batch_notes)
                continue
            results.append(_journal_result(obj, where))
        return header, results, prepared


def _journal_header(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise RunDocumentError(f"{where}: invalid journal header: not a JSON object")
    try:
        JournalHeader.model_validate(raw)
    except ValidationError as exc:
        loc, msg = first_validation_error(exc)
        raise RunDocumentError(f"{where}: invalid journal header at {loc}: {msg}") from None
    return raw


def _journal_result(obj: Any, where: str) -> tuple[str, CaseResult]:
    if not isinstance(obj, dict) or not isinstance(obj.get("suite"), str) or not isinstance(obj.get("result"), dict):
        raise RunDocumentError(f'{where}: invalid journal line: expected {{"suite": ..., "result": {{...}}}}')
    from evalh.models import CaseResult

    try:
        return obj["suite"], shared_fields_set(CaseResult.model_validate(obj["result"]))
    except ValidationError as exc:
        loc, msg = first_validation_error(exc, ("result",))
        raise RunDocumentError(f"{where}: invalid journal result at {loc}: {msg}") from None


def _drop_torn_tail(fd: int) -> int:
    """Cut a journal back to its last complete line; its size after."""
    size = os.lseek(fd, 0, os.SEEK_END)
    end = size
    while end > 0:
        start = max(0, end - 65536)
        os.lseek(fd, start, os.SEEK_SET)  # (writes append whatever the offset: O_APPEND)
        block = os.read(fd, end - start)
        if start + len(block) == size and block.endswith(b"\n"):
            return size  # ends with a newline: nothing torn
        newline = block.rfind(b"\n")
        if newline >= 0:
            os.ftruncate(fd, start + newline + 1)
            return start + newline + 1
        end = start
    if size:
        os.ftruncate(fd, 0)
    return 0


# ---------------------------------------------------------------------------- run locks


class RunLock:
    """An exclusive `flock` on `.<run_id>.lock` in the runs directory, held by this process.

    Re-entrant within a process (taking it again counts up); released when the last holder
    releases it (or the object is collected), which removes the lock file. The file holds
    the holder's pid, for the message another process gets."""

    _held: weakref.WeakValueDictionary[str, RunLock] = weakref.WeakValueDictionary()
    _guard = threading.Lock()

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._key = os.path.abspath(path)
        self._fd: int | None = fd
        self._depth = 1

    @classmethod
    def acquire(cls, path: Path, run_id: str, *, wait_s: float = 0.0) -> RunLock:
        """The lock, or `RunInUse` naming the holder's pid once `wait_s` has passed."""
        lock = cls.try_acquire(path, reenter=True)
        deadline = time.monotonic() + wait_s
        while lock is None and time.monotonic() < deadline:
            time.sleep(0.05)
            lock = cls.try_acquire(path, reenter=True)
        if lock is None:
            pid = _holder_pid(path)
            who = f"pid {pid}" if pid else "another process"
            raise RunInUse(
                f"run {run_id} is in use by another evalh process ({who}, lock {path}): "
                "wait for it to finish, or stop it first"
            )
        return lock

    @classmethod
    def try_acquire(cls, path: Path, *, reenter: bool = False) -> RunLock | None:
        """The lock if no live process holds it; None otherwise (also when this process
        holds it, unless `reenter`)."""
        key = os.path.abspath(path)  # one process, one lock, however the directory was named
        with cls._guard:
            held = cls._held.get(key)
            if held is not None and held._fd is not None:
                if not reenter:
                    return None
                held._depth += 1
                return held
            fd = _lock_file(path)
            if fd is None:
                return None
            lock = cls._held[key] = RunLock(path, fd)
            return lock

    def release(self) -> None:
        with self._guard:
            self._depth -= 1
            if self._depth <= 0:
                self._drop()

    def _drop(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                os.unlink(self.path)  # still ours: no one can be waiting on a file we remove
        with contextlib.suppress(OSError):
            os.close(fd)
        if self._held.get(self._key) is self:
            del self._held[self._key]

    def __del__(self) -> None:  # a plan built but never run (dry run, an error) lets go
        with contextlib.suppress(Exception):
            self._drop()


def _lock_file(path: Path) -> int | None:
    """An fd holding the exclusive lock on `path` (created if need be), or None if another
    process holds it. Raises `WriteFailed` when the lock file cannot be created. Where
    `flock` does not exist (Windows) the file is created but nothing is locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        fcntl = None  # type: ignore[assignment]

    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except OSError as exc:
            raise write_failed(path, exc) from None
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError as exc:
            os.close(fd)
            raise write_failed(path, exc) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                from evalh.context import process_pid

                os.write(fd, f"{process_pid()}\n".encode())
            return fd
        os.close(fd)  # its holder removed that file as we took it: lock the new one


def _holder_pid(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="ascii").strip() or 0) or None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


_LEFTOVER_TMP = re.compile(r"^\.(?P<id>.+)\.json\.[A-Za-z0-9_]+\.tmp$")
_LOCK_FILE = re.compile(r"^\.(?P<id>.+)\.lock$")
_JOURNAL = re.compile(r"^(?P<id>.+)\.journal\.jsonl$")


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
        dead processes. A run another live process holds is left alone; so is anything not
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
            for pattern in (_LEFTOVER_TMP, _JOURNAL, _LOCK_FILE):
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
                doomed = [n for n in found if _LEFTOVER_TMP.fullmatch(n)]
                if journal in found and doc in present and _is_complete(self.runs_dir / doc):
                    doomed.append(journal)
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
