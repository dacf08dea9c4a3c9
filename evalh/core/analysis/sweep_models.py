"""What `evalh sweep` returns: the ranking of candidate policies, typed. `to_dict` is the
`evalh.sweep/1` document (`--json`), its keys in this order."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

Number = float | int
PolicyParams = dict[str, Number]
"""Parameter name → value, in the spec's parameter order."""


@dataclass(frozen=True)
class Observed:
    """The results swept, and what each was."""

    total: int
    scored: int
    """The results every candidate is scored on."""
    undecided: int
    """Without a measure."""
    errored: int
    """Whose measure rests on a failed call (excluded, or a miss for every candidate)."""
    unlabelled: int
    labels: dict[str, int]
    """Label → results scored with it, in decision order."""
    min: Number | None
    max: Number | None


@dataclass(frozen=True)
class LeftOut:
    """Grid policies that are not candidates, and why."""

    grid: int
    not_decreasing: int
    """Tier thresholds not strictly decreasing."""
    above_observed: int
    """A threshold above the greatest observed value (`max_observed`)."""
    max_observed: Number


@dataclass(frozen=True)
class Candidate:
    """One policy scored against the labels."""

    rank: int
    params: PolicyParams
    current: bool
    objective: float | None
    accuracy: float | None
    balanced_accuracy: float | None
    correct: int
    n: int
    under_calls: int
    """Decisions milder than the label."""
    over_calls: int
    errored: int
    errored_by_label: dict[str, int]
    confusion: dict[str, dict[str, int]]
    """Label → decision → results."""


@dataclass(frozen=True)
class CurrentPolicy:
    params: PolicyParams
    rank: int | None
    """None when it is not a candidate (`note` says why)."""
    note: str | None


@dataclass(frozen=True)
class Margin:
    """The top candidate against another, paired over the results both are scored on
    (`evalh.core.analysis.sweep_noise`): the difference of their objectives, its interval, and
    whether it is within noise (the interval reaches 0; None: no interval)."""

    against: str
    """`runner-up` (the best candidate below the top) or `current` (the policy in use)."""
    other_current: bool
    """The runner-up is the current policy."""
    top: PolicyParams
    other: PolicyParams
    difference: float
    """The top's objective minus the other's (never negative: the top ranks first)."""
    low: float | None
    high: float | None
    confidence: float
    method: str
    cases: int
    """Independent units: a case's attempts are one."""
    results: int
    top_only: int
    """Results the top decides right and the other wrong."""
    other_only: int
    p_value: float | None
    """McNemar's mid-p (accuracy, one result per case); None otherwise."""
    within_noise: bool | None
    note: str | None


@dataclass(frozen=True, kw_only=True)
class SweepResult:
    """The ranking. `run_id`, `suite` and `arm` are set by `sweep_run` (a sweep of stored
    observations, `sweep`, has none)."""

    run_id: str | None = None
    suite: str | None = None
    arm: str | None = None
    schema: str
    measure: str
    label: str | None
    objective: str
    ranking: str
    """How candidates are ranked, in words."""
    tie_break: str | None
    errored: str
    params: list[str]
    decisions: list[str]
    observations: Observed
    left_out: LeftOut
    current: CurrentPolicy | None
    recommended: PolicyParams | None
    """Set only when the top candidate strictly beats the runner-up."""
    won_on: str | None
    tied_top: list[PolicyParams]
    candidates: list[Candidate]
    pinned: PolicyParams = field(default_factory=dict)
    """Parameters every top candidate agrees on."""
    undetermined: dict[str, list[Number]] = field(default_factory=dict)
    margins: list[Margin] = field(default_factory=list)
    """The top against the runner-up (with a strict win) and against the current policy
    (when it is not at the top): is the difference beyond noise?"""
    within_noise: bool | None = None
    """Of a strict win on the objective: True when the runner-up is within noise of it, None
    without a win on the objective or without an interval."""
    verdict: str = ""

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        for key in ("run_id", "suite", "arm"):
            if doc[key] is None:
                del doc[key]
        return doc
