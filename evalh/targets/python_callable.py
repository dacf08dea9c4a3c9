"""A Python callable as the target: `module:function`, sync or async.

evalh calls it with the case's `input` as the single argument (or with the whole `Case` when
its first parameter is named `case`). It returns the output — any JSON-serializable value —
or a `TargetOutput` to report a tool trace, tokens and cost as well. Sync functions run in a
worker thread (`evalh.handoff.in_thread`: a thread per call, or one thread shared by the
calls of functions found cheap) so they never block the event loop, unless the target says
`inline = true` or the function is declared cheap with `@evalh.api.inline`: then they are
called on the loop itself, which saves the rest of the hand-off (~15 µs a case;
bench/lean_path_results.md) and holds every other case in flight while it runs. An inline
call that runs past its case's timeout cannot be interrupted: it is recorded `errored`
(TimeoutError) when it returns.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from evalh.handoff import in_thread
from evalh.imports import declared_inline, import_callable
from evalh.models import Case
from evalh.targets.base import CallContext, Target, TargetConfig, TargetOutput


class PythonTargetConfig(TargetConfig):
    SNAPSHOT = frozenset({"kind", "callable", "model", "pace_ms"})
    SNAPSHOT_IF_SET: ClassVar[frozenset[str]] = frozenset({"model", "pace_ms"})
    kind: Literal["python"] = "python"
    callable: str
    """`module:function`, importable from the project root."""
    model: str | None = None
    """The model the product asks, if you declare it (judges are then checked against it
    before the run). A product that returns a `TargetOutput` with `model` reports it: the
    first reported model is recorded in the suite's `target` in the run document, and
    judges are checked against it from then on."""
    pace_ms: float | None = Field(None, ge=0)
    """Calls start at least this many milliseconds apart (`--sleep-ms` sets it for every
    target); the pause is neither latency nor part of the timeout."""
    inline: bool = False
    """A sync function is called on the event loop instead of in a worker thread: for a
    function that answers at once (a lookup, a rule, a fixture) and never blocks. Without
    it such a function is found cheap after its first calls and shares one thread with the
    other cheap calls; inline saves the rest of the hand-off (~15 µs a call). It holds every
    other case while it runs, and one that runs past the case's timeout is recorded
    `errored` only once it returns. No effect on an `async def` function. A function can
    declare itself cheap instead: `@evalh.api.inline`."""

    def model_id(self) -> str | None:
        return self.model


CONFIGS: dict[str, type[TargetConfig]] = {"python": PythonTargetConfig}


class PythonTarget(Target):
    def __init__(self, config: PythonTargetConfig, root: Path) -> None:
        self.config = config
        self._fn = import_callable(config.callable, root=root)
        params = list(inspect.signature(self._fn).parameters)
        self._wants_case = bool(params) and params[0] == "case"
        self._is_async = inspect.iscoroutinefunction(self._fn)
        # inline: the config says so, or the function itself (@evalh.api.inline)
        self._inline = (config.inline or declared_inline(self._fn)) and not self._is_async

    async def call(self, case: Case, ctx: CallContext) -> TargetOutput:
        from evalh.targets.pacing import before_call

        await before_call(self.config, case, ctx.services)
        arg = case if self._wants_case else case.input
        if self._is_async:
            result = await self._fn(arg)
        elif self._inline:
            from evalh.providers.waits import deadline_passed

            result = self._fn(arg)  # on the loop: the case's context as it is, no thread
            if deadline_passed():  # it could not be cancelled while it ran
                raise TimeoutError("the inline target ran past the case's timeout")
            if inspect.isawaitable(result):
                result = await result
        else:
            result = await in_thread(self._fn, arg)
            if inspect.isawaitable(result):  # an object with an async __call__
                result = await result
        if not isinstance(result, TargetOutput):
            return TargetOutput(output=_jsonable(result))
        if result.model and self.config.model is None:
            self.config.model = result.model  # the product's own model, recorded with the run
        return result

    async def aclose(self) -> None:
        return None


def with_reported_model(target_snapshot: dict[str, Any], suite_config: Any) -> dict[str, Any]:
    """The suite's target as the run document records it, with the model its Python product
    reported during the run (`TargetOutput.model`) when none was declared."""
    if suite_config is None or target_snapshot.get("kind") != "python" or target_snapshot.get("model"):
        return target_snapshot
    target = suite_config.arm_targets()[0][1]
    model = getattr(target, "model", None)
    return {**target_snapshot, "model": model} if model else target_snapshot


def _jsonable(value: Any) -> Any:
    """Outputs are persisted as JSON: reject what orjson cannot serialize, naming the type."""
    import orjson

    try:
        orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError as exc:
        raise TypeError(f"target returned a value that is not JSON-serializable: {exc}") from None
    return value


def build(config: TargetConfig, root: Path) -> PythonTarget:
    assert isinstance(config, PythonTargetConfig)
    return PythonTarget(config, root)
