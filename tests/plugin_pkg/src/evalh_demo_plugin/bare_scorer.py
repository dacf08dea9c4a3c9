"""`demo_bare`: a scorer that does not subclass evalh's Scorer (refused when it is built)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from evalh.models import Case, Score
from evalh.scorers.base import ScorerConfig


class BareConfig(ScorerConfig):
    type: Literal["demo_bare"] = "demo_bare"


CONFIGS: dict[str, type[ScorerConfig]] = {"demo_bare": BareConfig}


class BareScorer:
    kind = "deterministic"

    def __init__(self, config: BareConfig) -> None:
        self.config = config

    async def score(self, case: Case, output: Any, ctx: Any) -> Score:
        return Score(scorer=self.config.display_name, value=1.0, passed=True)


def build(config: ScorerConfig, root: Path | None = None) -> BareScorer:
    assert isinstance(config, BareConfig)
    return BareScorer(config)
