"""The label sidecar (`evalh.labels/1`): what was exported for labelling and what came back.

One file beside each run, `eval_runs/<run_id>.labels.json`, written atomically. The run
document itself is never modified: labels are a later judgment about a finished run. The
sidecar holds the request registry (opaque request id → suite, case, arm, attempt, and the
digest of the blinded request), a record of every export (rubric and manifest digests), and
every imported rating exactly as it was given — original human labels stay intact after
adjudication, which is a rating of its own kind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalh.errors import EvalhError, first_validation_error
from evalh.jsonio import document_bytes
from evalh.snapshot import scrub_secrets
from evalh.store import atomic_write_bytes, validate_run_id

LABELS_SCHEMA = "evalh.labels/1"
Label = str | bool | int | float | None


class LabelError(EvalhError):
    """A ratings file or label sidecar that cannot be used (stale, unknown, malformed)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class RequestRef(_Model):
    """Where one blinded request came from. Never exported: it would unblind the request."""

    suite: str
    case_id: str
    arm: str
    attempt: int
    sha256: str
    """SHA-256 of the blinded request (input and output only) when it was last exported."""


class ExportRecord(_Model):
    """One `evalh export-requests`."""

    exported_at: str
    rubric_sha256: str
    """SHA-256 of the rubric's bytes: ratings must carry it to be accepted."""
    rubric_name: str | None = None
    manifest_sha256: str
    """Digest of the export's (request id, request digest) list and rubric digest."""
    requests: int
    suites: list[str] = Field(default_factory=list)


class Rating(_Model):
    """One label one rater gave one request, bound to the request and rubric digests."""

    request_id: str
    request_sha256: str
    rubric_sha256: str
    rater: str
    label: Label
    """Any JSON scalar; null is an explicit abstention (it never counts as agreement with a value)."""
    kind: Literal["rating", "adjudication"] = "rating"
    """`adjudication` settles a disputed request; agreement is measured on ratings only."""
    note: str | None = None
    labelled_at: str | None = None
    source: str | None = None
    """The file (and line) it was imported from."""
    imported_at: str | None = None


class LabelStore(_Model):
    """The whole sidecar."""

    schema_: str = Field(default=LABELS_SCHEMA, alias="schema")
    run_id: str
    requests: dict[str, RequestRef] = Field(default_factory=dict)
    exports: list[ExportRecord] = Field(default_factory=list)
    ratings: list[Rating] = Field(default_factory=list)

    def current_rubric(self) -> str | None:
        """The rubric digest of the latest export, or None before any export."""
        return self.exports[-1].rubric_sha256 if self.exports else None


def sidecar_path(run_path: Path, run_id: str) -> Path:
    """`<dir of the run document>/<run_id>.labels.json`, with a validated run id."""
    return run_path.parent / f"{validate_run_id(run_id)}.labels.json"


def load_labels(path: Path, run_id: str) -> LabelStore:
    """The sidecar at `path`, or an empty one when none exists yet."""
    if not path.exists():
        return LabelStore(run_id=run_id)
    try:
        raw = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise LabelError(f"{path}: cannot read the label file: {exc}") from None
    if not isinstance(raw, dict) or raw.get("schema") != LABELS_SCHEMA:
        raise LabelError(f"{path}: not an evalh label file (no `schema: {LABELS_SCHEMA}`)")
    try:
        store = LabelStore.model_validate(raw)
    except ValidationError as exc:
        loc, msg = first_validation_error(exc)
        raise LabelError(f"{path}: invalid label file at {loc}: {msg}") from None
    if store.run_id != run_id:
        raise LabelError(f"{path}: holds labels of run {store.run_id!r}, not {run_id!r}")
    return store


def save_labels(path: Path, store: LabelStore) -> None:
    """Write the sidecar atomically (temporary file, fsync, rename), scrubbed of secrets
    like a run document (a rater's note or a source path may quote one)."""
    data = document_bytes(store.model_dump(mode="json", by_alias=True))
    atomic_write_bytes(path, scrub_secrets(data))


def label_key(value: Label) -> str | None:
    """How labels compare: null stays null (an abstention), booleans read `true`/`false`."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
