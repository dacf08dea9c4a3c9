"""What every target does before it is called: refuse a case whose generation failed, and
wait for its pace.

A generated case the generator could not write (`metadata.generation_error`,
`evalh.core.generate.generate`) never reaches the target: the call raises `GenerationFailed`, and the
run records the case `errored` with that error type.

`pace_ms`: a pause between the calls of one target (the reference harness's `--sleep-ms`).

Calls of a paced target start at least `pace_ms` apart, across the suite's concurrency. The
pause is a wait evalh imposes, like a rate limit (`evalh.providers.waits.waiting`): it is
neither the target's latency nor part of its timeout. Outputs served from a stored run
(rejudge) call no target and are never paced.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalh.services import RunServices


class GenerationFailed(Exception):
    """The case was never written: its generation failed (the message says why)."""


async def before_call(config: Any, case: Any, services: RunServices | None) -> None:
    """Refuse a failed generation, then pace the call."""
    metadata = getattr(case, "metadata", None)
    problem = getattr(metadata, "generation_error", None) if metadata is not None else None
    if problem:
        raise GenerationFailed(f"the case could not be generated: {problem}")
    await pace(config, services)


class Pacer:
    def __init__(self, pace_ms: float) -> None:
        self.pace_s = pace_ms / 1000.0
        self._lock = asyncio.Lock()
        self._next = 0.0

    async def wait(self) -> None:
        async with self._lock:
            delay = self._next - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self._next = time.monotonic() + self.pace_s


async def pace(config: Any, services: RunServices | None) -> None:
    """Hold the call of the target configured by `config` until its pace allows it."""
    pace_ms = getattr(config, "pace_ms", None)
    if not pace_ms or services is None:
        return
    pacer = services.pacers.get(id(config))
    if pacer is None:
        pacer = services.pacers[id(config)] = Pacer(pace_ms)
    from evalh.providers.waits import waiting

    with waiting():
        await pacer.wait()
