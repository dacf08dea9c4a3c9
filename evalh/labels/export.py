"""Blinded requests for human labellers and a rubric judge (`evalh.requests/1`).

A request holds only what a labeller should see: the case's `input` (the evidence) and the
target's `output`. It never holds the expected label, rationales, scorer results, case
names or ids, metadata (strata and tags can name the answer) or producer details (arm,
model, cost). Its id is opaque and random; the mapping back to the case stays in the run's
label sidecar. Requests are ordered by id, so file order does not leak dataset order.

Each request carries `request_sha256`, the SHA-256 of the canonical JSON of
`{"input", "output"}` and nothing else: correcting a label leaves it unchanged; a changed
input or output changes it, and ratings of the old content are then rejected as stale.
The export carries a manifest digest over every (request id, digest) pair and the rubric
digest, so an owner can check a retained export against the one labellers received.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from evalh.labels.models import ExportRecord, LabelError, LabelStore, RequestRef
from evalh.models import CaseResult, Run, sha256_of
from evalh.store import now_iso

REQUESTS_SCHEMA = "evalh.requests/1"
INSTRUCTIONS = (
    "Label each request by the rubric. Return JSON lines, one per request you label: "
    '{"request_id": ..., "request_sha256": ..., "rubric_sha256": ..., "rater": "<your name>", '
    '"label": ...}. Copy request_sha256 and rubric_sha256 exactly as given: they bind your '
    "label to the content you saw. Use null for a request you cannot label."
)


def blinded(result: CaseResult) -> dict[str, Any]:
    """The part of a result a labeller sees."""
    return {"input": result.input, "output": result.output}


def request_sha256(result: CaseResult) -> str:
    """SHA-256 over the blinded request only (see the module doc)."""
    return sha256_of(blinded(result))


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
) -> tuple[dict[str, Any], dict[str, int]]:
    """The export document, registering its requests in `labels` (mutated; the caller saves).

    A result already exported keeps its request id, so ratings of an earlier export of the
    same content stay valid. Results without an output (the target failed) are skipped and
    counted. Returns (document, counts).
    """
    chosen = list(suites) if suites else list(run.suites)
    for name in chosen:
        if name not in run.suites:
            known = ", ".join(sorted(run.suites)) or "none"
            raise LabelError(f"run {run.run_id} has no suite {name!r} (it has: {known})")
    rubric_sha = sha256_of_bytes(rubric)
    known_ids = {(r.suite, r.case_id, r.arm, r.attempt): rid for rid, r in labels.requests.items()}
    taken = set(labels.requests)
    requests: list[dict[str, Any]] = []
    counts = {"exported": 0, "skipped_errored": 0, "skipped_arm": 0}
    for name in chosen:
        for result in run.suites[name].cases:
            if arms and result.arm not in arms:
                counts["skipped_arm"] += 1
                continue
            if result.status in ("errored", "skipped") or result.output is None:
                counts["skipped_errored"] += 1
                continue
            key = (name, result.case_id, result.arm, result.attempt)
            rid = known_ids.get(key) or _new_id(taken)
            taken.add(rid)
            sha = request_sha256(result)
            labels.requests[rid] = RequestRef(
                suite=name, case_id=result.case_id, arm=result.arm, attempt=result.attempt, sha256=sha
            )
            requests.append({"request_id": rid, "request_sha256": sha, **blinded(result)})
    if not requests:
        raise LabelError(f"run {run.run_id}: no result with an output to export")
    requests.sort(key=lambda r: r["request_id"])
    manifest = manifest_sha256(rubric_sha, [(r["request_id"], r["request_sha256"]) for r in requests])
    labels.exports.append(ExportRecord(
        exported_at=now_iso(), rubric_sha256=rubric_sha, rubric_name=rubric_name,
        manifest_sha256=manifest, requests=len(requests), suites=chosen,
    ))
    counts["exported"] = len(requests)
    document = {
        "schema": REQUESTS_SCHEMA,
        "run_id": run.run_id,
        "rubric": {"sha256": rubric_sha, "text": rubric.decode("utf-8", errors="replace")},
        "instructions": INSTRUCTIONS,
        "requests": requests,
        "manifest": {"requests": len(requests), "sha256": manifest},
    }
    return document, counts


def sha256_of_bytes(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()
