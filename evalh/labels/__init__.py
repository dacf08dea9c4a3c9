"""Human labels for a finished run: blinded export, bound ratings, agreement report.

- `build_export` — blinded requests (input and output only, opaque ids, per-request
  SHA-256 over the blinded content, a manifest digest) for labellers and a rubric judge.
- `import_ratings` — ratings bound to request and rubric digests; stale and incomplete ones
  rejected; kept in the content-bound ratings store (`load_store`), not per run.
- `label_report` — agreement before adjudication, judge–human confusion, strata apart,
  Wilson intervals only where their assumptions hold; never a release decision.

The request registry lives beside the run in `<run_id>.labels.json`; ratings live in
`<runs dir>/ratings/`; the run document is never modified.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalh.labels.export import REQUESTS_SCHEMA, build_export, request_sha256
    from evalh.labels.models import (
        LabelError,
        LabelStore,
        labels_bytes,
        load_labels,
        save_labels,
        sidecar_path,
    )
    from evalh.labels.ratings import ImportSummary, import_ratings
    from evalh.labels.report import JUDGE_USE, RELEASE_DECISION, label_report
    from evalh.labels.store import RatingRecord, RatingsStore, load_store

_HOMES = {
    "export": ("REQUESTS_SCHEMA", "build_export", "request_sha256"),
    "models": ("LabelError", "LabelStore", "labels_bytes", "load_labels", "save_labels", "sidecar_path"),
    "ratings": ("ImportSummary", "import_ratings"),
    "report": ("JUDGE_USE", "RELEASE_DECISION", "label_report"),
    "store": ("RatingRecord", "RatingsStore", "load_store"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "JUDGE_USE", "RELEASE_DECISION", "REQUESTS_SCHEMA", "ImportSummary", "LabelError",
    "LabelStore", "RatingRecord", "RatingsStore", "build_export", "import_ratings", "label_report",
    "labels_bytes", "load_labels", "load_store", "request_sha256", "save_labels", "sidecar_path",
]


def __getattr__(name: str) -> Any:
    """The names above, imported from their module when first asked for: `evalh show` and
    `evalh report` reach `evalh.labels.intervals` (Wilson intervals of the repeats), and
    importing this package no longer imports export, ratings, the agreement report and the
    ratings store with it."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"evalh.labels.{module}"), name)
    globals()[name] = value
    return value
