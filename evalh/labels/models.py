"""The label sidecar (`evalh.labels/2`): what was exported of one run for labelling.

One file beside each run, `eval_runs/<run_id>.labels.json`, written atomically. The run
document itself is never modified: labels are a later judgment about a finished run. The
sidecar holds the request registry (opaque request id → suite, case, arm, attempt, and the
digest of the blinded request) and a record of every export (the rubric itself, its
digest, the manifest digest). Ratings are not kept here: they are bound to content, not
to a run, and live in the ratings store (`evalh.labels.store`) beside the runs.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalh.atomic import atomic_write_bytes
from evalh.errors import EvalhError, first_validation_error
from evalh.jsonio import document_bytes
from evalh.redact import scrub_secrets
from evalh.store import validate_run_id

LABELS_SCHEMA = "evalh.labels/2"
Label = str | bool | int | float | None


class LabelError(EvalhError):
    """A ratings file or label sidecar that cannot be used (stale, unknown, malformed)."""


class ScrubbedCase(LabelError):
    """A result whose claims quote text a secret scrub cut from its output: that case cannot
    be shown to raters (it is left out of the export, named), the run's others can."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class RequestRef(_Model):
    """Where one blinded request came from. Never exported: it would unblind the request."""

    suite: str
    case_id: str
    arm: str
    attempt: int
    sha256: str
    """SHA-256 of the blinded request (input, output, claim spans) when it was last exported."""


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
    rubric_text: str | None = None
    """The rubric file's text (UTF-8): its scheme is read from here when ratings come back."""


class SampleRecord(_Model):
    """One random draw of results for human labelling (`evalh export-requests --sample`).

    What makes a corrected (prediction-powered) figure valid: the frame the draw was made
    from, the seed, and exactly what was drawn. A later draw for the same suite and arm
    draws from what is left of the frame."""

    drawn_at: str
    suite: str
    arm: str
    seed: int
    method: str = "simple"
    """`simple`: uniform over the frame (or what is left of it); `stratified`: a number
    per stratum (`per_stratum`), uniform within each."""
    by: list[str] = Field(default_factory=list)
    """The metadata fields whose values are the strata (stratified draws)."""
    per_stratum: dict[str, int] = Field(default_factory=dict)
    frame_size: int
    frame_sha256: str
    """Digest of the frame: every (case, attempt) with an output and the digest of its input
    and output. A frame that no longer matches means the items changed since the draw."""
    drawn: list[tuple[str, int]] = Field(default_factory=list)
    """(case id, attempt) of every result drawn, in draw order."""


class LabelStore(_Model):
    """The whole sidecar."""

    schema_: str = Field(default=LABELS_SCHEMA, alias="schema")
    run_id: str
    requests: dict[str, RequestRef] = Field(default_factory=dict)
    exports: list[ExportRecord] = Field(default_factory=list)
    samples: list[SampleRecord] = Field(default_factory=list)

    def current_rubric(self) -> str | None:
        """The rubric digest of the latest export, or None before any export."""
        return self.exports[-1].rubric_sha256 if self.exports else None

    def rubric_record(self, digest: str) -> ExportRecord | None:
        """The latest export under rubric `digest`."""
        return next((e for e in reversed(self.exports) if e.rubric_sha256 == digest), None)


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
    atomic_write_bytes(path, labels_bytes(store))


def labels_bytes(store: LabelStore) -> bytes:
    """The sidecar's bytes as `save_labels` writes them."""
    return scrub_secrets(document_bytes(store.model_dump(mode="json", by_alias=True)))


def label_key(value: Label) -> str | None:
    """How labels compare: null stays null (an abstention), booleans read `true`/`false`."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
