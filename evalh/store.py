"""The run store: one self-contained JSON document per run in `eval_runs/`.

Writes are atomic (temporary file in the same directory, fsync, rename), so a reader never
sees half a document. While a run is in flight its finished results are appended to a
journal beside it (`<run_id>.journal.jsonl`), so a crash loses at most the cases in flight.
Run ids are generated, sortable by time, and validated before they touch the filesystem.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson
from pydantic import ValidationError

from evalh.errors import InvalidRunId, RunDocumentError, RunNotFound, first_validation_error
from evalh.gcpause import gc_paused
from evalh.models import CaseResult, Run
from evalh.snapshot import scrub_secrets, secret_env_values

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


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically: temp file, fsync, rename, fsync the directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def serialize_run(run: Run) -> bytes:
    return scrub_secrets(run.to_json_bytes())


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


def _parse_run(data: bytes, shown: str) -> Run:
    raw = parse_raw_run(data, shown)
    try:
        return Run.model_validate(raw)
    except ValidationError as exc:
        loc, msg = first_validation_error(exc)
        raise RunDocumentError(f"{shown}: invalid run document at {loc}: {msg}") from None


class Journal:
    """Append-only record of finished results, one JSON line each, flushed per line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[bytes] | None = None
        self._secrets: list[str] | None = None

    def open(self, header: dict[str, Any]) -> None:
        fresh = not self.path.exists()
        # read once: scanning the environment per line cost more than the rest of a case
        self._secrets = secret_env_values()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("ab")
        if fresh:
            self._write({"header": header})

    def _write(self, obj: dict[str, Any]) -> None:
        assert self._fh is not None
        self._fh.write(scrub_secrets(orjson.dumps(obj), env=self._secrets) + b"\n")
        self._fh.flush()

    def append(self, suite: str, result: CaseResult) -> None:
        self._write({"suite": suite, "result": result.model_dump(mode="json")})

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    @staticmethod
    def read(path: Path) -> tuple[dict[str, Any] | None, list[tuple[str, CaseResult]]]:
        """The header and every complete result line; a torn last line is ignored."""
        header: dict[str, Any] | None = None
        results: list[tuple[str, CaseResult]] = []
        for line in path.read_bytes().splitlines():
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # the line a kill cut short
            if "header" in obj:
                header = obj["header"]
            else:
                results.append((obj["suite"], CaseResult.model_validate(obj["result"])))
        return header, results


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

    def write(self, run: Run) -> Path:
        path = self.path_for(run.run_id)
        atomic_write_bytes(path, serialize_run(run))
        return path

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
        path = self.resolve(ref)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise RunDocumentError(f"{path}: cannot read: {exc}") from None
        return parse_run(data, str(path))

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
