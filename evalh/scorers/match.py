"""Text matching scorers: exact, contains (any/all), regex.

Each compares `output` (or `output[field]`, a dotted path) with the case's `expected`
(or `expected[expected_field]`), unless the config gives the values itself.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import model_validator

from evalh.fields import as_text, pick, short
from evalh.models import Case, Score
from evalh.scorers.base import DeterministicScorer, ScorerConfig

_FIELDS = frozenset({"type", "name", "field", "expected_field"})


class _Base(ScorerConfig):
    field: str | None = None
    """Dotted path into the output (`verdict`, `answer.text`); whole output when unset."""
    expected_field: str | None = None
    """Dotted path into the case's `expected`; whole value when unset."""


class ExactConfig(_Base):
    SNAPSHOT = _FIELDS | {"case_sensitive", "strip"}
    type: Literal["exact"]
    case_sensitive: bool = True
    """Compare strings as they are; false compares them case-folded."""
    strip: bool = True
    """Ignore leading and trailing whitespace of strings."""


class ContainsConfig(_Base):
    SNAPSHOT = _FIELDS | {"values", "mode", "case_sensitive"}
    type: Literal["contains"]
    values: list[str] | None = None
    """Strings to look for; when unset, the case's expected value (a string or a list)."""
    mode: Literal["any", "all"] = "all"
    """`all`: every value must occur; `any`: one is enough. The value is the share found."""
    case_sensitive: bool = False
    """Match case; by default both sides are case-folded."""


class RegexConfig(_Base):
    SNAPSHOT = _FIELDS | {"pattern", "ignore_case", "fullmatch"}
    type: Literal["regex"]
    pattern: str | None = None
    """The pattern; when unset, the case's expected value is the pattern."""
    ignore_case: bool = False
    """Compile the pattern with `re.IGNORECASE`."""
    fullmatch: bool = False
    """The whole text must match; by default the pattern may match anywhere (`re.search`)."""

    @model_validator(mode="after")
    def _compiles(self) -> RegexConfig:
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern does not compile: {exc}") from None
        return self


CONFIGS: dict[str, type[ScorerConfig]] = {
    "exact": ExactConfig,
    "contains": ContainsConfig,
    "regex": RegexConfig,
}


class ExactScorer(DeterministicScorer):
    config: ExactConfig

    def check(self, case: Case, output: Any) -> Score:
        ops = self._operands(case, output)
        if isinstance(ops, Score):
            return ops
        actual, expected = ops
        a, e = actual, expected
        if isinstance(a, str) and isinstance(e, str):
            if self.config.strip:
                a, e = a.strip(), e.strip()
            if not self.config.case_sensitive:
                a, e = a.casefold(), e.casefold()
        ok = a == e
        why = f"{short(actual)!s} == {short(expected)!s}" if ok else f"got {short(actual)}, expected {short(expected)}"
        return self._score(value=1.0 if ok else 0.0, passed=ok, rationale=why)


class ContainsScorer(DeterministicScorer):
    config: ContainsConfig

    def check(self, case: Case, output: Any) -> Score:
        actual = self._actual(output)
        if isinstance(actual, Score):
            return actual
        values = self.config.values
        if values is None:
            exp = pick(case.expected, self.config.expected_field)
            values = [exp] if isinstance(exp, str) else exp if isinstance(exp, list) else None
        if not values:
            return self._score(abstained=True, rationale="no values to look for")
        text = as_text(actual)
        needles = [str(v) for v in values]
        if not self.config.case_sensitive:
            text, needles = text.casefold(), [n.casefold() for n in needles]
        found = [n for n in needles if n in text]
        missing = [v for v, n in zip(values, needles, strict=True) if n not in text]
        ok = bool(found) if self.config.mode == "any" else not missing
        why = (
            f"found {len(found)} of {len(needles)} ({self.config.mode})"
            + (f"; missing {', '.join(map(repr, missing[:5]))}" if missing else "")
        )
        return self._score(value=len(found) / len(needles), passed=ok, rationale=why)


class RegexScorer(DeterministicScorer):
    config: RegexConfig

    def check(self, case: Case, output: Any) -> Score:
        actual = self._actual(output)
        if isinstance(actual, Score):
            return actual
        pattern = self.config.pattern
        if pattern is None:
            exp = pick(case.expected, self.config.expected_field)
            if not isinstance(exp, str):
                return self._score(abstained=True, rationale="no pattern (expected is not a string)")
            pattern = exp
        flags = re.IGNORECASE if self.config.ignore_case else 0
        try:
            rx = re.compile(pattern, flags)
        except re.error as exc:
            return self._score(error=f"pattern does not compile: {exc}", rationale=str(exc))
        text = as_text(actual)
        m = rx.fullmatch(text) if self.config.fullmatch else rx.search(text)
        why = f"/{short(pattern, 40)}/ {'matched' if m else 'did not match'}"
        return self._score(value=1.0 if m else 0.0, passed=bool(m), rationale=why)


_BY_TYPE = {"exact": ExactScorer, "contains": ContainsScorer, "regex": RegexScorer}



def build(config: ScorerConfig, root: Path | None = None) -> DeterministicScorer:
    return _BY_TYPE[config.type](config)
