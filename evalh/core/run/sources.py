"""The output sources of a planned arm (`evalh.targets.base.OutputSource`).

- `LiveSource` calls a live target: with the suite's per-case timeout, and a clock that
  leaves out the time spent waiting for an endpoint's rate limits. A target that raises
  (or calls `sys.exit`) or times out gives an error, never a crash of the run. It is the
  one place a target is called.
- `BatchSource` calls a live target whose model calls go through a provider's batch API
  (`batch = true`, `evalh.providers.batch`): no per-case timeout (a batch has 24 h), no
  latency of its own, and its suite keeps every case in flight (`batch_width`) so their
  requests go in one batch.
- `StoredSource` gives back the outputs a run stored (rejudge): as they were recorded,
  with their latency, tokens and cost, marked `recorded` so their cost is not charged to
  the new run's budget. Later: another tool's logs.

The runner asks a source for each (case, arm, attempt) and never asks which kind it is.
"""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any

from evalh.core.run.deadlines import watchdog
from evalh.models import Case, CaseResult, ErrorInfo
from evalh.providers.waits import case_clock
from evalh.store import now_iso
from evalh.targets.base import CallContext, Produced, Target, TargetOutput

ResultKey = tuple[str, str, int]

CONTROL_FLOW: tuple[type[BaseException], ...] = (KeyboardInterrupt, asyncio.CancelledError, GeneratorExit)
"""What code evalh runs may raise that is not that code's failure: an interrupt, a
cancellation, a coroutine being closed. Anything else it raises — an `Exception`,
`sys.exit()` (SystemExit), a `BaseException` of its own (pytest's `fail`, a library's
cancellation type) — is the case's error, never the run's end: a target or scorer calling
`sys.exit(0)` must not end the run as a green gate."""
"""The key of one result of a suite: (case id, arm, attempt)."""


def error_info(exc: BaseException) -> ErrorInfo:
    """An exception as a result's error: its type and (cut) message."""
    message = str(exc) or repr(exc)
    return ErrorInfo(type=type(exc).__name__, message=message[:2000])


class LiveSource:
    """Outputs from calling a live target (`target.call`), each within `timeout_s`."""

    def __init__(self, target: Target, timeout_s: float | None) -> None:
        self.target = target
        self.timeout_s = timeout_s

    @property
    def subject_model(self) -> str | None:
        return self.target.config.model_id()

    async def produce(self, case: Case, ctx: CallContext) -> Produced:
        started = now_iso()
        t0 = time.perf_counter()
        # the timeout: the worker task's one watchdog (evalh.core.run.deadlines), not an
        # asyncio.timeout (an object, a timer and a heap entry) per case
        dog, own = watchdog()
        # time spent waiting for an endpoint's rate limits is neither latency nor timeout
        with case_clock() as clock:
            try:
                dog.start(clock, self.timeout_s)
                try:
                    out = await self.target.call(case, ctx)
                except asyncio.CancelledError:
                    if dog.stop(clock, cancelled=True):
                        raise TimeoutError from None
                    raise
                except BaseException:
                    dog.stop(clock, cancelled=False)
                    raise
                dog.stop(clock, cancelled=False)
            except TimeoutError:
                err = ErrorInfo(type="TimeoutError", message=f"target did not answer within {self.timeout_s:g}s")
                return Produced(None, err, (time.perf_counter() - t0 - clock.waited_s) * 1000, started)
            except BaseException as exc:  # the product failed: an errored case, not a crash
                if isinstance(exc, CONTROL_FLOW):
                    raise
                return Produced(None, error_info(exc), (time.perf_counter() - t0 - clock.waited_s) * 1000, started)
            finally:
                if own:
                    dog.close()
        return Produced(out, None, (time.perf_counter() - t0 - clock.waited_s) * 1000, started)

    def recorded(self, case: Case, arm: str, attempt: int) -> CaseResult | None:
        return None

    async def aclose(self) -> None:
        await self.target.aclose()


class BatchSource(LiveSource):
    """Outputs of a model target with `batch = true`: its calls wait for their batch (the
    provider's own expiry bounds them, not the suite's `timeout_s`), and an output has no
    latency of its own (`latency_ms` None: the batch's turnaround is not the model's)."""

    def __init__(self, target: Target) -> None:
        super().__init__(target, None)

    async def produce(self, case: Case, ctx: CallContext) -> Produced:
        produced = await super().produce(case, ctx)
        produced.latency_ms = None
        return produced


def is_batched(config: Any) -> bool:
    """Whether a target's config sends its calls through a batch API (`batch = true`)."""
    return bool(getattr(config, "batch", False))


def live_source(target: Target, timeout_s: float) -> LiveSource:
    """The source of a live target: a `BatchSource` for a batched model target."""
    return BatchSource(target) if is_batched(target.config) else LiveSource(target, timeout_s)


def batch_width(tree: Any) -> int | None:
    """How many cases a suite keeps in flight when a provider table in it (a target's, an
    arm's, a judge's: `tree` is the suite's config as JSON) has `batch = true`: all of them,
    up to `evalh.providers.batch.BATCH_IN_FLIGHT`, so their requests go in one batch; None
    when nothing in the suite is batched."""

    def batched(node: Any) -> bool:
        if isinstance(node, dict):
            return node.get("batch") is True or any(batched(v) for v in node.values())
        if isinstance(node, list):
            return any(batched(v) for v in node)
        return False

    if not batched(tree):
        return None
    from evalh.providers.batch import BATCH_IN_FLIGHT

    return BATCH_IN_FLIGHT


class StoredSource:
    """The outputs a run stored, keyed (case id, arm, attempt); `target` is the run's record
    of the target that produced them (its snapshot: the judge ≠ subject guard reads its model)."""

    def __init__(self, results: dict[ResultKey, CaseResult], target: dict[str, Any]) -> None:
        self.results = results
        self.target = target

    @property
    def subject_model(self) -> str | None:
        model = self.target.get("model")
        return model if isinstance(model, str) else None

    async def produce(self, case: Case, ctx: CallContext) -> Produced:
        prior = self.results[(case.id, ctx.arm, ctx.attempt)]
        out = TargetOutput(
            output=prior.output, trace=prior.trace, tokens_in=prior.tokens_in, tokens_out=prior.tokens_out,
            cost_usd=prior.cost_usd, cached=prior.cached, truncated=prior.truncated,
        )
        return Produced(out, prior.error, prior.latency_ms, prior.started_at, recorded=True)

    def recorded(self, case: Case, arm: str, attempt: int) -> CaseResult | None:
        return self.results.get((case.id, arm, attempt))

    async def aclose(self) -> None:
        return None


def target_record(snap: dict[str, Any]) -> dict[str, Any]:
    """A run's record of its target (a config snapshot) as a new run document repeats it:
    `kind` first (`stored` when the record has none)."""
    rest = {k: copy.deepcopy(v) for k, v in snap.items() if k != "kind" and not k.startswith("_")}
    return {"kind": str(snap.get("kind", "stored")), **rest}
