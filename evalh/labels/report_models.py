"""What `evalh label report` returns, typed. `LabelReport.to_dict` is the
`evalh.label-report/2` document (`--json`), its keys in this order; every rate carries its
numerator and denominator, and every null figure the reason it is null."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Agreement:
    """Raw agreement and Cohen's kappa over the overlap of two label sequences."""

    overlap: int
    raw_agreement: float | None
    kappa: float | None
    kappa_null_reason: str | None


@dataclass(frozen=True)
class RaterPair:
    raters: tuple[str, str]
    agreement: Agreement

    def to_dict(self) -> dict[str, Any]:
        return {"raters": list(self.raters), **asdict(self.agreement)}


@dataclass(frozen=True)
class FleissKappa:
    raters: int
    subjects: int
    """Subjects rated by every rater (the only ones Fleiss' kappa is defined on)."""
    subjects_left_out: int
    kappa: float | None
    null_reason: str | None
    observed: float | None = None
    expected: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.kappa is None:  # observed/expected are given only with a kappa
            d.pop("observed")
            d.pop("expected")
        return d


@dataclass(frozen=True)
class KrippendorffAlpha:
    level: str
    subjects: int
    """Subjects with at least two usable ratings."""
    alpha: float | None
    null_reason: str | None
    null_left_out: int | None = None
    """Ordinal only: null ratings left out (null has no place on an ordinal scale)."""

    def to_dict(self) -> dict[str, Any]:
        d = {"level": self.level, "subjects": self.subjects, "alpha": self.alpha, "null_reason": self.null_reason}
        if self.null_left_out is not None:
            d["null_left_out"] = self.null_left_out
        return d


@dataclass(frozen=True)
class FieldAgreement:
    """Agreement between raters on one rated field, before adjudication."""

    subjects: int
    raters: list[str]
    pairs: list[RaterPair]
    fleiss_kappa: FleissKappa
    krippendorff_alpha: dict[str, KrippendorffAlpha]
    """Level (`nominal`, and `ordinal` for ordinal fields) → alpha."""

    def to_dict(self) -> dict[str, Any]:
        return {"subjects": self.subjects, "raters": self.raters, "pairs": [p.to_dict() for p in self.pairs],
                "fleiss_kappa": self.fleiss_kappa.to_dict(),
                "krippendorff_alpha": {k: a.to_dict() for k, a in self.krippendorff_alpha.items()}}


@dataclass(frozen=True)
class InterRater:
    pairs: list[RaterPair]
    """The pairs of the request's first field (or of the only field rated)."""
    fields: dict[str, FieldAgreement]
    """`fields.X`, `claims.X` or `dimensions.X` → its agreement."""
    before_adjudication: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"before_adjudication": self.before_adjudication, "pairs": [p.to_dict() for p in self.pairs],
                "fields": {k: f.to_dict() for k, f in self.fields.items()}}


@dataclass(frozen=True)
class JudgeAgreement:
    """One judge scorer's verdicts against the agreed human labels of the request's first
    field (`rated_field`): advisory, with no inferential interval."""

    scorer: str
    rated_field: str | None
    judge_models: list[str]
    judge_rubric_sha256: list[str]
    judge_prompt_sha256: list[str]
    same_rubric_as_humans: bool | None
    """None when the judge recorded no rubric digest."""
    judge_use: str
    interval_null_reasons: list[str]
    confusion: dict[str, dict[str, int]]
    """Human label → judge verdict → requests."""
    agreement: Agreement

    def to_dict(self) -> dict[str, Any]:
        return {"scorer": self.scorer, "field": self.rated_field, "judge_models": self.judge_models,
                "judge_rubric_sha256": self.judge_rubric_sha256, "judge_prompt_sha256": self.judge_prompt_sha256,
                "same_rubric_as_humans": self.same_rubric_as_humans, "judgeUse": self.judge_use,
                "interval_95": None, "interval_null_reasons": self.interval_null_reasons,
                "confusion": self.confusion, **asdict(self.agreement)}


@dataclass(frozen=True)
class LabelCounts:
    """Per request (a result with an output), by where its labelling stands."""

    results: int
    failed_captures: int
    withheld: int
    not_reviewed: int
    labelled_requests: int
    agreed: int
    abstained: int
    disputed: int
    missing: int
    """Rated in part."""
    unlabelled: int
    adjudicated: int
    single_rated: int


@dataclass(frozen=True)
class ClaimCounts:
    total: int
    selected: int
    exhaustive: int
    unattested: int
    unresolved: int
    unresolved_ids: list[str]
    note: str = "selected claims are descriptive: they do not establish whole-output precision"


@dataclass(frozen=True)
class StaleResult:
    suite: str
    case_id: str
    arm: str
    attempt: int
    raters: list[str]


@dataclass(frozen=True)
class Stale:
    results: list[StaleResult]
    note: str = "ratings of content that has since changed: reported, never used"

    def to_dict(self) -> dict[str, Any]:
        return {"ratings_of_changed_content": len(self.results), "results": [asdict(r) for r in self.results],
                "note": self.note}


@dataclass(frozen=True)
class OtherRubrics:
    rubrics: dict[str, int]
    """Rubric digest → ratings under it."""
    note: str = "ratings under another rubric version: never pooled with this report's"

    @property
    def ratings(self) -> int:
        return sum(self.rubrics.values())

    def to_dict(self) -> dict[str, Any]:
        return {"ratings": self.ratings, "rubrics": self.rubrics, "note": self.note}


@dataclass(frozen=True)
class Rate:
    """A rate over work items with its Wilson interval where one is valid."""

    name: str
    unit: str
    work_items: int
    rate: float | None
    numerator: int
    denominator: int
    interval_95: tuple[float, float] | None
    interval_null_reasons: list[str]

    def figures(self) -> dict[str, Any]:
        return {"rate": self.rate, "rate_numerator": self.numerator, "rate_denominator": self.denominator,
                "interval_95": list(self.interval_95) if self.interval_95 is not None else None,
                "interval_null_reasons": self.interval_null_reasons}

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "unit": self.unit, "work_items": self.work_items, **self.figures()}


@dataclass(frozen=True)
class DimensionRate:
    """The share of `true` among agreed non-null labels of one quality dimension (descriptive)."""

    polarity: str
    true: int
    labelled: int
    missing: int
    disputed: int
    abstained: int

    @property
    def rate(self) -> float | None:
        return self.true / self.labelled if self.labelled else None

    def to_dict(self) -> dict[str, Any]:
        return {"polarity": self.polarity, "true": self.true, "labelled": self.labelled, "rate": self.rate,
                "missing": self.missing, "disputed": self.disputed, "abstained": self.abstained}


@dataclass(frozen=True)
class Stratum:
    """One stratum (a value of each `--by` field, crossed), reported apart."""

    stratum: str
    by: dict[str, str]
    cases: int
    work_items: int
    counts: LabelCounts
    labels: dict[str, int]
    """Agreed label of the request's fields → requests."""
    dimensions: dict[str, DimensionRate]
    rates: list[Rate]
    """The rubric's `[[rates]]`."""
    positive: Rate | None
    """The `--positive` rate; None when none was asked for."""

    NO_POSITIVE = "no positive label given (--positive): nothing to count"

    @property
    def interval_null_reasons(self) -> list[str]:
        return self.positive.interval_null_reasons if self.positive is not None else [self.NO_POSITIVE]

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"stratum": self.stratum, "by": self.by, "cases": self.cases,
                             "work_items": self.work_items, **asdict(self.counts), "labels": self.labels,
                             "dimensions": {k: v.to_dict() for k, v in self.dimensions.items()},
                             "rates": [r.to_dict() for r in self.rates]}
        if self.positive is None:
            d.update(rate=None, rate_numerator=0, rate_denominator=0, interval_95=None,
                     interval_null_reasons=[self.NO_POSITIVE])
        else:
            d.update(self.positive.figures(), rate_unit=self.positive.unit)
        return d


@dataclass(frozen=True, kw_only=True)
class LabelReport:
    """The report of one run's labels under one rubric (`evalh.labels.report`)."""

    schema: str
    run_id: str
    suites: list[str]
    arm: str | None
    by: list[str]
    release_decision: str
    judge_use: str
    rubric_sha256: str
    other_rubrics: OtherRubrics
    stale: Stale
    raters: list[str]
    positive: str | None
    random_sample_attested: bool
    counts: LabelCounts
    claims: ClaimCounts
    inter_rater: InterRater
    judges: list[JudgeAgreement]
    strata: list[Stratum]
    corrected: list[Any] = field(default_factory=list)
    """Judge rates corrected by the labels (`evalh.labels.corrected.CorrectedRate`)."""
    ratings_store: dict[str, Any] = field(default_factory=dict)
    """The ratings store read: files, records, its digest (keep it apart to check that no
    file was rewritten, removed or added) and the files without record digests."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema, "run_id": self.run_id, "suites": self.suites, "arm": self.arm, "by": self.by,
            "releaseDecision": self.release_decision, "judgeUse": self.judge_use,
            "rubric_sha256": self.rubric_sha256, "other_rubrics": self.other_rubrics.to_dict(),
            "stale": self.stale.to_dict(), "raters": self.raters, "positive": self.positive,
            "random_sample_attested": self.random_sample_attested, "counts": asdict(self.counts),
            "claims": asdict(self.claims), "inter_rater": self.inter_rater.to_dict(),
            "judges": [j.to_dict() for j in self.judges], "strata": [s.to_dict() for s in self.strata],
            "corrected": [c.to_dict() for c in self.corrected],
            "ratings_store": self.ratings_store,
        }
