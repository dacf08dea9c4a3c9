"""The ratings store: ratings bound to content, not to runs (`evalh.ratings/1`).

A rating is kept per (request digest, rubric digest, rater, item, field, kind), where an
item is the whole request (`request`), one claim (`claim:<id>`) or one quality dimension
(`dimension:<name>`). It therefore applies to every run whose blinded request is
byte-identical and whose rubric is the same — a re-run that leaves an item unchanged keeps
its ratings; a changed item's ratings are stale for the new content (reported, never used).

The store is a folder beside the runs, `<runs dir>/ratings/`, of append-only files: each
import (or each save of the labelling page) writes one new file atomically and no file is
ever rewritten. A file starts with a header line `{"schema", "records", "sha256"}` and
holds that many records, one a line; `sha256` lists the SHA-256 of each record line's
bytes, in order. Loading validates every file (schema, every record, the count, every
record against its digest), so a truncated file, or one with a record edited, added,
removed or moved — even keeping the count — is refused with its name and line. A file of
the first layout (`evalh.ratings/1`, no digests) is still read, its count checked, and
counted as unverified (`RatingsStore.unverified`). The digests are written by evalh, not
signed: whoever rewrites a file *and* its header is not caught by them; `digest()` (shown
by `evalh label report`) covers every file, to be kept apart and compared. A later record of
the same key replaces an earlier one only when it says `replaces: true` (`--replace`).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalh.atomic import atomic_write_bytes
from evalh.errors import first_validation_error
from evalh.labels.models import Label, LabelError, label_key
from evalh.redact import scrub_secrets

RATINGS_SCHEMA = "evalh.ratings/2"
RATINGS_SCHEMAS = ("evalh.ratings/1", RATINGS_SCHEMA)
"""Every layout read: /1 without record digests (unverified), /2 with them."""
RATINGS_DIR = "ratings"
_NAME = re.compile(r"\d{8}T\d{6}\d*Z-[0-9a-f]{8}\.jsonl")

Key = tuple[str, str, str, str, str, str]
"""(request_sha256, rubric_sha256, rater, item, field, kind)."""


class Origin(BaseModel):
    """Where the rated request came from when it was rated (to report stale ratings)."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    suite: str
    case_id: str
    arm: str
    attempt: int


class RatingRecord(BaseModel):
    """One value one rater gave one item of one request, under one rubric."""

    model_config = ConfigDict(extra="forbid")

    request_sha256: str = Field(min_length=1)
    rubric_sha256: str = Field(min_length=1)
    rater: str = Field(min_length=1)
    item: str = Field(min_length=1)
    """`request`, `claim:<id>` or `dimension:<name>`."""
    field: str = Field(min_length=1)
    """The request field, the claim field (`truth`, `grounding`, …), or the dimension's name."""
    value: Label
    """Null is an explicit abstention ("cannot tell")."""
    kind: Literal["rating", "adjudication"] = "rating"
    """`adjudication` settles a disputed item; agreement is measured on ratings only."""
    replaces: bool = False
    note: str | None = None
    labelled_at: str | None = None
    source: str | None = None
    """The file and line (or the labelling page) it came from."""
    imported_at: str | None = None
    origin: Origin | None = None

    def key(self) -> Key:
        return (self.request_sha256, self.rubric_sha256, self.rater, self.item, self.field, self.kind)

    def same_value(self, other: RatingRecord) -> bool:
        return label_key(self.value) == label_key(other.value) and type(self.value) is type(other.value)


@dataclass
class RatingsStore:
    """Every record of the store folder, validated, with the effective rating per key."""

    folder: Path
    records: list[RatingRecord] = field(default_factory=list)
    current: dict[Key, RatingRecord] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    """Each file's name → the SHA-256 of its bytes."""
    unverified: list[str] = field(default_factory=list)
    """Files of the first layout (no record digests): an edit of their records is not caught."""

    def digest(self) -> str:
        """SHA-256 over every file's name and digest: keep it apart to check later that no
        file was rewritten, removed or added."""
        return hashlib.sha256(orjson.dumps(sorted(self.files.items()))).hexdigest()

    def summary(self) -> dict[str, object]:
        return {"files": len(self.files), "records": len(self.records), "sha256": self.digest(),
                "unverified_files": sorted(self.unverified)}

    def add(self, rec: RatingRecord, where: str) -> None:
        prior = self.current.get(rec.key())
        if prior is not None and not rec.same_value(prior) and not rec.replaces:
            raise LabelError(f"{where}: changes {rec.rater}'s rating of {rec.item} {rec.field} without `replaces`")
        self.records.append(rec)
        self.current[rec.key()] = rec

    def by_request(self, rubric: str | None = None) -> dict[str, list[RatingRecord]]:
        out: dict[str, list[RatingRecord]] = {}
        for rec in self.current.values():
            if rubric is None or rec.rubric_sha256 == rubric:
                out.setdefault(rec.request_sha256, []).append(rec)
        return out

    def append(self, records: Iterable[RatingRecord]) -> Path | None:
        """Write `records` as one new file (atomically), then hold them. None when empty."""
        recs = list(records)
        if not recs:
            return None
        for rec in recs:  # check the whole batch before writing anything
            prior = self.current.get(rec.key())
            if prior is not None and not rec.same_value(prior) and not rec.replaces:
                raise LabelError(f"{rec.source}: changes {rec.rater}'s rating of {rec.item} without `replaces`")
        path = self.folder / f"{_stamp()}-{secrets.token_hex(4)}.jsonl"
        lines = [scrub_secrets(orjson.dumps(_compact(r))) for r in recs]  # as stored: digests of these bytes
        header = {"schema": RATINGS_SCHEMA, "records": len(recs),
                  "sha256": [hashlib.sha256(line).hexdigest() for line in lines]}
        data = b"".join(line + b"\n" for line in [orjson.dumps(header), *lines])
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data)
        self.files[path.name] = hashlib.sha256(data).hexdigest()
        for rec in recs:
            self.records.append(rec)
            self.current[rec.key()] = rec
        return path


def _compact(r: RatingRecord) -> dict[str, object]:
    """The record without its unset optional keys (a null `value` is kept: an abstention)."""
    d = r.model_dump(mode="json")
    return {k: v for k, v in d.items() if v is not None or k == "value"}


def _stamp() -> str:
    """UTC time to the nanosecond: files sort in the order they were written."""
    ns = time.time_ns()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(ns // 1_000_000_000)) + f"{ns % 1_000_000_000:09d}Z"


def ratings_folder(runs_dir: Path) -> Path:
    return Path(runs_dir) / RATINGS_DIR


def load_store(runs_dir: Path) -> RatingsStore:
    """Every ratings file beside the runs, validated (see the module doc)."""
    folder = ratings_folder(runs_dir)
    store = RatingsStore(folder=folder)
    if not folder.is_dir():
        return store
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue  # a temporary file of a write in progress
        if not _NAME.fullmatch(path.name):
            raise LabelError(f"{path}: not a ratings file (names are <time>-<hex>.jsonl); move it out of {folder}")
        _load_file(path, store)
    return store


def _load_file(path: Path, store: RatingsStore) -> None:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LabelError(f"{path}: cannot read: {exc}") from None
    lines = data.splitlines()
    try:
        header = orjson.loads(lines[0]) if lines else None
    except orjson.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("schema") not in RATINGS_SCHEMAS \
            or not isinstance(header.get("records"), int):
        raise LabelError(f"{path}:1: not an evalh ratings file (no `schema: {RATINGS_SCHEMA}` header)")
    body = [(i, line) for i, line in enumerate(lines[1:], start=2) if line.strip()]
    if len(body) != header["records"]:
        raise LabelError(f"{path}: holds {len(body)} records, its header says {header['records']}: "
                         "truncated or edited")
    listed = header.get("sha256")
    digests: list[object] = listed if isinstance(listed, list) else []
    if header["schema"] == RATINGS_SCHEMA:
        if len(digests) != len(body):
            raise LabelError(f"{path}:1: the header does not list one SHA-256 per record: edited")
    else:
        store.unverified.append(path.name)
    for i, (lineno, line) in enumerate(body):
        where = f"{path}:{lineno}"
        if header["schema"] == RATINGS_SCHEMA and hashlib.sha256(line).hexdigest() != digests[i]:
            raise LabelError(f"{where}: the record does not match its SHA-256 in the header: edited "
                             "(a rating is corrected by a later record with `replaces`, never in place)")
        try:
            rec = RatingRecord.model_validate(orjson.loads(line))
        except orjson.JSONDecodeError as exc:
            raise LabelError(f"{where}: malformed JSON line: {exc}") from None
        except ValidationError as exc:
            loc, msg = first_validation_error(exc)
            raise LabelError(f"{where}: {loc or 'record'}: {msg}") from None
        store.add(rec, where)
    store.files[path.name] = hashlib.sha256(data).hexdigest()
