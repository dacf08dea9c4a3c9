"""Judge drift: on the same stored outputs, how often an old and a new judgment agree.

A judgment is compared unit by unit: a case's verdict, or — for scorers that judge
paragraphs — each paragraph's verdict. Only units judged in both the old and the new run
count (a judgment that was missing or failed before has nothing to agree with). The
figures are raw agreement, Cohen's kappa (evalh.core.stats.intervals) and the confusion table of
old vs new verdicts, so a maintainer can tell a change of judge from a change of model.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from evalh.core.run.sources import ResultKey
from evalh.core.stats.intervals import cohens_kappa, raw_agreement
from evalh.models import CaseResult, Score
from evalh.scorers.judge_base import find_score

MAX_CHANGED = 20
"""Changed units listed by name (the confusion table always counts them all)."""


def judgment_units(score: Score | None) -> dict[str, str]:
    """The categorical judgments in a score: {"case": verdict} or {"paragraph N": verdict}.
    Failed judgments, abstentions and bare numbers (no verdict, no pass/fail) give none."""
    if score is None or score.error is not None:
        return {}
    paragraphs = score.details.get("paragraphs")
    if isinstance(paragraphs, list):
        return {f"paragraph {p.get('index')}": str(p["verdict"]) for p in paragraphs
                if isinstance(p, dict) and p.get("verdict") and "error" not in p}
    if score.verdict and score.verdict not in ("pending", "judge_error"):
        return {"case": score.verdict}
    if score.passed is not None:
        return {"case": "pass" if score.passed else "fail"}
    return {}


@dataclass
class Drift:
    suite: str
    scorer: str
    judged_again: int = 0
    """Results this scorer judged again."""
    newly_judged: int = 0
    """…whose old judgment was missing or failed and whose new one is complete."""
    still_failed: int = 0
    """…whose new judgment failed too."""
    n: int = 0
    """Units judged in both runs: the denominator of agreement and kappa."""
    agreement: float | None = None
    kappa: float | None = None
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    """old verdict → new verdict → count."""
    changed: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def measure(suite: str, scorer: str, keys: set[ResultKey], old: dict[ResultKey, CaseResult],
            new: dict[ResultKey, CaseResult]) -> Drift:
    """Drift of one scorer over the results it judged again (`keys`)."""
    drift = Drift(suite=suite, scorer=scorer, judged_again=len(keys))
    olds: list[str] = []
    news: list[str] = []
    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for key in sorted(keys):
        before = find_score(old[key], scorer) if key in old else None
        after = find_score(new[key], scorer) if key in new else None
        if after is None or after.error is not None:
            drift.still_failed += 1
        elif before is None or before.error is not None:
            drift.newly_judged += 1
        a, b = judgment_units(before), judgment_units(after)
        for unit in sorted(a.keys() & b.keys()):
            olds.append(a[unit])
            news.append(b[unit])
            table[a[unit]][b[unit]] += 1
            if a[unit] != b[unit] and len(drift.changed) < MAX_CHANGED:
                case_id, arm, attempt = key
                drift.changed.append({"case_id": case_id, "arm": arm, "attempt": attempt, "unit": unit,
                                      "old": a[unit], "new": b[unit]})
    drift.n = len(olds)
    drift.agreement = raw_agreement(olds, news)
    drift.kappa = cohens_kappa(olds, news)
    drift.confusion = {o: dict(row) for o, row in sorted(table.items())}
    return drift
