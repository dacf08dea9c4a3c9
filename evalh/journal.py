"""A run's journal (`<run_id>.journal.jsonl`): its finished results, one JSON line each,
appended as each finishes, so a crash loses at most the cases in flight; read back by
`evalh run --resume` and by the runner. A line a kill cut short is dropped."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from evalh.atomic import write_all, write_failed
from evalh.errors import RunDocumentError, WriteFailed, first_validation_error
from evalh.jsonio import jsonl_line
from evalh.redact import scrub_secrets, secret_env_values

if TYPE_CHECKING:
    from evalh.models import CaseResult


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
        return self._write_line(jsonl_line(obj))

    def _write_line(self, raw: bytes) -> tuple[int, int]:
        assert self._fd is not None
        line = scrub_secrets(raw, env=self._secrets)
        try:
            write_all(self._fd, line)
            end = os.lseek(self._fd, 0, os.SEEK_CUR)  # O_APPEND: just after this line
        except OSError as exc:
            raise write_failed(self.path, exc) from None
        return end - len(line), len(line)

    def append(self, suite: str, result: CaseResult) -> tuple[int, int]:
        """Journal `result`; (byte offset, length) of its line, where the runner reads it back
        (`evalh.core.run.retained`: the run's document is streamed from these lines)."""
        # Encoded by pydantic's serializer straight to JSON, not through a dict of the result
        # (`model_dump`) encoded again: the same bytes (tests/test_lean_path_golden.py), one pass.
        at = self._write_line(b'{"suite":' + orjson.dumps(suite) + b',"result":'
                              + result.__pydantic_serializer__.to_json(result) + b"}\n")
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
