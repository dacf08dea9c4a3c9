"""`demo_length`: passes when the output's text is at most `max_chars` long."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from evalh.models import Case, Score
from evalh.scorers.base import ScoreContext, Scorer, ScorerConfig


class LengthConfig(ScorerConfig):
    type: Literal["demo_length"] = "demo_length"
    max_chars: int = 40


CONFIGS: dict[str, type[ScorerConfig]] = {"demo_length": LengthConfig}


class LengthScorer(Scorer):
    kind = "deterministic"

    def __init__(self, config: LengthConfig) -> None:
        self.config = config

    async def score(self, case: Case, output: Any, ctx: ScoreContext) -> Score:
        text = output if isinstance(output, str) else str(output)
        ok = len(text) <= self.config.max_chars
        return Score(scorer=self.config.display_name, value=1.0 if ok else 0.0, passed=ok,
                     rationale=f"{len(text)} chars, at most {self.config.max_chars} allowed")

    async def finalize(self, suite: Any, results: list[Any], services: Any) -> dict[str, Any] | None:
        return {"longest": max((len(str(r.output)) for r in results), default=0)}


def build(config: ScorerConfig, root: Path | None = None) -> LengthScorer:
    assert isinstance(config, LengthConfig)
    return LengthScorer(config)
