"""Time evalh spends holding a request back is not the target's time.

While a request waits for its endpoint's limiter (a free in-flight slot, the rpm/tpm
allowance, a `retry-after` pause, the wait before a retry), the case's clock is stopped:
the per-case timeout is suspended and the wait is left out of the case's latency. The
runner starts a `WaitClock` per case (`case_clock`); the provider layer marks every wait
with `waiting()`. Clocks nest (a provider client measures its own request inside a case),
and a wait stops every clock it is nested in. Concurrent waits of one case overlap: the
clock stops while at least one is in progress.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class WaitClock:
    """Counts the time spent inside `waiting()` and holds an `asyncio.Timeout` still
    meanwhile."""

    def __init__(self, parent: WaitClock | None = None) -> None:
        self.parent = parent
        self.timeout: asyncio.Timeout | None = None
        self.waited_s = 0.0
        self._depth = 0
        self._since = 0.0
        self._remaining: float | None = None

    def _begin(self) -> None:
        if self._depth == 0:
            self._since = time.perf_counter()
            self._remaining = None
            t = self.timeout
            if t is not None and not t.expired() and t.when() is not None:
                try:
                    loop = asyncio.get_running_loop()
                    self._remaining = max(0.0, t.when() - loop.time())  # type: ignore[operator]
                    t.reschedule(None)
                except RuntimeError:  # the timeout's block has ended
                    self._remaining = None
        self._depth += 1
        if self.parent is not None:
            self.parent._begin()

    def _end(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.waited_s += time.perf_counter() - self._since
            t = self.timeout
            if t is not None and self._remaining is not None:
                with contextlib.suppress(RuntimeError):  # the timeout's block has ended
                    t.reschedule(asyncio.get_running_loop().time() + self._remaining)
            self._remaining = None
        if self.parent is not None:
            self.parent._end()


_CLOCK: ContextVar[WaitClock | None] = ContextVar("evalh_wait_clock", default=None)


@contextmanager
def case_clock(timeout: asyncio.Timeout | None = None) -> Iterator[WaitClock]:
    """A clock for the code inside the block, nested in the current one (if any)."""
    clock = WaitClock(_CLOCK.get())
    clock.timeout = timeout
    token = _CLOCK.set(clock)
    try:
        yield clock
    finally:
        _CLOCK.reset(token)


def deadline_passed() -> bool:
    """Whether the current case's timeout has run out (False outside a clock with one).
    For code that ran without yielding to the loop (an inline sync target), whose expired
    timeout could not cancel it: it can then fail the case as the timeout would have."""
    clock = _CLOCK.get()
    while clock is not None and clock.timeout is None:
        clock = clock.parent
    if clock is None or clock.timeout is None:
        return False
    t = clock.timeout
    when = t.when()
    if t.expired():
        return True
    try:
        return when is not None and asyncio.get_running_loop().time() >= when
    except RuntimeError:
        return False


@contextmanager
def waiting() -> Iterator[None]:
    """Mark the block as a wait imposed by evalh's limits (no-op outside any clock)."""
    clock = _CLOCK.get()
    if clock is None:
        yield
        return
    clock._begin()
    try:
        yield
    finally:
        clock._end()
