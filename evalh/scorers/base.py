"""The scorer interface: (case, output) -> Score."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from evalh.core.services import RunServices
    from evalh.models import Case, Score
    from evalh.targets.base import TargetOutput


class ScorerConfig(BaseModel):
    """Base of every scorer type's config; `SNAPSHOT` is the allowlist for the run document."""

    model_config = ConfigDict(extra="forbid")
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset()

    type: str
    name: str | None = None
    """Name shown in results; defaults to the type."""

    @property
    def display_name(self) -> str:
        return self.name or self.type


@dataclass
class ScoreContext:
    run_id: str
    suite: str
    arm: str
    attempt: int
    target_output: TargetOutput
    services: RunServices
    subject_model: str | None = None


class Scorer(Protocol):
    config: ScorerConfig
    kind: ClassVar[Literal["deterministic", "judge"]]

    async def score(self, case: Case, output: Any, ctx: ScoreContext) -> Score: ...
