"""Literal checks that report a match or abstain.

They operate on an annotated text (a quote, a claimed-absent phrase) and an exact evidence
region, both located by a dotted path such as `output.quote` or `input.evidence`. Matching is
byte-exact: no whitespace, Unicode or case normalization. A spelling difference therefore
abstains; neither check can establish general correctness, and an abstention is not a pass.

- `literal_quote`: the text occurs in the region → passed (`exact-match`); otherwise abstain.
- `literal_absence`: the text occurs in the region → failed (`annotated-text-present`);
  otherwise abstain (absence in one region proves nothing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import field_validator

from evalh.fields import MISSING, pick, short
from evalh.models import Case, Score
from evalh.scorers.base import DeterministicScorer, ScorerConfig

_ROOTS = ("output", "input", "expected", "metadata")


def locate(spec: str, case: Case, output: Any) -> Any:
    """Resolve `output.x`, `input.y`, `expected.z` or `metadata.w` against a case and output."""
    root, _, rest = spec.partition(".")
    base = {
        "output": output,
        "input": case.input,
        "expected": case.expected,
        "metadata": case.metadata.model_dump(mode="json"),
    }[root]
    return pick(base, rest or None)


class _LiteralConfig(ScorerConfig):
    SNAPSHOT = frozenset({"type", "name", "text", "region"})
    text: str = "output"
    """Where the annotated text is: a path starting with output/input/expected/metadata."""
    region: str = "input"
    """Where the evidence region is."""

    @field_validator("text", "region")
    @classmethod
    def _rooted(cls, v: str) -> str:
        if v.partition(".")[0] not in _ROOTS:
            raise ValueError(f"must start with one of {', '.join(_ROOTS)}")
        return v


class LiteralQuoteConfig(_LiteralConfig):
    type: Literal["literal_quote"]


class LiteralAbsenceConfig(_LiteralConfig):
    type: Literal["literal_absence"]


CONFIGS: dict[str, type[ScorerConfig]] = {
    "literal_quote": LiteralQuoteConfig,
    "literal_absence": LiteralAbsenceConfig,
}


class LiteralScorer(DeterministicScorer):
    config: _LiteralConfig

    def check(self, case: Case, output: Any) -> Score:
        text = locate(self.config.text, case, output)
        region = locate(self.config.region, case, output)
        if not isinstance(text, str) or not text or not isinstance(region, str) or region is MISSING:
            return self._score(
                abstained=True, verdict="abstain",
                rationale=f"nothing to check: {self.config.text} or {self.config.region} is not text",
            )
        present = text in region
        if self.config.type == "literal_quote":
            if present:
                return self._score(value=1.0, passed=True, verdict="exact-match",
                                   rationale=f"{short(text, 60)!r} occurs verbatim")
            return self._score(abstained=True, verdict="abstain",
                               rationale=f"{short(text, 60)!r} not found verbatim; cannot confirm")
        if present:
            return self._score(value=0.0, passed=False, verdict="annotated-text-present",
                               rationale=f"{short(text, 60)!r} occurs in the region")
        return self._score(abstained=True, verdict="abstain",
                           rationale="text not found; absence is not proven by one region")


def build(config: ScorerConfig, root: Path | None = None) -> LiteralScorer:
    return LiteralScorer(config)
