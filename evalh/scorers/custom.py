"""A custom scorer given as `module:function`.

The function receives `(case, output)` — or `(case, output, ctx)` if it takes three
parameters — sync or async, and returns a `Score`, a bool, a number in 0–1, or a dict with
`value`, `passed`, `rationale`. A bare number passes at `threshold` or above. A sync
function runs in a worker thread (one shared with other cheap calls once its calls are
found cheap: `evalh.handoff`), unless it is declared cheap with `@evalh.api.inline`: then
it is called on the event loop.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Literal

from evalh.handoff import in_thread
from evalh.imports import declared_inline, import_callable
from evalh.models import Case, Score
from evalh.scorers.base import ScoreContext, Scorer, ScorerConfig


class CustomConfig(ScorerConfig):
    SNAPSHOT = frozenset({"type", "name", "function", "threshold"})
    type: Literal["custom"]
    function: str
    """`module:function` from the project root, sync or async, called with `(case, output)`
    or `(case, output, ctx)`; returns a `Score`, a bool, a number in 0–1, or a dict with
    `value`, `passed`, `rationale`. A sync function runs in a worker thread, or on the
    event loop when it is declared cheap with `@evalh.api.inline`."""
    threshold: float = 1.0
    """A function returning a bare number passes at this value or above."""


CONFIGS: dict[str, type[ScorerConfig]] = {"custom": CustomConfig}


class CustomScorer(Scorer):
    kind = "deterministic"

    def __init__(self, config: CustomConfig, root: Path) -> None:
        self.config = config
        self._fn = import_callable(config.function, root=root, what="scorer")
        self._takes_ctx = len(inspect.signature(self._fn).parameters) >= 3
        self._is_async = inspect.iscoroutinefunction(self._fn)
        self._inline = declared_inline(self._fn)  # @evalh.api.inline: called on the loop

    async def score(self, case: Case, output: Any, ctx: ScoreContext) -> Score:
        args = (case, output, ctx) if self._takes_ctx else (case, output)
        if self._is_async:
            result = await self._fn(*args)
        else:
            result = self._fn(*args) if self._inline else await in_thread(self._fn, *args)
            # an object with an async __call__ or a partial of a coroutine function is not
            # a "coroutine function", but what it returns must still be awaited
            if inspect.isawaitable(result):
                result = await result
        return self._coerce(result)

    def _coerce(self, result: Any) -> Score:
        name = self.config.display_name
        if isinstance(result, Score):
            return result.model_copy(update={"scorer": name})
        if isinstance(result, bool):
            return Score(scorer=name, value=float(result), passed=result)
        if isinstance(result, int | float):
            value = float(result)
            return Score(scorer=name, value=value, passed=value >= self.config.threshold)
        if isinstance(result, dict):
            return Score.model_validate({**result, "scorer": name})
        raise TypeError(f"custom scorer {self.config.function} returned {type(result).__name__}")


def build(config: ScorerConfig, root: Path) -> CustomScorer:
    assert isinstance(config, CustomConfig)
    return CustomScorer(config, root)
