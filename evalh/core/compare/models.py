"""The models of a comparison: the policy that drives it and the result it returns.

``Comparison.model_dump(mode="json", by_alias=True)`` is the ``evalh compare --format json``
document (schema ``evalh.compare/2``). Its keys are a stable contract, documented in
``docs/methodology.md``: add keys with defaults, never rename or repurpose one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from evalh.config import Thresholds
from evalh.core.stats.sequential import RHO_FLAT, RHO_REGRESSED
from evalh.models import Regime

COMPARE_SCHEMA = "evalh.compare/2"

Verdict = Literal[
    "regressed", "improved", "flat", "added", "removed", "incomparable", "inconclusive"
]
"""Suite and overall verdicts."""

RowVerdict = Literal["regressed", "improved", "flat", "inconclusive", "incomparable"]
"""Verdict of one metric row."""

Estimand = Literal["fixed-suite", "population"]
"""What a row estimates: the change over these fixed cases, whose only randomness is the
attempts' (`fixed-suite`), or over the population the cases were sampled from."""

MetricName = Literal[
    "pass_rate", "mean_score", "score", "error_rate", "cost_usd", "latency_ms", "corrected_pass_rate"
]
"""`score` is the mean of one named scorer (`gate_scores`); its name is in `MetricRow.scorer`.
`latency_ms` is the geometric mean of per-case latency (the first version compared
medians, as `latency_ms_p50`). `corrected_pass_rate` is a judge's rate corrected by a random
labelled sample of each run (PPI++, `evalh.core.stats.ppi`); its scorer is in `MetricRow.scorer`."""

VERDICT_RANK: dict[str, int] = {
    "regressed": 5,
    "inconclusive": 4,
    "incomparable": 3,
    "improved": 2,
    "flat": 1,
}
"""Precedence when verdicts combine (suite from rows or arms, overall from suites)."""


def worst(verdicts: Sequence[Verdict], default: Verdict = "flat") -> Verdict:
    """The verdict of highest precedence (`regressed` > `inconclusive` > `incomparable` >
    `improved` > `flat`); `default` when there is none."""
    ranked = [v for v in verdicts if v in VERDICT_RANK]
    return max(ranked, key=VERDICT_RANK.__getitem__) if ranked else default


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class RoundLook(BaseModel):
    """One look of `evalh run --until-decided` at a suite (`core.run.rounds`): the round
    just finished, and per arm the information fraction of every planned round, fixed from
    the baseline before the candidate ran (`stats.sequential.information_fractions`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    round: int = Field(ge=1)
    fractions: dict[str, list[float]]
    rho: float = Field(RHO_REGRESSED, gt=0)
    """Exponent of the `regressed` side's error-spending function α·t^ρ."""
    rho_flat: float = Field(RHO_FLAT, gt=0)
    """Exponent of the `flat` side's (`stats.sequential.RHO_FLAT`)."""


def recorded_looks(rounds: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last recorded look of each suite of a run made in rounds (`Run.rounds`), as
    `ComparePolicy.rounds` takes it: a later `evalh compare` of that run decides its rows
    with the same confidence sequence, never with a fixed-n interval after the looks."""
    if not rounds:
        return None
    out: dict[str, Any] = {}
    for name, doc in (rounds[-1].get("suites") or {}).items():
        if isinstance(doc, dict) and doc.get("look") and isinstance(doc.get("fractions"), dict):
            # a run recorded before the flat side had its own schedule spent both alike
            out[name] = RoundLook(round=int(doc["look"]), fractions=doc["fractions"],
                                  rho=float(doc.get("rho", 3.0)), rho_flat=float(doc.get("rho_flat", 3.0)))
    return out or None



class ComparePolicy(BaseModel):
    """How to compare. Allowances left as None come from each suite's thresholds in the run
    documents (the candidate's config snapshot first, else the base's, else the defaults);
    a value here (a command-line flag) overrides them for every suite."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pass_rate_drop: float | None = Field(None, ge=0, le=1)
    mean_score_drop: float | None = Field(None, ge=0, le=1)
    cost_increase_pct: float | None = Field(None, ge=0)
    latency_p50_increase_pct: float | None = Field(None, ge=0)
    confidence: float = Field(0.95, gt=0.5, lt=1)
    """Two-sided confidence of every interval. A row regresses when its interval lies wholly
    beyond the allowance after the family adjustment, so the family-wise rate of false
    regressions is at most (1 − confidence)/2."""
    power: float = Field(0.8, gt=0.5, lt=1)
    """Power used to estimate the cases that would settle an inconclusive verdict."""
    min_coverage: float | None = Field(None, ge=0, le=1)
    """`--min-coverage`: the share of the base's results the candidate must measure, for
    every suite (overrides the suites' `min_coverage`)."""
    allow_removed_suites: tuple[str, ...] = ()
    """`--allow-removed-suite S`: suites the candidate left out on purpose (its config no
    longer has them, or the run did not select them); named, not gating. A suite skipped
    for a missing key or not reached is never allowed."""
    estimand: Estimand | None = None
    """`fixed-suite` or `population` for every suite's pass-rate and score rows (`--estimand`);
    None: each suite's `estimand` key, else `fixed-suite`."""
    rounds: dict[str, RoundLook] | None = None
    """Suite name → its current look, when the candidate is run in rounds
    (`--until-decided`): its fixed-suite gating rows are decided by the round's confidence
    sequence instead of a fixed-n interval (`compare.family.apply_rounds`)."""

    def overrides(self) -> dict[str, float]:
        """The allowances set explicitly, by `Thresholds` field name."""
        names = ("pass_rate_drop", "mean_score_drop", "cost_increase_pct", "latency_p50_increase_pct")
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def resolve(self, raw: dict[str, Any] | None) -> Thresholds:
        """Thresholds from a config snapshot's `thresholds` table with the overrides applied."""
        base = Thresholds.model_validate(raw or {})
        return base.model_copy(update=self.overrides())


class MetricRow(_Out):
    """One figure compared between the runs, over the cases both runs have."""

    arm: str
    name: MetricName
    better: Literal["higher", "lower"]
    base: float | None
    """The base run's figure over the paired cases (null without data)."""
    candidate: float | None
    delta: float | None
    """candidate − base, in the metric's own unit."""
    change: float | None
    """The tested change: `delta` for rates and scores (`unit: "abs"`), the relative change
    in percent for cost and latency (`unit: "pct"`)."""
    unit: Literal["abs", "pct"]
    allowance: float
    """How far `change` may move the wrong way and still be `flat`, in `unit`."""
    interval: tuple[float, float] | None
    """Two-sided interval of `change` at the policy's confidence; null when it cannot be
    computed (too few cases)."""
    method: str
    p_value: float | None = None
    """McNemar mid-p for paired single-attempt pass/fail; null otherwise."""
    n: int
    """Paired cases behind the figure."""
    verdict: RowVerdict
    cases_needed: int | None = None
    """For an inconclusive row: paired cases at which a change of `cases_needed_for` would be
    called `regressed` with the policy's power (and an unchanged product `flat`)."""
    note: str | None = None
    scorer: str | None = None
    """For a `score` row: the scorer whose mean it compares."""
    gating: bool = True
    """False for a row shown for information only (the blended `mean_score` when the suite
    names `gate_scores`): it is not in the family and does not move the suite's verdict."""
    direction: Literal["worse", "better", "none"] | None = None
    """Side of zero the estimate lies on (oriented: `worse` is a drop, or a rise in cost,
    latency or errors); null without an estimate."""
    p_worse: float | None = None
    """One-sided p-value of "the true change is worse than the allowance"; null without an
    interval."""
    p_adjusted: float | None = None
    """`p_worse` adjusted for the family (Holm); the row regresses when it is at most
    `Comparison.family.alpha`."""
    alpha_adjusted: float | None = None
    """The (weighted) Holm level this row's `p_worse` was held to: the family alpha times
    its weight over the weights of the rows not rejected before it (alpha / (m − rank + 1)
    with equal weights)."""
    weight: float | None = None
    """The row's share of the family's alpha at the first step: its suite's `gate_weight`
    over the sum of every gating suite's, split evenly over the suite's tested gating rows;
    null for a row outside the family."""
    detectable_change: float | None = None
    """For a gating row with an interval: the smallest change on the worse side (in `unit`,
    signed) that these cases and attempts, with this noise, call `regressed` with the
    policy's power at the row's family level (the minimum detectable change)."""
    clusters: int | None = None
    """Independent units behind the interval: the paired cases, or their clusters (groups)."""
    cluster_by: str | None = None
    """The case metadata field the interval clusters on, when it does."""
    cases_needed_for: float | None = None
    """The change, in `unit`, that `cases_needed` (and `repeats_needed`) are computed for."""
    repeats_needed: int | None = None
    """Repeats per case at the current cases that would give the same power, when repeats
    can (only the within-case part of the noise shrinks with repeats); null otherwise."""
    estimand: Estimand | None = None
    """What the interval is of: `fixed-suite` (the change over these cases; randomness of the
    attempts only) or `population` (cases sampled from a population); null without one."""
    rounds: int | None = None
    """With `--until-decided`: the round whose confidence sequence gave the verdict (the
    interval is that round's, valid over every round at once); null for a fixed-n row."""
    _evidence: Any = PrivateAttr(default=None)


class CaseRef(_Out):
    """A case named in a comparison, with its outcome on each side (null: absent)."""

    case_id: str
    arm: str = "default"
    base: str | None = None
    candidate: str | None = None
    base_score: float | None = None
    candidate_score: float | None = None


class NamedCases(_Out):
    regressed: list[CaseRef] = Field(default_factory=list)
    """Deterministic: passed → failed/errored. Stochastic: passed every attempt → failed
    every attempt (informational; the verdict comes from the metric rows)."""
    improved: list[CaseRef] = Field(default_factory=list)
    changed: list[CaseRef] = Field(default_factory=list)
    """Same id, different content digest: reported, not compared."""
    added: list[CaseRef] = Field(default_factory=list)
    removed: list[CaseRef] = Field(default_factory=list)
    not_run: list[CaseRef] = Field(default_factory=list)
    """Missing from a side whose run is not complete (partial, failed, running)."""
    errored_new: list[CaseRef] = Field(default_factory=list)
    errored_fixed: list[CaseRef] = Field(default_factory=list)
    judge_error: list[CaseRef] = Field(default_factory=list)
    """A judge could not score it on some side: not a product failure, not compared."""


class SuiteCounts(_Out):
    base_cases: int = 0
    candidate_cases: int = 0
    compared: int = 0
    changed: int = 0
    added: int = 0
    removed: int = 0
    not_run: int = 0
    skipped: int = 0


class ErrorCounts(_Out):
    """Errored and judge_error results (attempts), counted apart on each side."""

    base_results: int = 0
    candidate_results: int = 0
    base_errored: int = 0
    candidate_errored: int = 0
    base_judge_error: int = 0
    candidate_judge_error: int = 0
    errors_rose: bool = False
    judge_errors_rose: bool = False


class Coverage(_Out):
    """How much of what the base measured the candidate measured too: of the base's
    (case, arm, attempt) results with a trustworthy result (passed or failed), the share
    the candidate has a trustworthy result for, on the same case content. A baseline of
    several runs counts its attempts per run (their mean, rounded up)."""

    measured: int
    of: int
    """The denominator: the base's trustworthy results."""
    share: float | None
    """measured / of; null when the base measured nothing."""
    minimum: float
    absent: int = 0
    """Base results whose (case, arm) the candidate does not have (removed, not run)."""
    changed: int = 0
    """Base results whose case content changed in the candidate (not compared)."""
    untrusted: int = 0
    """Base results the candidate has no trustworthy result for: errored, judge_error,
    skipped, or fewer attempts."""
    below: bool = False
    """share < minimum (or nothing measured): the suite cannot pass."""

    def line(self) -> str:
        share = "–" if self.share is None else f"{self.share * 100:.3g} %"
        parts = [f"{n} {what}" for n, what in (
            (self.absent, "not in the candidate"), (self.changed, "changed content"),
            (self.untrusted, "without a trustworthy result (errored, judge_error, skipped or "
                             "fewer attempts)")) if n]
        missing = f": {', '.join(parts)}" if parts else ""
        return (f"coverage {self.measured} of {self.of} base results measured ({share}), "
                f"minimum {self.minimum * 100:.3g} %{missing}")


class SuiteComparison(_Out):
    suite: str
    regime: Regime | None
    verdict: Verdict
    reasons: list[str] = Field(default_factory=list)
    partial: bool = False
    """Either run is not complete: the verdict covers only the cases both finished."""
    thresholds: dict[str, float] = Field(default_factory=dict)
    thresholds_source: str = "defaults"
    counts: SuiteCounts = Field(default_factory=SuiteCounts)
    errors: ErrorCounts = Field(default_factory=ErrorCounts)
    metrics: list[MetricRow] = Field(default_factory=list)
    arms: dict[str, Verdict] = Field(default_factory=dict)
    """Per-arm verdicts, present when the suite has arms other than `default`."""
    cases: NamedCases = Field(default_factory=NamedCases)
    cases_needed: int | None = None
    """Largest `cases_needed` of the inconclusive rows."""
    blocking: list[str] = Field(default_factory=list)
    """Why this suite fails the gate although no row regressed (the candidate produced
    nothing that could be compared, or cases it passed before could not be scored now)."""
    coverage: Coverage | None = None
    """What share of the base's results the candidate measured (null for a suite only one
    run has, or whose regime changed)."""
    advisory: dict[str, str] | None = None
    """Set for an advisory suite: `judgeUse: advisory-only`, `releaseDecision: not-assessed`
    (it never gates)."""
    _measured_nothing: bool = PrivateAttr(default=False)
    """The candidate has no pass/fail result for some arm of the base: gates even an
    advisory suite."""
    _arm_verdicts: dict[str, Any] = PrivateAttr(default_factory=dict)
    _compared: list[Any] = PrivateAttr(default_factory=list)
    """The compared cases of each arm (`compare.metrics.Pairs`), in the order compared."""

    def compared_cases(self) -> Iterator[tuple[str, str, str, str]]:
        """Every compared (case_id, arm, base outcome, candidate outcome), for JUnit; not
        part of the JSON form."""
        for pairs in self._compared:
            base, cand = pairs.base, pairs.cand
            for rb, rc in pairs:
                yield cand.case_ids[rc], cand.arm(rc), base.outcome(rb), cand.outcome(rc)


class RunRef(_Out):
    run_id: str
    label: str | None = None
    status: str
    started_at: str
    git_sha: str | None = None
    git_dirty: bool | None = None


class ConfigDifference(_Out):
    """A setting that differs between the runs; `suite` is null for run-wide settings."""

    suite: str | None
    key: str
    base: Any = None
    candidate: Any = None


class Family(_Out):
    """The family of tests one comparison makes: every gating row of every stochastic suite
    and arm with an interval. Holm's step-down keeps the chance that any of them is falsely
    `regressed` at or below `alpha`."""

    size: int = 0
    alpha: float = 0.025
    """Family-wise level of a false `regressed`: (1 − confidence)/2."""
    method: str = "Holm step-down over the gating rows' one-sided p-values"
    select: float | None = None
    """τ when the family is conditionalized (two suites or more): a row takes part only when
    its `p_worse` is at most τ, tested with p_worse/τ; null for a plain (weighted) Holm."""
    weights: dict[str, float] = Field(default_factory=dict)
    """Per suite with a tested row: its `gate_weight` (1 unless declared). A suite's share of
    the family's alpha at the first step is its weight over the sum of them."""


class Comparison(_Out):
    schema_: str = Field(default=COMPARE_SCHEMA, alias="schema")
    base: RunRef
    candidate: RunRef
    config_differences: list[ConfigDifference] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    suites: dict[str, SuiteComparison] = Field(default_factory=dict)
    verdict: Verdict
    regressed: bool
    """Some suite regressed."""
    fails_gate: bool = False
    """What `--fail-on-regression` gates on: some suite regressed, or is `blocking` (it could
    not be compared because the candidate produced nothing comparable)."""
    gate_reasons: list[str] = Field(default_factory=list)
    """One line per suite that fails the gate."""
    family: Family = Field(default_factory=Family)
    inconclusive: bool
    """Some suite (or row) is inconclusive."""
    inconclusive_worse: bool = False
    """Some gating row is inconclusive with its estimate on the worse side: what
    `--fail-on-inconclusive` gates on."""
    policy: dict[str, Any] = Field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (stable keys)."""
        return self.model_dump(mode="json", by_alias=True)
