"""Importing human ratings: each bound to the exact request and rubric it judged.

A ratings file is JSONL (one rating a line) or a JSON array of ratings. A rating is::

    {"request_id": "r-…", "request_sha256": "…", "rubric_sha256": "…",
     "rater": "alice", "label": "refuted", "note": "optional", "kind": "rating"}

`kind` is `rating` (default) or `adjudication` (the settled label of a disputed request).
The whole file is rejected — nothing is written — when any rating is malformed, names a
request the run never exported, is stale (its `request_sha256` no longer matches the
run's input and output, or its `rubric_sha256` is not the current rubric), repeats a rating
of the same file, or contradicts a stored rating of the same rater (unless `replace`).
Every rejection names the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalh.errors import first_validation_error
from evalh.labels.export import request_sha256
from evalh.labels.models import Label, LabelError, LabelStore, Rating
from evalh.models import CaseResult, Run
from evalh.store import now_iso


class _RatingIn(BaseModel):
    """What a labeller writes; unknown keys are refused so a typo is not silently dropped."""

    model_config = ConfigDict(extra="forbid")

    request_id: str = Field(min_length=1)
    request_sha256: str = Field(min_length=1)
    rubric_sha256: str = Field(min_length=1)
    rater: str = Field(min_length=1)
    label: Label
    kind: str = "rating"
    note: str | None = None
    labelled_at: str | None = None


@dataclass
class ImportSummary:
    imported: int
    unchanged: int
    replaced: int
    path: Path


def _records(path: Path, shown: str) -> list[tuple[str, Any]]:
    """(position, value) pairs: `file:line` for JSONL, `file: item N` for a JSON array."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelError(f"{shown}: cannot read: {exc}") from None
    if text.lstrip().startswith("["):
        try:
            items = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise LabelError(f"{shown}: not valid JSON: {exc}") from None
        return [(f"{shown}: item {i + 1}", item) for i, item in enumerate(items)]
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((f"{shown}:{lineno}", orjson.loads(line)))
        except orjson.JSONDecodeError as exc:
            raise LabelError(f"{shown}:{lineno}: malformed JSON line: {exc}") from None
    return out


def _short(digest: str) -> str:
    return digest[:12] + "…" if len(digest) > 12 else digest


def check_rating(
    where: str, raw: Any, labels: LabelStore, results: dict[tuple[str, str, str, int], CaseResult], rubric: str
) -> Rating:
    """One validated rating, or a LabelError naming `where` (file:line)."""
    if not isinstance(raw, dict):
        raise LabelError(f"{where}: a rating must be a JSON object")
    if "label" not in raw:
        raise LabelError(f"{where}: label: missing (use null for an explicit abstention)")
    try:
        r = _RatingIn.model_validate(raw)
    except ValidationError as exc:
        loc, msg = first_validation_error(exc)
        raise LabelError(f"{where}: {loc or 'rating'}: {msg}") from None
    if r.kind not in ("rating", "adjudication"):
        raise LabelError(f"{where}: kind: {r.kind!r} is not `rating` or `adjudication`")
    ref = labels.requests.get(r.request_id)
    if ref is None:
        raise LabelError(f"{where}: unknown request id {r.request_id!r}: run {labels.run_id} never exported it")
    result = results.get((ref.suite, ref.case_id, ref.arm, ref.attempt))
    if result is None:
        raise LabelError(f"{where}: request {r.request_id} has no result in run {labels.run_id}")
    current = request_sha256(result)
    if r.request_sha256 != current:
        raise LabelError(
            f"{where}: stale rating: request {r.request_id} was rated as {_short(r.request_sha256)}, "
            f"but its input or output is now {_short(current)}; re-export and rate it again"
        )
    if r.rubric_sha256 != rubric:
        raise LabelError(
            f"{where}: stale rating: given under rubric {_short(r.rubric_sha256)}, the current "
            f"rubric is {_short(rubric)}"
        )
    return Rating(**r.model_dump(), source=where)


def import_ratings(
    run: Run, labels: LabelStore, path: Path, *, rubric: str | None = None, replace: bool = False,
    shown: str | None = None,
) -> ImportSummary:
    """Validate every rating of `path` and add them to `labels` (mutated; the caller saves).

    `rubric` is the current rubric digest (default: the latest export's). Raises LabelError
    on the first problem — with how many more there are — and then leaves `labels` as it was.
    """
    shown = shown or str(path)
    rubric = rubric or labels.current_rubric()
    if rubric is None:
        raise LabelError(f"run {run.run_id} has no exported requests: run `evalh export-requests` first")
    results = {
        (name, r.case_id, r.arm, r.attempt): r for name, s in run.suites.items() for r in s.cases
    }
    problems: list[str] = []
    ratings: list[Rating] = []
    seen: dict[tuple[str, str, str], str] = {}
    for where, raw in _records(path, shown):
        try:
            rating = check_rating(where, raw, labels, results, rubric)
        except LabelError as exc:
            problems.append(exc.message)
            continue
        key = (rating.rater, rating.request_id, rating.kind)
        if key in seen:
            problems.append(f"{where}: duplicate: {rating.rater} already rated {rating.request_id} at {seen[key]}")
            continue
        seen[key] = where
        ratings.append(rating)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise LabelError(problems[0] + more)
    if not ratings:
        raise LabelError(f"{shown}: no ratings in the file")
    stored = {(r.rater, r.request_id, r.kind): i for i, r in enumerate(labels.ratings)}
    merged = list(labels.ratings)
    imported = unchanged = replaced = 0
    stamp = now_iso()
    for rating in ratings:
        rating.imported_at = stamp
        i = stored.get((rating.rater, rating.request_id, rating.kind))
        if i is None:
            merged.append(rating)
            imported += 1
        elif merged[i].label == rating.label and type(merged[i].label) is type(rating.label):
            unchanged += 1
        elif replace:
            merged[i] = rating
            replaced += 1
        else:
            raise LabelError(
                f"{rating.source}: {rating.rater} already labelled {rating.request_id} "
                f"{merged[i].label!r} (from {merged[i].source}); use --replace to correct it"
            )
    labels.ratings = merged
    return ImportSummary(imported=imported, unchanged=unchanged, replaced=replaced, path=path)
