"""What a reader of another tool's results gives the core: `ImportedRun`, its suites and
their results, as evalh's own models where they exist (`CaseResult`, `Score`, `GitInfo`).

A result's `status` here is provisional: the core decides it from the scores, as for any
run (`evalh.core.results.outcome.decide_status`). A scorer is `pass_fail` (its scores say passed
or failed) or `graded` (a value only); the two are kept apart, never one read as the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from evalh.errors import EvalhError
from evalh.models import CaseResult, GitInfo, Score

ScorerKind = Literal["pass_fail", "graded"]


class ForeignFileError(EvalhError):
    """A file that cannot be imported: one line naming it (exit 2, nothing written)."""


@dataclass
class ImportedSuite:
    name: str
    results: list[CaseResult]
    """One a (case, arm, attempt), with the tool's output, scores, usage and errors."""
    target: dict[str, Any]
    """What answered, as the run records a target: `kind` (the tool), `model`, settings."""
    config: dict[str, Any] = field(default_factory=dict)
    """The suite's recorded config (task, dataset, generation settings) for the snapshot."""
    scorers: dict[str, ScorerKind] = field(default_factory=dict)
    """Each scorer the tool named, in order, and whether it passes/fails or grades."""
    dataset: str = ""
    """The dataset's name or location as the tool recorded it."""
    regime: Literal["deterministic", "stochastic"] | None = None
    """None: the core decides (stochastic when there are several attempts)."""


@dataclass
class ImportedRun:
    source: Path
    format: str
    """`inspect_ai` or `promptfoo`."""
    tool_version: str | None
    suites: dict[str, ImportedSuite]
    started_at: str | None = None
    git: GitInfo | None = None
    """The git state the tool recorded; None when it recorded none."""
    label: str | None = None
    notes: list[str] = field(default_factory=list)
    """What could not be mapped, said in the run (never dropped silently)."""

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def load_json(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ForeignFileError(f"{path}: {exc.strerror or exc}") from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ForeignFileError(f"{path}: not JSON ({exc})") from None


def safe_name(text: str, fallback: str) -> str:
    """A suite or arm name from a tool's (task name, provider id): printable, one line."""
    cleaned = "".join(ch if ch.isprintable() and not ch.isspace() else "_" for ch in text).strip("_")
    return cleaned[:120] or fallback


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


MAX_COUNT = 10**12
"""The largest token count one result is taken to have: beyond it (1e308 in a hand-edited
file) it is not a count, and a run's sums of such would not fit a 64-bit JSON integer."""


def count(value: Any) -> int | None:
    n = number(value)
    return int(n) if n is not None and 0 <= n <= MAX_COUNT else None


def graded_score(scorer: str, value: float, rationale: str | None, details: dict[str, Any]) -> Score:
    """A graded score: its value (0–1), no verdict."""
    if 0.0 <= value <= 1.0:
        return Score(scorer=scorer, value=value, passed=None, rationale=rationale, details=details)
    return Score(scorer=scorer, value=None, passed=None, rationale=rationale,
                 details={**details, "raw_value": value, "note": "outside 0-1: kept as recorded, not a score"})


def verdict_score(scorer: str, passed: bool, value: float | None, rationale: str | None,
                  details: dict[str, Any]) -> Score:
    """A pass/fail score: its verdict, and the tool's value where it gave one (0–1)."""
    if value is None or not 0.0 <= value <= 1.0:
        if value is not None:
            details = {**details, "raw_value": value}
        value = 1.0 if passed else 0.0
    return Score(scorer=scorer, value=value, passed=passed, rationale=rationale, details=details)


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (a field a tool left out)."""
    return value if isinstance(value, dict) else {}
