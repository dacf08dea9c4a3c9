"""Per-class (per-lens) confusion scoring, as a pure function and as the `classification` scorer.

A case carries one label per lens (`expected = {"lenses": {"provenance": "refuted", …}}`)
or a single label; the output carries one verdict per lens in the same shape. With a
`positive` class (for a refuter panel: `refuted`) every labelled lens of every (case,
attempt) is one of `tp`, `fp`, `tn`, `fn`, or `errored`:

- A lens whose verdict is missing, null or `{"error": …}` — or every lens of a case whose
  target failed — is `errored`: a failed call is never a silent negative. Errored lenses
  stay out of precision and recall and are counted apart; `effective_recall` counts an
  error on a known positive as a miss.
- Every rate carries its denominator and is null when that denominator is zero.
- The roll-up is a macro average over lenses plus the `worst` lens (minimum *effective*
  recall, an error on a known positive counted as a miss), named — so a lens that errored
  on every call is the worst lens, as every report surface says. There is deliberately no
  volume-blended precision or recall: one dead lens must not hide behind four healthy ones.

Configured as a scorer::

    scorers = [{ type = "classification", field = "lenses", expected_field = "lenses",
                 positive = "refuted" }]

Per case the `Score` passes when every labelled lens is right (and none errored); its
`details` hold each lens's expected label, predicted verdict and outcome. The suite-level
confusion report lands in the run document under `suites.<S>.details.<scorer name>`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalh.fields import MISSING, pick, short
from evalh.models import Case, CaseResult, Score
from evalh.scorers.base import ScoreContext, Scorer, ScorerConfig, SuiteView

if TYPE_CHECKING:
    from evalh.services import RunServices

Outcome = Literal["tp", "fp", "tn", "fn", "errored"]
Label = str | bool | int | float
ERRORED = object()
"""Sentinel verdict: the lens gave no usable verdict."""


# --------------------------------------------------------------------------- pure core


def verdict_of(value: Any, verdict_key: str = "verdict") -> tuple[Any, str | None]:
    """A lens verdict and, when it is unusable, why: `(ERRORED, reason)`.

    A scalar is the verdict itself; a table gives its `verdict_key`; `{"error": …}`, null,
    or a table without the key is an error (the lens did not answer).
    """
    if value is None or value is MISSING:
        return ERRORED, "no verdict"
    if isinstance(value, Mapping):
        if value.get("error"):
            return ERRORED, short(value["error"], 120)
        if verdict_key in value and value[verdict_key] is not None:
            return value[verdict_key], None
        return ERRORED, f"no {verdict_key!r} in the lens result"
    if isinstance(value, str | bool | int | float):
        return value, None
    return ERRORED, f"unusable verdict of type {type(value).__name__}"


def is_positive(value: Any, positive: Any) -> bool:
    """Labels compare as text (`true` the JSON boolean equals `"true"`), so a class given on
    the command line or in TOML matches however the dataset spelled it."""
    return _text(value) == _text(positive)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def lens_outcome(expected: Any, predicted: Any, positive: Any) -> Outcome:
    """The confusion cell of one labelled lens. `predicted` may be `ERRORED`."""
    if predicted is ERRORED:
        return "errored"
    if is_positive(expected, positive):
        return "tp" if is_positive(predicted, positive) else "fn"
    return "fp" if is_positive(predicted, positive) else "tn"


@dataclass
class LensCounts:
    """Raw counts of one lens. `errored_positive`: errors on known positives."""

    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0
    errored: int = 0
    errored_positive: int = 0

    def add(self, outcome: Outcome, expected_positive: bool) -> None:
        if outcome == "errored":
            self.errored += 1
            self.errored_positive += int(expected_positive)
        else:
            setattr(self, outcome, getattr(self, outcome) + 1)

    def report(self) -> dict[str, Any]:
        """Counts plus each rate with its denominator (rate null when the denominator is 0)."""
        out: dict[str, Any] = {
            "n": self.tp + self.fp + self.tn + self.fn + self.errored,
            "tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn,
            "errored": self.errored, "errored_positive": self.errored_positive,
        }
        for name, num, den in (
            ("precision", self.tp, self.tp + self.fp),
            ("recall", self.tp, self.tp + self.fn),
            ("fp_rate", self.fp, self.fp + self.tn),
            ("fn_rate", self.fn, self.tp + self.fn),
            ("effective_recall", self.tp, self.tp + self.fn + self.errored_positive),
        ):
            out[name] = num / den if den else None
            out[f"{name}_denominator"] = den
        return out


ROLLED_UP = ("precision", "recall", "fp_rate", "fn_rate", "effective_recall")


def rollup(lenses: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Macro average of each rate over the lenses where it is defined, and the worst lens.

    `worst` is the lens of minimum effective recall (an error on a known positive counts as
    a miss, so a lens that errored on every call has 0.0 and is the worst, never hidden);
    ties: every tied lens listed, the first by name shown. Its plain `recall` (errors left
    out, null for a dead lens) is given beside it. Lenses without a known positive have
    no recall of either kind and are named in `no_recall`.
    """
    macro: dict[str, Any] = {}
    for rate in ROLLED_UP:
        defined = {k: v[rate] for k, v in lenses.items() if v.get(rate) is not None}
        macro[rate] = {
            "value": sum(defined.values()) / len(defined) if defined else None,
            "lenses": len(defined),
            "undefined": sorted(k for k in lenses if k not in defined),
        }
    effective = {k: v["effective_recall"] for k, v in lenses.items() if v.get("effective_recall") is not None}
    worst: dict[str, Any] | None = None
    if effective:
        low = min(effective.values())
        tied = sorted(k for k, v in effective.items() if v == low)
        worst = {"lens": tied[0], "by": "effective_recall", "effective_recall": low, "tied": tied,
                 "recall": lenses[tied[0]].get("recall")}
    return {
        "macro": macro,
        "worst": worst,
        "no_recall": sorted(k for k in lenses if k not in effective),
    }


def confusion_report(observations: Iterable[tuple[str, Outcome, bool]]) -> dict[str, Any]:
    """Per-lens counts and rates plus the roll-up, from (lens, outcome, expected_positive)."""
    counts: dict[str, LensCounts] = {}
    for lens, outcome, expected_positive in observations:
        counts.setdefault(lens, LensCounts()).add(outcome, expected_positive)
    lenses = {k: counts[k].report() for k in sorted(counts)}
    return {"lenses": lenses, **rollup(lenses)}


# --------------------------------------------------------------------------- the scorer


class ClassificationConfig(ScorerConfig):
    """`type = "classification"`: per-lens confusion against a positive class."""

    SNAPSHOT = frozenset(
        {"type", "name", "field", "expected_field", "positive", "lenses", "verdict_key", "single_lens"}
    )

    type: Literal["classification"]
    positive: Label
    """The positive class (for a refuter panel: `refuted`); every other label is negative."""
    field: str | None = None
    """Dotted path to the verdicts in the output: a table lens → verdict, or one verdict."""
    expected_field: str | None = None
    """Dotted path to the labels in the case's `expected`: a table lens → label, or one label."""
    lenses: list[str] | None = None
    """Score only these lenses (default: every labelled lens)."""
    verdict_key: str = "verdict"
    """When a lens's output is a table, the key holding its verdict."""
    single_lens: str = "label"
    """The lens name used when labels and verdicts are single values."""


CONFIGS: dict[str, type[ScorerConfig]] = {"classification": ClassificationConfig}


def labels_of(config: ClassificationConfig, expected: Any) -> tuple[dict[str, Any], bool]:
    """(lens → label, per_lens) for one case. Null labels are unlabelled and left out;
    `per_lens` is false when the case carries one label (named `single_lens`)."""
    raw = pick(expected, config.expected_field)
    if raw is MISSING or raw is None:
        return {}, False
    per_lens = isinstance(raw, Mapping)
    labels = {str(k): v for k, v in raw.items()} if per_lens else {config.single_lens: raw}
    if config.lenses is not None:
        labels = {k: v for k, v in labels.items() if k in config.lenses}
    return {k: v for k, v in labels.items() if v is not None}, per_lens


def judge_case(config: ClassificationConfig, expected: Any, output: Any) -> dict[str, dict[str, Any]]:
    """Per labelled lens: expected label, predicted verdict (null when errored), outcome."""
    labels, per_lens = labels_of(config, expected)
    raw = pick(output, config.field)
    lenses: dict[str, dict[str, Any]] = {}
    verdict: Any
    why: str | None
    for lens in sorted(labels):
        if raw is MISSING:
            verdict, why = ERRORED, f"output has no field {config.field!r}"
        elif not per_lens:
            verdict, why = verdict_of(raw, config.verdict_key)
        elif isinstance(raw, Mapping):
            verdict, why = verdict_of(raw.get(lens), config.verdict_key)
        else:
            verdict, why = ERRORED, "output holds no per-lens verdicts"
        row: dict[str, Any] = {
            "expected": labels[lens],
            "predicted": None if verdict is ERRORED else verdict,
            "outcome": lens_outcome(labels[lens], verdict, config.positive),
        }
        if why:
            row["error"] = why
        lenses[lens] = row
    return lenses


def observations(
    config: ClassificationConfig, results: Iterable[CaseResult]
) -> Iterable[tuple[str, Outcome, bool]]:
    """(lens, outcome, expected_positive) for every labelled lens of every result.

    A result the target failed on has no score: each of its labelled lenses is `errored`.
    """
    name = config.display_name
    for r in results:
        if r.status == "skipped":
            continue
        score = next((s for s in r.scores if s.scorer == name), None)
        lenses = score.details.get("lenses") if score is not None else None
        if not isinstance(lenses, Mapping):
            labels, _ = labels_of(config, r.expected)
            lenses = {k: {"expected": v, "outcome": "errored"} for k, v in labels.items()}
        for lens, row in lenses.items():
            yield lens, row["outcome"], is_positive(row["expected"], config.positive)


def suite_confusion(config: ClassificationConfig, results: Iterable[CaseResult]) -> dict[str, Any]:
    """The suite-level report: per arm, per-lens counts, rates, macro average and worst lens.

    The unit is one (case, attempt): with repeats, each attempt counts once.
    """
    by_arm: dict[str, list[CaseResult]] = {}
    for r in results:
        by_arm.setdefault(r.arm, []).append(r)
    return {
        "positive": config.positive,
        "unit": "case attempt",
        "arms": {arm: confusion_report(observations(config, rs)) for arm, rs in sorted(by_arm.items())},
    }


class ClassificationScorer(Scorer):
    kind = "deterministic"

    def __init__(self, config: ClassificationConfig) -> None:
        self.config = config

    async def score(self, case: Case, output: Any, ctx: ScoreContext) -> Score:
        return self.check(case, output)

    def check(self, case: Case, output: Any) -> Score:
        name = self.config.display_name
        lenses = judge_case(self.config, case.expected, output)
        if not lenses:
            return Score(scorer=name, abstained=True, rationale="case has no labels to score")
        correct = sum(row["outcome"] in ("tp", "tn") for row in lenses.values())
        wrong = {o: [k for k, row in lenses.items() if row["outcome"] == o] for o in ("fn", "fp", "errored")}
        why = "; ".join(f"{o}: {', '.join(ks)}" for o, ks in wrong.items() if ks)
        return Score(
            scorer=name,
            value=correct / len(lenses),
            passed=correct == len(lenses),
            rationale=why or f"{correct}/{len(lenses)} lenses right",
            verdict=_single_verdict(lenses, self.config.single_lens),
            details={"positive": self.config.positive, "lenses": lenses},
        )

    async def finalize(
        self, suite: SuiteView, results: list[CaseResult], services: RunServices
    ) -> dict[str, Any]:
        """The suite-level confusion report, kept in the run under this scorer's name."""
        return suite_confusion(self.config, results)


def _single_verdict(lenses: dict[str, dict[str, Any]], single: str) -> str | None:
    """The predicted label as the Score's verdict, when the case has a single label."""
    if list(lenses) != [single] or lenses[single]["predicted"] is None:
        return None
    return str(lenses[single]["predicted"])


def build(config: ScorerConfig, root: Path | None = None) -> ClassificationScorer:
    assert isinstance(config, ClassificationConfig)
    return ClassificationScorer(config)
