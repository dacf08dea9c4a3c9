"""Where a Wilson 95 % interval is valid: one rule for `label report`, `evalh report` and
the dashboard.

An interval generalises from the work items measured to a population of work items. It
is given only when every condition of the reference harness holds; otherwise it is null
and *every* failing condition is listed (not just the first):

- the figure is not judge-only: a judge is advisory, its figures are descriptive;
- the suite is not a deterministic (regression) suite: hand-picked failures are no sample;
- every case is from a held-out split (`metadata.split` in `HELD_OUT_SPLITS`);
- random sampling is attested: `metadata.sampling = "random"` on the cases, or the
  caller's attestation (`--random-sample`) for cases that say nothing. A case's own
  `sampling` other than `random` (for example `hand-picked`) cannot be overridden;
- for claim rates, exhaustive claim coverage is attested (`metadata.claim_coverage =
  "exhaustive"`): selected claims cannot establish a work-item rate;
- every work item has a settled outcome (complete agreed labels, no failed outcome);
- every work item has the same number of captured attempts;
- one arm;
- a known producer model and prompt digest, the same on every result (from
  `metadata.producer_model` / `metadata.prompt_sha256`, or a model target's `model` and the
  digest of its prompt): unknown or mixed disable intervals.

The trial is the **work item** (`metadata.group`, else the case): one binary trial per work
item across all its attempts and claims, however many it has. Sampling and coverage are
owner attestations, not verified facts. Intervals are marginal, not simultaneous.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from evalh.core.stats.intervals import wilson_interval
from evalh.models import CaseResult, sha256_of

HELD_OUT_SPLITS = frozenset({"heldout", "held-out", "held_out", "holdout", "test"})
"""Splits read as a sample held out from development."""

Source = Literal["human", "outcome", "judge"]


@dataclass
class WorkItem:
    key: str
    results: list[CaseResult]
    """Its captured attempts (every case and attempt of the work item)."""
    outcome: bool | None
    """The trial's result (True: counted in the numerator); None when it is not settled."""


@dataclass
class IntervalVerdict:
    successes: int
    n: int
    low: float | None = None
    high: float | None = None
    reasons: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float | None:
        return self.successes / self.n if self.n else None

    def as_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "rate_numerator": self.successes, "rate_denominator": self.n,
                "interval_95": [self.low, self.high] if self.low is not None else None,
                "interval_null_reasons": list(self.reasons)}


def work_item_key(r: CaseResult) -> str:
    group = r.metadata.get("group")
    return f"group:{group}" if group is not None else f"case:{r.case_id}"


def target_producer(target: dict[str, Any] | None) -> tuple[Any, str | None]:
    """(model, prompt digest) a model target gives the results that do not name their own;
    (None, None) for any other target."""
    if target and target.get("kind") in ("anthropic", "openai") and target.get("model"):
        prompted = target.get("prompt") is not None or target.get("system") is not None
        return target.get("model"), sha256_of({"system": target.get("system"), "prompt": target.get("prompt")}) \
            if prompted else None
    return None, None


def producer(r: CaseResult, target: dict[str, Any] | None,
             of_target: tuple[Any, str | None] | None = None) -> tuple[str, str] | None:
    """(producer model, prompt digest) of a result, or None when either is unknown.
    `of_target`: `target_producer(target)`, when the caller has it (one digest a suite)."""
    model = r.metadata.get("producer_model")
    prompt = r.metadata.get("prompt_sha256")
    target_model, target_prompt = of_target or target_producer(target)
    model = model or target_model
    if prompt is None:
        prompt = target_prompt
    if not model or not prompt:
        return None
    return str(model), str(prompt)


def pass_fail_source(results: Sequence[CaseResult]) -> Source:
    """`judge` when every score that decides pass/fail is a judge's, else `outcome`."""
    deciding = [s for r in results for s in r.scores if s.passed is not None]
    if deciding and all(s.judge_model is not None for s in deciding):
        return "judge"
    return "outcome"


class ResultTraits:
    """What the interval rule reads of the results themselves, gathered a result at a time
    (`add`), so that a reader streaming a run's results keeps these few sets, not the results:
    splits outside the held-out ones, sampling attestations, claim coverage, producers."""

    def __init__(self, target: dict[str, Any] | None = None) -> None:
        self.target = target
        self._of_target = target_producer(target)
        self.outside: set[str] = set()
        self.sampling_other: set[str] = set()
        self.sampling_other_n = 0
        self.sampling_missing = False
        self.coverage: set[str] = set()
        """Claim coverage other than exhaustive, as shown (`(unattested)` for none)."""
        self.producers: set[tuple[str, str]] = set()
        self.producer_unknown = 0

    def add(self, r: CaseResult) -> None:
        meta = r.metadata
        split = meta.get("split")
        if not (isinstance(split, str) and split in HELD_OUT_SPLITS):  # a list or table is no split
            self.outside.add(str(split) if split is not None else "(none)")
        sampling = meta.get("sampling")
        if sampling is None:
            self.sampling_missing = True
        elif sampling != "random":
            self.sampling_other.add(str(sampling))
            self.sampling_other_n += 1
        coverage = meta.get("claim_coverage")
        if coverage != "exhaustive":
            self.coverage.add(str(coverage) if coverage is not None else "(unattested)")
        p = producer(r, self.target, self._of_target)
        if p is None:
            self.producer_unknown += 1
        else:
            self.producers.add(p)

    @classmethod
    def of(cls, results: Iterable[CaseResult], target: dict[str, Any] | None = None) -> ResultTraits:
        traits = cls(target)
        for r in results:
            traits.add(r)
        return traits


def interval_where_valid(
    items: Sequence[WorkItem],
    *,
    source: Source,
    arms: set[str],
    attested_random: bool = False,
    claim_rate: bool = False,
    regime: str | None = None,
    target: dict[str, Any] | None = None,
    incomplete: Sequence[str] = (),
    incomplete_prefix: str = "labels incomplete: ",
) -> IntervalVerdict:
    """The rate over settled work items and its Wilson interval, or every reason it has none.

    `incomplete` are the caller's own words for missing outcomes (for example "2 disputed");
    without them, unsettled items are counted here.
    """
    settled = [i for i in items if i.outcome is not None]
    return interval_verdict(
        successes=sum(bool(i.outcome) for i in settled), settled=len(settled), items=len(items),
        sizes={len(i.results) for i in items},
        traits=ResultTraits.of((r for i in items for r in i.results), target),
        source=source, arms=arms, attested_random=attested_random, claim_rate=claim_rate,
        regime=regime, incomplete=incomplete, incomplete_prefix=incomplete_prefix,
    )


def interval_verdict(
    *,
    successes: int,
    settled: int,
    items: int,
    sizes: set[int],
    traits: ResultTraits,
    source: Source,
    arms: set[str],
    attested_random: bool = False,
    claim_rate: bool = False,
    regime: str | None = None,
    incomplete: Sequence[str] = (),
    incomplete_prefix: str = "labels incomplete: ",
) -> IntervalVerdict:
    """`interval_where_valid` from counts: `successes` of `settled` work items out of
    `items`, `sizes` the distinct numbers of attempts a work item has, `traits` what the
    results themselves say. The one place the rule is written."""
    k = successes
    verdict = IntervalVerdict(successes=k, n=settled)
    reasons = verdict.reasons
    if source == "judge":
        reasons.append("judge-only figure: a judge is advisory (judgeUse: advisory-only); its "
                       "figures are descriptive and get no inferential interval")
    if regime == "deterministic":
        reasons.append("deterministic suite: hand-picked regression cases are not a sample of "
                       "a population; counts are descriptive")
    if not items:
        reasons.append("no work item")
    if traits.outside:
        reasons.append(f"not every case is from a held-out split (found: {', '.join(sorted(traits.outside))}): "
                       "development and regression cases do not represent a population")
    if traits.sampling_other:
        reasons.append(f"sampling is {', '.join(sorted(traits.sampling_other))} on {traits.sampling_other_n} "
                       "result(s): hand-picked cases do not represent a population (--random-sample "
                       "cannot override a case's own sampling)")
    elif traits.sampling_missing and not attested_random:
        reasons.append("not attested as a random held-out sample: set metadata.sampling = \"random\" "
                       "(or pass --random-sample for cases that say nothing)")
    if claim_rate and traits.coverage:
        reasons.append(f"claim coverage is {', '.join(sorted(traits.coverage))}, not exhaustive: selected claims "
                       "cannot establish a work-item rate")
    unsettled = items - settled
    if incomplete:
        reasons.append(incomplete_prefix + ", ".join(incomplete))
    elif unsettled:
        reasons.append(f"{unsettled} work item(s) without a settled outcome")
    if len(sizes) > 1:
        reasons.append(f"unequal attempts per work item ({min(sizes)} to {max(sizes)} captured)")
    if len(arms) > 1:
        reasons.append(f"more than one arm ({', '.join(sorted(arms))}): report one arm")
    if traits.producer_unknown:
        reasons.append(f"producer model or prompt digest unknown on {traits.producer_unknown} result(s) "
                       "(metadata.producer_model, metadata.prompt_sha256)")
    elif len(traits.producers) > 1:
        reasons.append(f"mixed producer models or prompt digests ({len(traits.producers)} different)")
    if not reasons and verdict.n:
        low, high = wilson_interval(k, verdict.n)  # type: ignore[misc]
        verdict.low, verdict.high = low, high
    return verdict
