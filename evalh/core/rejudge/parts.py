"""The scorers a rejudge plan hands the runner, so the one runner core can score stored
outputs again (the outputs come from a `core.run.sources.StoredSource`):

- `StoredScorer` gives back a score as the stored run recorded it (deterministic scorers
  are never run again: their verdict on the same output cannot change);
- `Rejudging` wraps a judge scorer built from today's config: it judges again where the
  stored judgment is missing or failed (or everywhere, with `--all`), keeps the stored one
  otherwise, and remembers where it judged (for the drift figures).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from evalh.core.rejudge.drift import measure
from evalh.core.run.sources import ResultKey
from evalh.models import Case, CaseResult, Score
from evalh.scorers.base import ScoreContext, Scorer, ScorerConfig, SuiteView
from evalh.scorers.judge_base import find_score

if TYPE_CHECKING:
    from evalh.services import RunServices

def incomplete(scorer: Scorer, score: Score | None) -> bool:
    """Whether a stored judgment needs judging again: the scorer's `incomplete` hook
    (default: missing or failed; an external scorer also counts a null score)."""
    return bool(scorer.incomplete(score))


def key_of(ctx: ScoreContext, case: Case) -> ResultKey:
    return (case.id, ctx.arm, ctx.attempt)


class StoredScorer(Scorer):
    """Replays one scorer's stored scores (by name)."""

    def __init__(self, name: str, stored: dict[ResultKey, CaseResult], kind: Literal["deterministic", "judge"]) -> None:
        self.config = ScorerConfig(type="stored", name=name)
        self.stored = stored
        self.kind = kind

    async def score(self, case: Case, output: Any, ctx: ScoreContext) -> Score:
        stored = self.stored.get(key_of(ctx, case))
        score = find_score(stored, self.config.display_name) if stored is not None else None
        if score is None:
            return Score(scorer=self.config.display_name, abstained=True, rationale="not scored in the original run")
        return score.model_copy(deep=True)


class Rejudging(Scorer):
    """A judge scorer that judges again only what `select` asks for."""

    kind: ClassVar[Literal["judge"]] = "judge"

    def __init__(self, inner: Scorer, stored: dict[ResultKey, CaseResult], everything: bool) -> None:
        self.inner = inner
        self.config = inner.config
        self.stored = stored
        self.everything = everything
        self.judged: set[ResultKey] = set()
        """Where this scorer judged again (drift is measured there only)."""

    def wants(self, result: CaseResult) -> bool:
        return self.everything or incomplete(self.inner, find_score(result, self.config.display_name))

    async def score(self, case: Case, output: Any, ctx: ScoreContext) -> Score:
        key = key_of(ctx, case)
        prior = self.stored.get(key)
        if prior is not None and not self.wants(prior):
            kept = find_score(prior, self.config.display_name)
            assert kept is not None
            return kept.model_copy(deep=True)
        self.judged.add(key)
        return await self.inner.score(case, output, ctx)

    async def prepare(self, suite: SuiteView, services: RunServices) -> dict[str, Any] | None:
        return await self.inner.prepare(suite, services)

    async def finalize(self, suite: SuiteView, results: list[CaseResult], services: RunServices) -> dict[str, Any] | None:
        """The judge's own suite figures, plus its drift against the stored judgments."""
        info = (await self.inner.finalize(suite, results, services)) or {}
        new = {(r.case_id, r.arm, r.attempt): r for r in results}
        info["rejudge_drift"] = measure(suite.name, self.config.display_name, self.judged, self.stored, new).as_dict()
        return info
