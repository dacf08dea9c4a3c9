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
from typing import Protocol


class Deadlines(Protocol):
    """What enforces a case's deadline (the runner's per-worker watchdog,
    `evalh.core.run.deadlines`): told when a deadline is set again after a wait."""

    def ensure(self, when: float) -> None: ...


class WaitClock:
    """Counts the time spent inside `waiting()` and holds the case's deadline still
    meanwhile."""

    __slots__ = ("_depth", "_remaining", "_since", "deadline", "expired", "parent", "waited_s", "watchdog")

    def __init__(self, parent: WaitClock | None = None) -> None:
        self.parent = parent
        self.watchdog: Deadlines | None = None
        """Set while the case runs under a timeout (`evalh.core.run.deadlines.Watchdog.start`)."""
        self.deadline: float | None = None
        """The loop time the case's timeout runs out; None without one, or while it is held."""
        self.expired = False
        """The deadline passed and the case was cancelled for it."""
        self.waited_s = 0.0
        self._depth = 0
        self._since = 0.0
        self._remaining: float | None = None

    def _begin(self) -> None:
        if self._depth == 0:
            self._since = time.perf_counter()
            self._remaining = None
            if self.deadline is not None and not self.expired:
                try:
                    self._remaining = max(0.0, self.deadline - asyncio.get_running_loop().time())
                    self.deadline = None
                except RuntimeError:  # no loop: nothing can be held
                    self._remaining = None
        self._depth += 1
        if self.parent is not None:
            self.parent._begin()

    def _end(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.waited_s += time.perf_counter() - self._since
            if self._remaining is not None:
                with contextlib.suppress(RuntimeError):  # no loop: nothing to enforce it
                    self.deadline = asyncio.get_running_loop().time() + self._remaining
                    if self.watchdog is not None:  # None: the case has ended
                        self.watchdog.ensure(self.deadline)
            self._remaining = None
        if self.parent is not None:
            self.parent._end()


_CLOCK: ContextVar[WaitClock | None] = ContextVar("evalh_wait_clock", default=None)


@contextmanager
def case_clock() -> Iterator[WaitClock]:
    """A clock for the code inside the block, nested in the current one (if any)."""
    clock = WaitClock(_CLOCK.get())
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
    while clock is not None and clock.watchdog is None:
        clock = clock.parent
    if clock is None:
        return False
    if clock.expired:
        return True
    try:
        return clock.deadline is not None and asyncio.get_running_loop().time() >= clock.deadline
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
