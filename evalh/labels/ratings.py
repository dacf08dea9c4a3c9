"""Importing human ratings: each bound to the exact request and rubric it judged.

A ratings file is JSONL (one rating a line) or a JSON array of ratings. A rating is::

    {"request_id": "r-…", "request_sha256": "…", "rubric_sha256": "…", "rater": "alice",
     "label": "defect"}                                   # a plain-text rubric's one label

    {"request_id": "r-…", "request_sha256": "…", "rubric_sha256": "…", "rater": "alice",
     "fields": {"label": "defect"},                        # a TOML rubric's scheme
     "claims": {"c1": {"truth": "false", "grounding": "unsupported"}},
     "dimensions": {"repetition": true}}

plus optional `kind` (`rating`, default, or `adjudication`), `note`, `labelled_at`. A
rating must be complete: every field, every claim (with every claim field) and every
dimension of the request's kind; a rater who skips a claim is refused, naming the missing
claim ids. An adjudication may settle only some items. Null is "cannot tell", allowed
where the rubric allows it.

The whole import is rejected — nothing is written — when any rating is malformed, names a
request the run never exported, is stale (its `request_sha256` no longer matches the run's
blinded request, or its `rubric_sha256` is not the current rubric), is incomplete, repeats
a rating of the same file, or changes a stored rating of the same rater (unless
`replace`). Every rejection names the file and line. Accepted ratings are written to the
ratings store (`evalh.labels.store`), one record per item and field, bound to content.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalh.errors import first_validation_error
from evalh.labels.export import blinded, request_sha256, rubric_of
from evalh.labels.models import Label, LabelError, LabelStore
from evalh.labels.rubric import ITEM_REQUEST, Rubric
from evalh.labels.store import Origin, RatingRecord, RatingsStore
from evalh.models import CaseResult, Run
from evalh.store import now_iso


class _RatingIn(BaseModel):
    """What a labeller writes; unknown keys are refused so a typo is not silently dropped."""

    model_config = ConfigDict(extra="forbid")

    request_id: str = Field(min_length=1)
    request_sha256: str = Field(min_length=1)
    rubric_sha256: str = Field(min_length=1)
    rater: str = Field(min_length=1)
    label: Label = None
    fields: dict[str, Label] | None = None
    claims: dict[str, dict[str, Label]] | None = None
    dimensions: dict[str, Label] | None = None
    kind: str = "rating"
    note: str | None = None
    labelled_at: str | None = None


@dataclass
class ImportSummary:
    imported: int
    unchanged: int
    replaced: int
    path: Path | None
    ratings: int = 0
    written: Path | None = None


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


Results = dict[tuple[str, str, str, int], CaseResult]


def rating_records(
    where: str, raw: Any, labels: LabelStore, results: Results, rubric: Rubric, run_id: str
) -> list[RatingRecord]:
    """The records of one validated rating, or a LabelError naming `where` (file:line)."""
    if not isinstance(raw, dict):
        raise LabelError(f"{where}: a rating must be a JSON object")
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
    view = blinded(result, rubric)
    current = request_sha256(result, rubric, ref.suite, view)
    if r.request_sha256 != current:
        raise LabelError(
            f"{where}: stale rating: request {r.request_id} was rated as {_short(r.request_sha256)}, "
            f"but its blinded content is now {_short(current)}; re-export and rate it again"
        )
    if r.rubric_sha256 != rubric.sha256:
        raise LabelError(
            f"{where}: stale rating: given under rubric {_short(r.rubric_sha256)}, the current "
            f"rubric is {_short(rubric.sha256)} (ratings of two rubric versions are never pooled)"
        )
    try:
        kind = rubric.kind_of(result.metadata)
    except LabelError as exc:
        raise LabelError(f"{where}: {exc.message}") from None
    fields = dict(r.fields or {})
    if "label" in raw:
        if r.fields is not None and "label" in r.fields:
            raise LabelError(f"{where}: give `label` or `fields.label`, not both")
        fields["label"] = r.label
    claims = r.claims or {}
    dims = r.dimensions or {}
    items: list[tuple[str, str, Label]] = []
    for name, value in fields.items():
        spec = rubric.fields.get(name)
        if spec is None or name not in kind.fields:
            raise LabelError(f"{where}: fields.{name}: not a field of kind {kind.name!r} under this rubric")
        why = spec.check(value)
        if why:
            raise LabelError(f"{where}: fields.{name}: {why}")
        items.append((ITEM_REQUEST, name, value))
    claim_ids = [c["id"] for c in view.get("claims", [])] if kind.claims else []
    for cid, values in claims.items():
        if cid not in claim_ids:
            raise LabelError(f"{where}: claims.{cid}: request {r.request_id} has no such claim")
        for fname, value in values.items():
            spec = rubric.claim_fields.get(fname)
            if spec is None:
                raise LabelError(f"{where}: claims.{cid}.{fname}: not a claim field of this rubric")
            why = spec.check(value)
            if why:
                raise LabelError(f"{where}: claims.{cid}.{fname}: {why}")
            items.append((f"claim:{cid}", fname, value))
    for dname, value in dims.items():
        spec = rubric.dimensions.get(dname)
        if spec is None or dname not in kind.dimensions:
            raise LabelError(f"{where}: dimensions.{dname}: not a dimension of kind {kind.name!r}")
        why = spec.check(value)
        if why:
            raise LabelError(f"{where}: dimensions.{dname}: {why}")
        items.append((f"dimension:{dname}", dname, value))
    if r.kind == "rating":
        missing_fields = [f for f in kind.fields if f not in fields]
        if missing_fields:
            raise LabelError(f"{where}: incomplete rating: missing field(s) {', '.join(missing_fields)}")
        missing_claims = [c for c in claim_ids if c not in claims]
        partial = [f"{c} ({', '.join(f for f in rubric.claim_fields if f not in claims[c])})"
                   for c in claim_ids if c in claims and set(rubric.claim_fields) - set(claims[c])]
        if missing_claims or partial:
            parts = []
            if missing_claims:
                parts.append(f"missing claim id(s) {', '.join(missing_claims)}")
            if partial:
                parts.append(f"claim(s) without every field: {'; '.join(partial)}")
            raise LabelError(f"{where}: incomplete claim ratings for request {r.request_id}: {', '.join(parts)}")
        missing_dims = [d for d in kind.dimensions if d not in dims]
        if missing_dims:
            raise LabelError(f"{where}: incomplete rating: missing dimension(s) {', '.join(missing_dims)}")
    if not items:
        raise LabelError(f"{where}: rates nothing")
    origin = Origin(run_id=run_id, suite=ref.suite, case_id=ref.case_id, arm=ref.arm, attempt=ref.attempt)
    return [
        RatingRecord(request_sha256=current, rubric_sha256=rubric.sha256, rater=r.rater, item=item,
                     field=fname, value=value, kind=r.kind, note=r.note,  # type: ignore[arg-type]
                     labelled_at=r.labelled_at, source=where, origin=origin)
        for item, fname, value in items
    ]


def results_by_key(run: Run) -> Results:
    return {(name, r.case_id, r.arm, r.attempt): r for name, s in run.suites.items() for r in s.cases}


def stage_ratings(
    run: Run, labels: LabelStore, store: RatingsStore, entries: list[tuple[str, Any]], *,
    rubric: str | None = None, replace: bool = False, staged: dict[tuple[Any, ...], RatingRecord] | None = None,
) -> tuple[list[RatingRecord], int, int]:
    """Validate `entries` ((where, raw rating) pairs) against the run, the rubric and the
    store; returns (records to write, unchanged, replaced). Raises LabelError on the first
    problem (with how many more there are); nothing is changed."""
    scheme = rubric_of(labels, rubric)
    results = results_by_key(run)
    problems: list[str] = []
    out: list[RatingRecord] = []
    seen: dict[tuple[str, str, str], str] = {}
    staged = {} if staged is None else staged
    unchanged = replaced = 0
    stamp = now_iso()
    for where, raw in entries:
        try:
            recs = rating_records(where, raw, labels, results, scheme, run.run_id)
        except LabelError as exc:
            problems.append(exc.message)
            continue
        first = recs[0]
        key = (first.rater, str(raw.get("request_id")), first.kind)
        if key in seen:
            problems.append(f"{where}: duplicate: {first.rater} already rated {raw.get('request_id')} at {seen[key]}")
            continue
        seen[key] = where
        for rec in recs:
            rec.imported_at = stamp
            prior = staged.get(rec.key()) or store.current.get(rec.key())
            if prior is None:
                out.append(rec)
            elif prior.same_value(rec):
                unchanged += 1
            elif replace:
                rec.replaces = True
                out.append(rec)
                replaced += 1
            else:
                problems.append(
                    f"{where}: {rec.rater} already rated {raw.get('request_id')} {rec.item} {rec.field} "
                    f"{prior.value!r} (from {prior.source}); use --replace to correct it")
                break
            staged[rec.key()] = rec
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise LabelError(problems[0] + more)
    return out, unchanged, replaced


def import_ratings(
    run: Run, labels: LabelStore, store: RatingsStore, paths: list[Path], *, rubric: str | None = None,
    replace: bool = False,
) -> list[ImportSummary]:
    """Validate every rating of every file, then write them to the store as one new file.

    `rubric` is the current rubric digest (default: the latest export's). All or nothing:
    on any problem a LabelError names the file and line and the store is left as it was.
    """
    summaries = []
    batch: list[RatingRecord] = []
    staged: dict[tuple[Any, ...], RatingRecord] = {}
    for path in paths:
        entries = _records(path, str(path))
        if not entries:
            raise LabelError(f"{path}: no ratings in the file")
        recs, unchanged, replaced = stage_ratings(run, labels, store, entries, rubric=rubric,
                                                  replace=replace, staged=staged)
        batch += recs
        summaries.append(ImportSummary(imported=len(recs) - replaced, unchanged=unchanged, replaced=replaced,
                                       path=path, ratings=len(entries)))
    written = store.append(batch)
    for s in summaries:
        s.written = written
    return summaries
