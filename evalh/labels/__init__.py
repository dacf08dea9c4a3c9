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

from evalh.labels.export import REQUESTS_SCHEMA, build_export, request_sha256
from evalh.labels.models import (
    LabelError,
    LabelStore,
    load_labels,
    save_labels,
    sidecar_path,
)
from evalh.labels.ratings import ImportSummary, import_ratings
from evalh.labels.report import JUDGE_USE, RELEASE_DECISION, label_report
from evalh.labels.store import RatingRecord, RatingsStore, load_store

__all__ = [
    "JUDGE_USE", "RELEASE_DECISION", "REQUESTS_SCHEMA", "ImportSummary", "LabelError",
    "LabelStore", "RatingRecord", "RatingsStore", "build_export", "import_ratings", "label_report",
    "load_labels", "load_store", "request_sha256", "save_labels", "sidecar_path",
]
