"""The target interface: what the runner calls for each (case, arm, attempt)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from evalh.models import Case
    from evalh.services import RunServices


class TargetConfig(BaseModel):
    """Base of every target kind's config. User input: unknown keys are refused.

    `SNAPSHOT` is the allowlist of fields copied into the run document; anything not named
    there (keys, headers, tokens) never leaves the process.
    """

    model_config = ConfigDict(extra="forbid")
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset()

    kind: str

    def requires_env(self) -> list[str]:
        """Environment variables this target cannot run without (for live suites)."""
        return []

    def model_id(self) -> str | None:
        """The model this target asks, if it is a model (used by judge ≠ subject)."""
        return None


@dataclass
class TargetOutput:
    """What a target returns for one call."""

    output: Any
    trace: list[dict[str, Any]] | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    cached: bool = False
    truncated: bool = False
    model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class CallContext:
    run_id: str
    suite: str
    arm: str
    attempt: int
    services: RunServices


class Target(Protocol):
    """A built target. `call` must be safe to run concurrently."""

    config: TargetConfig

    async def call(self, case: Case, ctx: CallContext) -> TargetOutput: ...

    async def aclose(self) -> None: ...
