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

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from evalh.core.stats import wilson_interval
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


def producer(r: CaseResult, target: dict[str, Any] | None) -> tuple[str, str] | None:
    """(producer model, prompt digest) of a result, or None when either is unknown."""
    model = r.metadata.get("producer_model")
    prompt = r.metadata.get("prompt_sha256")
    if target and target.get("kind") in ("anthropic", "openai") and target.get("model"):
        model = model or target.get("model")
        if prompt is None and (target.get("prompt") is not None or target.get("system") is not None):
            prompt = sha256_of({"system": target.get("system"), "prompt": target.get("prompt")})
    if not model or not prompt:
        return None
    return str(model), str(prompt)


def pass_fail_source(results: Sequence[CaseResult]) -> Source:
    """`judge` when every score that decides pass/fail is a judge's, else `outcome`."""
    deciding = [s for r in results for s in r.scores if s.passed is not None]
    if deciding and all(s.judge_model is not None for s in deciding):
        return "judge"
    return "outcome"


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
    k = sum(bool(i.outcome) for i in settled)
    verdict = IntervalVerdict(successes=k, n=len(settled))
    reasons = verdict.reasons
    results = [r for i in items for r in i.results]
    if source == "judge":
        reasons.append("judge-only figure: a judge is advisory (judgeUse: advisory-only); its "
                       "figures are descriptive and get no inferential interval")
    if regime == "deterministic":
        reasons.append("deterministic suite: hand-picked regression cases are not a sample of "
                       "a population; counts are descriptive")
    if not items:
        reasons.append("no work item")
    splits = {r.metadata.get("split") for r in results}
    outside = {str(s) if s is not None else "(none)" for s in splits if s not in HELD_OUT_SPLITS}
    if outside:
        reasons.append(f"not every case is from a held-out split (found: {', '.join(sorted(outside))}): "
                       "development and regression cases do not represent a population")
    sampling = [r.metadata.get("sampling") for r in results]
    other = sorted({str(s) for s in sampling if s is not None and s != "random"})
    if other:
        reasons.append(f"sampling is {', '.join(other)} on {sum(s is not None and s != 'random' for s in sampling)} "
                       "result(s): hand-picked cases do not represent a population (--random-sample "
                       "cannot override a case's own sampling)")
    elif any(s is None for s in sampling) and not attested_random:
        reasons.append("not attested as a random held-out sample: set metadata.sampling = \"random\" "
                       "(or pass --random-sample for cases that say nothing)")
    if claim_rate:
        coverage = [r.metadata.get("claim_coverage") for r in results]
        if any(c != "exhaustive" for c in coverage):
            shown = sorted({str(c) if c is not None else "(unattested)" for c in coverage if c != "exhaustive"})
            reasons.append(f"claim coverage is {', '.join(shown)}, not exhaustive: selected claims "
                           "cannot establish a work-item rate")
    unsettled = len(items) - len(settled)
    if incomplete:
        reasons.append(incomplete_prefix + ", ".join(incomplete))
    elif unsettled:
        reasons.append(f"{unsettled} work item(s) without a settled outcome")
    sizes = {len(i.results) for i in items}
    if len(sizes) > 1:
        reasons.append(f"unequal attempts per work item ({min(sizes)} to {max(sizes)} captured)")
    if len(arms) > 1:
        reasons.append(f"more than one arm ({', '.join(sorted(arms))}): report one arm")
    producers = [producer(r, target) for r in results]
    unknown = sum(p is None for p in producers)
    if unknown:
        reasons.append(f"producer model or prompt digest unknown on {unknown} result(s) "
                       "(metadata.producer_model, metadata.prompt_sha256)")
    elif len(set(producers)) > 1:
        reasons.append(f"mixed producer models or prompt digests ({len(set(producers))} different)")
    if not reasons and verdict.n:
        low, high = wilson_interval(k, verdict.n)  # type: ignore[misc]
        verdict.low, verdict.high = low, high
    return verdict
