"""Blinded requests for human labellers and a rubric judge (`evalh.requests/1`).

A request holds only what a labeller should see: the case's `input` (the evidence) and the
target's `output`. It never holds the expected label, rationales, scorer results, case
names or ids, metadata (strata and tags can name the answer) or producer details (arm,
model, cost). Its id is opaque and random; the mapping back to the case stays in the run's
label sidecar. Requests are ordered by id, so file order does not leak dataset order.

Each request carries `request_sha256`, the SHA-256 of the canonical JSON of the blinded
request (and, under a rubric with `bind = "attempt"`, the attempt's identity) and nothing else — `{"input", "output"}`, plus `"claims"` (each claim's id and
exact output offsets) when the rubric rates claims: correcting a label leaves it
unchanged; a changed input, output or claim span changes it, and ratings of the old
content are then stale. Under a TOML rubric (`evalh.labels.rubric`) a request also names
its `kind` and lists its claims with their spans, so raters see what they rate.
The export carries a manifest digest over every (request id, digest) pair and the rubric
digest, so an owner can check a retained export against the one labellers received.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from evalh.labels.models import ExportRecord, LabelError, LabelStore, RequestRef, ScrubbedCase
from evalh.labels.rubric import Rubric, claim_spans, parse_rubric, rubric_sha256
from evalh.models import CaseResult, Run, sha256_of
from evalh.store import now_iso

REQUESTS_SCHEMA = "evalh.requests/1"
INSTRUCTIONS = (
    "Label each request by the rubric. Return JSON lines, one per request you label: "
    '{"request_id": ..., "request_sha256": ..., "rubric_sha256": ..., "rater": "<your name>", '
    '"label": ...}. Copy request_sha256 and rubric_sha256 exactly as given: they bind your '
    "label to the content you saw. Use null for a request you cannot label."
)
SCHEME_INSTRUCTIONS = (
    "Rate each request by the rubric's scheme. Return JSON lines, one per request you rate: "
    '{"request_id": ..., "request_sha256": ..., "rubric_sha256": ..., "rater": "<your name>", '
    '"fields": {<field>: <value>}, "claims": {<claim id>: {<claim field>: <value>}}, '
    '"dimensions": {<dimension>: <value>}} with every field, claim and dimension of the '
    "request's kind (an incomplete rating is refused). Copy the digests exactly as given. Use "
    "null for \"cannot tell\" where the rubric allows it."
)


def blinded(result: CaseResult, rubric: Rubric | None = None) -> dict[str, Any]:
    """The part of a result a labeller sees (and that its digest covers)."""
    out: dict[str, Any] = {"input": result.input, "output": result.output}
    if rubric is not None and rubric.claim_fields:
        view = {"input": result.input, "output": result.output, "expected": result.expected,
                "metadata": result.metadata}
        try:
            out["claims"] = claim_spans(rubric, view, result.scrubbed)
        except ScrubbedCase as exc:
            raise ScrubbedCase(f"case {result.case_id}: {exc.message}") from None
        except LabelError as exc:
            raise LabelError(f"case {result.case_id}: {exc.message}") from None
    return out


def request_sha256(result: CaseResult, rubric: Rubric | None = None, suite: str | None = None,
                   view: dict[str, Any] | None = None) -> str:
    """SHA-256 over the blinded request only (see the module doc); under a rubric that binds
    ratings to the attempt (`bind = "attempt"`), over the blinded request and the attempt's
    identity (suite, case, arm, attempt: never shown to raters)."""
    view = view if view is not None else blinded(result, rubric)
    if rubric is not None and rubric.bind == "attempt":
        return sha256_of({**view, "attempt": {"suite": suite, "case": result.case_id, "arm": result.arm,
                                              "attempt": result.attempt}})
    return sha256_of(view)


def manifest_sha256(rubric_sha: str, pairs: Sequence[tuple[str, str]]) -> str:
    return sha256_of({"rubric_sha256": rubric_sha, "requests": sorted(pairs)})


def _new_id(taken: set[str]) -> str:
    while True:
        rid = f"r-{secrets.token_hex(8)}"
        if rid not in taken:
            return rid


def build_export(
    run: Run,
    labels: LabelStore,
    *,
    rubric: bytes,
    rubric_name: str | None = None,
    suites: Sequence[str] | None = None,
    arms: Sequence[str] | None = None,
    only: set[tuple[str, str, str, int]] | None = None,
    refused: list[str] | None = None,
) -> tuple[dict[str, Any], dict[str, int]]:
    """The export document, registering its requests in `labels` (mutated; the caller saves).

    A result already exported keeps its request id, so ratings of an earlier export of the
    same content stay valid. Results without an output (the target failed) are skipped and
    counted. A result whose claims quote text a secret scrub cut from its output is left out
    (`refused_scrubbed`), one line naming it appended to `refused` (never in the document:
    it names the case). Returns (document, counts).
    """
    chosen = list(suites) if suites else list(run.suites)
    for name in chosen:
        if name not in run.suites:
            known = ", ".join(sorted(run.suites)) or "none"
            raise LabelError(f"run {run.run_id} has no suite {name!r} (it has: {known})")
    try:
        rubric_text = rubric.decode("utf-8")
    except UnicodeDecodeError:
        raise LabelError(f"{rubric_name or 'rubric'}: not UTF-8 text") from None
    scheme = parse_rubric(rubric, rubric_name)
    rubric_sha = scheme.sha256
    known_ids = {(r.suite, r.case_id, r.arm, r.attempt): rid for rid, r in labels.requests.items()}
    taken = set(labels.requests)
    requests: list[dict[str, Any]] = []
    counts = {"exported": 0, "skipped_errored": 0, "skipped_arm": 0, "refused_scrubbed": 0}
    refused = refused if refused is not None else []
    for name in chosen:
        for result in run.suites[name].cases:
            if arms and result.arm not in arms:
                counts["skipped_arm"] += 1
                continue
            if result.status in ("errored", "skipped") or result.output is None:
                counts["skipped_errored"] += 1
                continue
            try:
                view = blinded(result, scheme)
            except ScrubbedCase as exc:  # this case's claims lost their words: this case, not the run
                counts["refused_scrubbed"] += 1
                refused.append(f"{name}/{exc.message}")
                continue
            key = (name, result.case_id, result.arm, result.attempt)
            if only is not None and key not in only:
                continue
            rid = known_ids.get(key) or _new_id(taken)
            taken.add(rid)
            sha = request_sha256(result, scheme, name, view)
            labels.requests[rid] = RequestRef(
                suite=name, case_id=result.case_id, arm=result.arm, attempt=result.attempt, sha256=sha
            )
            request: dict[str, Any] = {"request_id": rid, "request_sha256": sha}
            if scheme.structured:
                try:
                    request["kind"] = scheme.kind_of(result.metadata).name
                except LabelError as exc:
                    raise LabelError(f"case {result.case_id}: {exc.message}") from None
            requests.append({**request, **view})
    if not requests:
        raise LabelError(f"run {run.run_id}: no result with an output to export")
    requests.sort(key=lambda r: r["request_id"])
    manifest = manifest_sha256(rubric_sha, [(r["request_id"], r["request_sha256"]) for r in requests])
    labels.exports.append(ExportRecord(
        exported_at=now_iso(), rubric_sha256=rubric_sha, rubric_name=rubric_name,
        manifest_sha256=manifest, requests=len(requests), suites=chosen, rubric_text=rubric_text,
    ))
    counts["exported"] = len(requests)
    document = {
        "schema": REQUESTS_SCHEMA,
        "run_id": run.run_id,
        "rubric": {"sha256": rubric_sha, "text": rubric_text,
                   **({"name": rubric_name, "scheme": scheme.scheme()} if scheme.structured else {})},
        "instructions": SCHEME_INSTRUCTIONS if scheme.structured else INSTRUCTIONS,
        "requests": requests,
        "manifest": {"requests": len(requests), "sha256": manifest},
    }
    return document, counts


def sha256_of_bytes(data: bytes) -> str:
    return rubric_sha256(data)


def rubric_of(labels: LabelStore, digest: str | None = None) -> Rubric:
    """The scheme of rubric `digest` (default: the latest export's), from the sidecar."""
    digest = digest or labels.current_rubric()
    if digest is None:
        raise LabelError(f"run {labels.run_id} has no exported requests: run `evalh export-requests` first")
    record = labels.rubric_record(digest)
    if record is None or record.rubric_text is None:
        raise LabelError(f"rubric {digest[:12]}… was never exported for run {labels.run_id}: "
                         "export the requests under it first")
    return parse_rubric(record.rubric_text.encode("utf-8"), record.rubric_name)
