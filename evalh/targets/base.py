"""The target interface, and the output sources the runner asks for each (case, arm, attempt).

A `Target` is the product under test (a Python callable, an HTTP endpoint, a model). An
`OutputSource` is where an arm's outputs come from: a live target (`evalh.core.run.sources.
LiveSource` calls it, with the case's timeout and clock), or the outputs a run stored
(`evalh.core.run.sources.StoredSource`, for rejudge). The runner asks the source and never asks
which kind it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from evalh.models import Case, CaseResult, ErrorInfo
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
    """A built target (a kind's `build(config, root)` returns one, built-in or plugin).

    `call` is required and must be safe to run concurrently. The rest are optional hooks
    with no-op defaults: subclass `Target` to inherit them (docs/plugins.md)."""

    config: TargetConfig

    async def call(self, case: Case, ctx: CallContext) -> TargetOutput: ...

    async def aclose(self) -> None:
        """Release what the target holds, once, at the end of the run."""
        return None

    def estimate_tokens(self, case: Case) -> int | None:
        """For `--dry-run` and budgets: the prompt tokens of one call (None: estimated
        from `prompt_text`, else from the case's input, at 4 characters a token)."""
        return None

    def prompt_text(self, case: Case) -> str | None:
        """The text one call sends (a model target's rendered templates), for estimates."""
        return None

    def max_output_tokens(self) -> int | None:
        """The most tokens one reply can have, for estimates (None: unknown)."""
        return None


@dataclass
class Produced:
    """What an `OutputSource` gives the runner for one (case, arm, attempt)."""

    output: TargetOutput | None
    """None when there is no output (`error` says why)."""
    error: ErrorInfo | None = None
    """The target failed or timed out: the result is `errored`."""
    latency_ms: float | None = None
    """The output's latency (a live call's, measured without rate-limit waits; a stored
    output's as it was recorded)."""
    started_at: str | None = None
    """When the output was asked for (ISO time)."""
    recorded: bool = False
    """The output was recorded before this run (a stored run's): its tokens and cost were
    spent then, and are not charged to this run's budget again."""


class OutputSource(Protocol):
    """Where an arm's outputs come from (see the module docstring)."""

    @property
    def subject_model(self) -> str | None:
        """The model that produces (or produced) the outputs, if a model (judge ≠ subject)."""
        ...

    async def produce(self, case: Case, ctx: CallContext) -> Produced:
        """The output for `case` at `ctx.arm`, `ctx.attempt`. Never raises for the product's
        failure: that is a `Produced` with `error`."""
        ...

    def recorded(self, case: Case, arm: str, attempt: int) -> CaseResult | None:
        """The result the output was recorded in, when the source replays one (a stored
        run's: the order and seed its case was shown with are kept); None for a live call."""
        ...

    async def aclose(self) -> None: ...
