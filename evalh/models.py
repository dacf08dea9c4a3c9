"""Versioned pydantic models of everything evalh persists.

The run document (`evalh.run/1`) is complete on its own: a reader needs nothing else to
know what ran, on what, with which settings, and what came out. Every field here is part
of that contract; add fields with defaults, never repurpose one.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

RUN_SCHEMA = "evalh.run/1"

CaseStatus = Literal["passed", "failed", "errored", "judge_error", "skipped"]
"""`errored`: the target raised, timed out or returned garbage. `judge_error`: the product
answered but a judge could not (counted apart, never a failure of the product)."""

RunStatus = Literal["running", "complete", "partial", "failed"]
Regime = Literal["deterministic", "stochastic"]


def canonical_json(value: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, no insignificant whitespace, UTF-8."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """The first key path where two JSON values differ (None when they are equal), for a
    message a user can act on (a resumed run's config, shards that do not belong together)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                return sub
            found = first_difference(a[key], b[key], sub)
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if canonical_json(a) == canonical_json(b) else (path or "(the whole value)")


def sha256_of(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


def output_sha256(output: Any) -> str:
    """`CaseResult.output_sha256`: the SHA-256 of the exact output text's UTF-8 bytes when
    the output is a string (what `sha256sum` of the text gives); of its canonical JSON when
    it is anything else (a table, a list, a number)."""
    if isinstance(output, str):
        return hashlib.sha256(output.encode("utf-8")).hexdigest()
    return sha256_of(output)


def output_digest_matches(output: Any, digest: str | None) -> bool:
    """Whether `digest` is the output's. Documents written before string outputs were
    digested by their bytes hold the digest of the JSON-encoded string: both are accepted."""
    if digest is None:
        return False
    return digest == output_sha256(output) or (isinstance(output, str) and digest == sha256_of(output))


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class CaseMetadata(BaseModel):
    """Known metadata keys; anything else the dataset carries is kept as is."""

    model_config = ConfigDict(extra="allow")

    split: str | None = None
    """Dataset split (for example `dev`, `test`, `heldout`)."""
    group: str | None = None
    """Cases of one group are related (same source document); a group never crosses splits."""
    stratum: str | None = None
    """Reporting stratum; strata are reported apart."""
    tags: list[str] = Field(default_factory=list)


class Case(BaseModel):
    """One labelled input."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    input: Any
    expected: Any = None
    metadata: CaseMetadata = Field(default_factory=CaseMetadata)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def digest(self) -> str:
        """SHA-256 of the case's canonical JSON (id, input, expected, metadata)."""
        return sha256_of(
            {
                "id": self.id,
                "input": self.input,
                "expected": self.expected,
                "metadata": self.metadata.model_dump(mode="json"),
            }
        )


class Score(_Model):
    """What one scorer said about one output."""

    scorer: str
    """Scorer name as configured (its `name`, or its type)."""
    value: float | None = None
    """0–1, or null when the scorer abstained or failed."""
    passed: bool | None = None
    """True/False, or null for an abstention (an abstention is never a pass)."""
    rationale: str | None = None
    abstained: bool = False
    error: str | None = None
    """Set when the scorer itself failed (for judges: `judge_error`)."""
    verdict: str | None = None
    """A named verdict where the scorer has a vocabulary (for example `supported`)."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Scorer-specific detail (per-paragraph verdicts, per-judge votes, flags)."""
    judge_model: str | None = None
    rubric_sha256: str | None = None


class ErrorInfo(_Model):
    type: str
    message: str


class CaseResult(_Model):
    """One (case, arm, attempt) outcome. The uniform row every suite reduces to."""

    case_id: str
    case_digest: str | None = None
    arm: str = "default"
    attempt: int = 0
    """Repeat index, 0-based."""
    status: CaseStatus
    score: float | None = None
    """Mean of the scorers' values that are not null; null when none gave one."""
    scores: list[Score] = Field(default_factory=list)
    input: Any = None
    expected: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    output: Any = None
    output_sha256: str | None = None
    """`output_sha256(output)`: of the exact UTF-8 bytes of a text output, of the canonical
    JSON of any other; an older document's text digest may be of the JSON-encoded string
    (`output_digest_matches` accepts both)."""
    scrubbed: dict[str, list[list[int]]] | None = None
    """Where secrets were cut from the output: for each string changed, by its dotted path
    in the output (`""`: the output itself), the `[start, end]` regions of the original
    text replaced by `[REDACTED]`. Claims annotated as offsets into the original output are
    mapped through it (`evalh.spans.through_scrub`). None when nothing was cut."""
    trace: list[dict[str, Any]] | None = None
    """Tool calls the target reported, in order."""
    latency_ms: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    cached: bool = False
    """Served from the response cache: no cost, latency kept out of latency figures."""
    truncated: bool = False
    error: ErrorInfo | None = None
    started_at: str | None = None
    measured: dict[str, Any] | None = None
    """Sizes of the output measured by evalh: `chars` and `words` (measured, of the output's
    text) and, where the provider reported no output tokens, `tokens_derived` = chars / 4
    (an estimate, labelled so: `tokens_method: "derived: chars/4"`)."""
    shuffle: dict[str, list[int]] | None = None
    """Input fields permuted for this attempt (`suites.S.shuffle`): path → the original index
    of each presented position (`[2, 0, 1]`: the first option shown was the original third)."""
    seed: int | None = None
    """The attempt's own seed (from the run's seed, the suite, the case and the attempt),
    given to the target through `evalh.context.current()` and used for its shuffle."""


class Counts(_Model):
    """Outcomes of a set of results with their denominators (`core.results.aggregate` counts them;
    a run's `Aggregate` and a report's counts are these). A rate over zero is null, never 0
    or 1."""

    n: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    judge_error: int = 0
    skipped: int = 0
    pass_rate: float | None = None
    """passed / (passed + failed): errored and judge_error are counted apart."""
    pass_rate_denominator: int = 0
    error_rate: float | None = None
    """errored / `error_rate_denominator`."""
    mean_score: float | None = None
    mean_score_denominator: int = 0
    """Passed and failed results with a score."""

    @property
    def error_rate_denominator(self) -> int:
        """The results that ran: every one but the skipped ones."""
        return self.n - self.skipped


class Aggregate(Counts):
    """A suite's or an arm's counts, tokens, cost and latency (stored in the run)."""

    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    cost_unknown: int = 0
    """Results whose cost is unknown (unpriced model): never counted as 0."""
    latency_ms_p50: float | None = None
    latency_ms_p95: float | None = None
    cached: int = 0


class DatasetInfo(_Model):
    path: str
    sha256: str
    cases: int


class SuiteResult(_Model):
    regime: Regime = "deterministic"
    target: dict[str, Any] = Field(default_factory=dict)
    """Safe description of the target (kind, model, callable) — never keys or headers."""
    dataset: DatasetInfo
    aggregate: Aggregate = Field(default_factory=Aggregate)
    arms: dict[str, Aggregate] = Field(default_factory=dict)
    """Per-arm aggregates; always has at least the `default` arm or the named arms."""
    baseline_arm: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    """Suite-level facts (judge calibration, consistency_under_order_swap, …)."""
    metrics: list[dict[str, Any]] = Field(default_factory=list)
    """Suite-level metrics (`suites.S.metrics`): each a figure with `name`, `value`,
    `numerator`, `denominator`, `threshold`, `direction` and `flag` (evalh.core.analysis.suite_metrics)."""
    contrasts: list[dict[str, Any]] = Field(default_factory=list)
    """Named arm contrasts (`suites.S.contrasts`): paired differences with their intervals
    and rules (evalh.core.analysis.contrasts); the only claims a report makes about arms."""
    sweep: dict[str, Any] | None = None
    """The ranking of the suite's `[suites.S.sweep]` policy sweep over these results, as
    `evalh sweep --json` gives it (`evalh.core.analysis.sweep.suite_sweep`); None without a table."""
    cases: list[CaseResult] = Field(default_factory=list)


class GitInfo(_Model):
    sha: str | None = None
    dirty: bool | None = None
    branch: str | None = None


class EnvironmentInfo(_Model):
    evalh: str
    python: str
    platform: str


class DerivedFrom(_Model):
    run_id: str
    how: Literal["rejudge", "resume"]


class Run(_Model):
    """One invocation of evalh: the whole document written to `eval_runs/<run_id>.json`."""

    schema_: str = Field(default=RUN_SCHEMA, alias="schema")
    run_id: str
    label: str | None = None
    status: RunStatus = "running"
    status_reason: str | None = None
    """Why a run is `partial` or `failed` (budget reached, interrupted, …)."""
    started_at: str
    finished_at: str | None = None
    """When the run completed normally (`status = "complete"`); None for any other run."""
    stopped_at: str | None = None
    """When a run that did not complete (`partial`: budget reached, SIGTERM, Ctrl-C;
    `failed`) stopped. A document written before this field, with a `finished_at` on such a
    run, is read with that time here instead."""
    git: GitInfo = Field(default_factory=GitInfo)
    environment: EnvironmentInfo
    config: dict[str, Any] = Field(default_factory=dict)
    """The resolved, allowlisted config snapshot. Secrets never."""
    seed: int | None = None
    derived_from: DerivedFrom | None = None
    pooled_from: list[str] = Field(default_factory=list)
    """Ids of the runs this document pools, in order (`evalh.core.compare.pool.pool_runs`: the
    attempts of several BASELINE runs together per case); empty for a run that was
    executed. Its length is how many baseline runs a comparison used. A pooled run is
    built in memory for a comparison and never written to the run store."""
    shard: str | None = None
    """`K/N` when this run is shard K of N (`evalh run --shard K/N`): it holds only the cases
    whose id hashes to shard K (`evalh.core.run.shard`). Kept in the config snapshot too
    (`config.shard`), which is where a resumed run finds it; None for an unsharded run."""
    merged_from: list[str] = Field(default_factory=list)
    """Ids of the shard runs this run was merged from, in shard order (`evalh merge`); empty
    for a run that was executed in one piece."""
    rounds: list[dict[str, Any]] = Field(default_factory=list)
    """`evalh run --compare-baseline --until-decided`: one record per round (its calls, the
    calls so far and what a fixed design would have spent, each suite's allocation and the
    verdicts after it: `evalh.core.run.rounds`); empty for a run made in one go."""
    limits: dict[str, Any] = Field(default_factory=dict)
    """Concurrency and rate limits the runner settled on."""
    summary: dict[str, Any] = Field(default_factory=dict)
    """Headline numbers, per suite too. Written before `suites` (the big part), so a listing
    reads every field it shows from the head of the file (`evalh.run_header`)."""
    suites: dict[str, SuiteResult] = Field(default_factory=dict)
    """Last: fields added later go above it."""

    @model_validator(mode="after")
    def _shard_from_config(self) -> Run:
        if self.shard is None and isinstance(self.config.get("shard"), str):
            self.shard = self.config["shard"]
        if self.status != "complete" and self.finished_at is not None:
            # finished_at means "completed": an earlier document's time of a run that
            # stopped is its stop time
            self.stopped_at = self.stopped_at or self.finished_at
            self.finished_at = None
        return self

    def to_json_bytes(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json", by_alias=True), option=orjson.OPT_INDENT_2)
