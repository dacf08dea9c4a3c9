"""The models of a report: what `build_report` returns and every renderer reads.

`Report.to_dict()` is the `evalh report --format json` document (schema `evalh.report/1`).
Its keys are a stable contract: add keys with defaults, never rename or repurpose one.
Every rate sits beside its denominator, and a rate over zero is null, never 0 or 1.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from evalh import models

REPORT_SCHEMA = "evalh.report/1"

FlakinessClass = Literal["stable_pass", "flaky", "stable_fail", "unknown"]
"""`stable_pass`: passed every attempt. `stable_fail`: passed none. `flaky`: some of each.
`unknown`: no attempt with a product outcome (every attempt skipped or unjudged)."""


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Counts(models.Counts):
    """Outcomes of a set of results: the run's counts (`evalh.models.Counts`), with
    `error_rate_denominator` beside `error_rate` in the JSON. `errored` and `judge_error`
    are counted apart and never enter `pass_rate` (passed / (passed + failed))."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def of(cls, agg: models.Counts) -> Counts:
        return cls(**{name: getattr(agg, name) for name in models.Counts.model_fields})

    @model_serializer(mode="wrap")
    def _with_error_rate_denominator(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        for key, value in handler(self).items():
            doc[key] = value
            if key == "error_rate":
                doc["error_rate_denominator"] = self.error_rate_denominator
        return doc


class Interval(_Out):
    """A Wilson 95 % interval, or why there is none."""

    of: str
    """What the interval is about (for example `pass rate over cases`)."""
    successes: int | None = None
    n: int | None = None
    low: float | None = None
    high: float | None = None
    reason: str | None = None
    """Set when no interval is given: the assumption that does not hold."""


class Economics(_Out):
    """Tokens, cost and latency. Unknown is null, never 0."""

    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens_reported: int = 0
    """Results that reported token usage (the denominator of the token sums)."""
    cost_usd: float | None = None
    cost_reported: int = 0
    cost_unknown: int = 0
    """Results with usage but no price: not counted as 0."""
    cached: int = 0
    latency_ms_p50: float | None = None
    latency_ms_p95: float | None = None
    latency_denominator: int = 0
    """Results whose latency entered the percentiles (cached replies are left out)."""


class VerdictCount(_Out):
    verdict: str
    count: int
    share: float | None
    denominator: int


class VerdictDistribution(_Out):
    """Verdicts one scorer gave (`level: "result"`), or the per-paragraph verdicts in its
    details (`level: "paragraph"`)."""

    scorer: str
    level: Literal["result", "paragraph"] = "result"
    total: int
    verdicts: list[VerdictCount] = Field(default_factory=list)


class WorstCase(_Out):
    case_id: str
    attempts: int
    failed: int
    errored: int
    judge_error: int = 0
    bad_paragraphs: int = 0
    paragraphs: int = 0
    why: str | None = None
    """The first error message or failing rationale (untrusted text)."""


class GroupRow(_Out):
    """One value of a `--by` field."""

    value: str
    cases: int
    counts: Counts
    latency_ms_p50: float | None = None


class Breakdown(_Out):
    field: str
    rows: list[GroupRow] = Field(default_factory=list)
    note: str | None = None
    """For example: list-valued fields count a case once under each of its values."""


class ToolRow(_Out):
    """Cases whose trace used the tool, and the share of them that went bad (a case went
    bad when an attempt of it that used the tool failed or errored) among those with a
    product outcome. `results` counts the attempts that used it (repeats count apiece)."""

    tool: str
    cases: int
    results: int
    calls: int
    bad: int
    bad_share: float | None
    denominator: int


class ToolUsage(_Out):
    rows: list[ToolRow] = Field(default_factory=list)
    results_with_trace: int = 0
    results_without_trace: int = 0


class AttemptCell(_Out):
    attempt: int
    status: str
    score: float | None = None


class RawAttemptsRow(_Out):
    """One case's attempts, and the numbers computed from them."""

    case_id: str
    attempts: list[AttemptCell]
    passes: int
    decisive: int
    """Attempts with a product outcome (passed, failed, errored)."""
    mean_score: float | None = None
    score_variance: float | None = None
    """Sample variance (n − 1) of the attempts' scores; null below two scores."""
    scores_used: int = 0
    flakiness: FlakinessClass


class PassAtK(_Out):
    k: int
    pass_at_k: float | None
    pass_hat_k: float | None
    cases: int
    """Cases with at least k decisive attempts (the denominator of both means)."""


class Repeats(_Out):
    attempts_min: int
    attempts_max: int
    equal_attempts: bool
    raw: list[RawAttemptsRow] = Field(default_factory=list)
    """The raw-attempts table: every number below is computed from these rows."""
    stable_pass: int = 0
    flaky: int = 0
    stable_fail: int = 0
    unknown: int = 0
    pass_at_k: list[PassAtK] = Field(default_factory=list)


class RawRunRow(_Out):
    """One result (a run of a case): what it scored, per scorer and per judge criterion, and
    its measured sizes."""

    case_id: str
    attempt: int
    status: str
    order: str | None = None
    """The presented order of shuffled fields (`input.options: 2,0,1`), when shuffled."""
    values: dict[str, float | None] = Field(default_factory=dict)
    """Column → value: `score` (the result's), each scorer's, and `<judge>.<criterion>`."""
    chars: int | None = None
    words: int | None = None
    tokens: int | None = None
    tokens_derived: bool = False
    """True when `tokens` is the chars/4 estimate (the provider reported none)."""


class RawRuns(_Out):
    """The raw-runs table (every result, before any aggregate) and the arithmetic of each
    case's mean and variance, shown so anyone can verify it."""

    columns: list[str] = Field(default_factory=list)
    rows: list[RawRunRow] = Field(default_factory=list)
    arithmetic: list[str] = Field(default_factory=list)
    """`c1 score: mean = (1 + 0.75 + 1) / 3 = 0.9167; variance (n − 1) = 0.02083`."""


class ArmReport(_Out):
    arm: str
    baseline: bool = False
    cases: int
    """Distinct case ids."""
    counts: Counts
    interval: Interval
    economics: Economics
    verdicts: list[VerdictDistribution] = Field(default_factory=list)
    worst: list[WorstCase] = Field(default_factory=list)
    breakdowns: list[Breakdown] = Field(default_factory=list)
    tools: ToolUsage | None = None
    repeats: Repeats | None = None
    runs: RawRuns | None = None
    """With repeats: every result with its per-scorer and per-criterion values and sizes."""


class Figure(_Out):
    """A suite-level figure from the suite's details (`evalh.report.figures`), laid out
    once as a table of strings that every surface draws as it is."""

    kind: str
    """`verdicts`, `classification` (one per arm), `judge`, `pairwise`, `metrics`, `contrast`,
    `sweep`, `labels` (human labels' agreement), `bill` (target, judge and generator calls) or
    `corrected` (a judge rate corrected by human labels)."""
    scorer: str
    arm: str | None = None
    """The arm a figure is about (verdict distributions of a suite with several arms)."""
    title: str
    columns: list[str] = Field(default_factory=list)
    rows: list[list[str]] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)
    """What a reader must not miss (also shown in the summary)."""
    data: dict[str, Any] = Field(default_factory=dict)
    """The numbers behind the table (for JSON readers)."""


class SuiteReport(_Out):
    run_id: str
    suite: str
    regime: str
    dataset: dict[str, Any] = Field(default_factory=dict)
    arms: list[ArmReport] = Field(default_factory=list)
    calibration: list[dict[str, Any]] = Field(default_factory=list)
    """Judge calibration facts from the suite's details (accuracy with its denominator)."""
    notes: list[str] = Field(default_factory=list)
    figures: list[Figure] = Field(default_factory=list)
    """Per-lens classification, judging counts, pairwise consistency: see `figures`."""


class Headline(_Out):
    """One line of the summary that opens a report: a suite (or an arm of it) of one run,
    with its pass rate and denominator, what went wrong, and its verdict against the
    baseline when one is set."""

    run_id: str
    suite: str
    arm: str = "default"
    baseline_arm: bool = False
    regime: str
    cases: int
    results: int
    """Attempts (results) behind the counts: cases × repeats."""
    passed: int = 0
    pass_rate: float | None = None
    pass_rate_denominator: int = 0
    errored: int = 0
    judge_error: int = 0
    skipped: int = 0
    mean_score: float | None = None
    flaky: int | None = None
    """Cases whose attempts disagree (null without repeats)."""
    versus: str | None = None
    """The suite's verdict against the baseline (`compare_runs`); null when none is set."""
    flags: list[str] = Field(default_factory=list)


class BaselineVerdict(_Out):
    """A reported run compared with the BASELINE run(s): the verdict `evalh compare` gives."""

    run_id: str
    base: str
    """The baseline run id, or the ids pooled, comma-separated."""
    verdict: str
    fails_gate: bool = False
    gate_reasons: list[str] = Field(default_factory=list)
    suites: dict[str, str] = Field(default_factory=dict)
    note: str | None = None
    """Why there is no verdict (the baseline could not be read, or is this run)."""


class RunHeader(_Out):
    run_id: str
    label: str | None = None
    status: str
    status_reason: str | None = None
    started_at: str
    finished_at: str | None = None
    stopped_at: str | None = None
    """When a run that did not complete stopped (`finished_at` is for completed runs only)."""
    git_sha: str | None = None
    git_dirty: bool | None = None
    derived_from: dict[str, Any] | None = None
    not_run: list[str] = Field(default_factory=list)
    """One line per configured suite the run skipped for a missing key (its config
    snapshot's `suites_not_run`): the run did not measure it, and every surface says so."""


class Report(_Out):
    schema_: str = Field(default=REPORT_SCHEMA, alias="schema")
    by: list[str] = Field(default_factory=list)
    runs: list[RunHeader] = Field(default_factory=list)
    suites: list[SuiteReport] = Field(default_factory=list)
    summary: list[Headline] = Field(default_factory=list)
    """One line per suite and arm of every run, in report order: what a reader sees first."""
    baseline: list[BaselineVerdict] = Field(default_factory=list)
    """Each reported run against the BASELINE, when one is set (given to `build_report`)."""
    figures: list[Figure] = Field(default_factory=list)
    """Figures across the reported runs (verdict distributions per suite, run by run)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (stable keys)."""
        return self.model_dump(mode="json", by_alias=True)
