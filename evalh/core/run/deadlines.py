"""One timeout mechanism per worker task: `Watchdog`.

A suite's worker task runs its cases one after another; its watchdog holds the deadline of
the case it is running (on that case's `WaitClock`, which holds it still while the case
waits for an endpoint's limits: `evalh.providers.waits`) and one timer. The timer is not
replaced per case: it stays set for the earliest deadline it was asked for, and when it
fires for a case that has a later deadline by then (the case it was set for finished, or
its deadline was held back by a wait) it is set again for that one. With cases that answer
at once the timer fires about once per `timeout_s` per worker, instead of a timeout object,
a timer and a heap entry made and dropped per case.

When the running case's deadline has passed, the timer cancels the worker's task; the case
sees the cancellation where it is waiting, and `stop` tells the source it was the timeout's
(the same test `asyncio.timeout` makes: no other cancellation of the task was asked since
the case started), which it records as a `TimeoutError`. A cancellation of the task from
elsewhere (an interrupt, the run's end) is passed on as it is.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar

from evalh.providers.waits import WaitClock


class Watchdog:
    """The deadline of the case a task runs, and the one timer that enforces it."""

    __slots__ = ("_at", "_cancelling", "_clock", "_handle", "_loop", "task")

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "a watchdog belongs to a task"
        self.task = task
        self._clock: WaitClock | None = None  # the case running, by its clock
        self._handle: asyncio.TimerHandle | None = None
        self._at = 0.0  # when the timer fires
        self._cancelling = 0

    def start(self, clock: WaitClock, timeout_s: float | None) -> None:
        """The case whose clock is `clock` starts now, to be cancelled `timeout_s` from now
        (never when None)."""
        self._clock = clock
        self._cancelling = self.task.cancelling()
        clock.watchdog = self
        if timeout_s is not None:
            clock.deadline = self._loop.time() + timeout_s
            self.ensure(clock.deadline)

    def ensure(self, when: float) -> None:
        """The timer fires at `when` or before (a deadline set or moved: `WaitClock`)."""
        if self._handle is None or self._at > when:
            if self._handle is not None:
                self._handle.cancel()
            self._at = when
            self._handle = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        clock = self._clock
        if clock is None or clock.deadline is None or clock.expired:
            return  # no case, or its clock is held (the wait's end sets the timer again)
        if clock.deadline <= self._at:  # due: as the loop runs a timer, not by a second clock read
            clock.expired = True
            self.task.cancel()
        else:
            self.ensure(clock.deadline)

    def stop(self, clock: WaitClock, cancelled: bool) -> bool:
        """The case has ended; True when it ended by this watchdog's cancellation
        (`cancelled`: it raised `CancelledError`) and nothing else cancelled the task
        meanwhile. The timer stays set: the next case's deadline is later."""
        clock.watchdog = None
        self._clock = None
        if clock.expired:
            return self.task.uncancel() <= self._cancelling and cancelled
        return False

    def close(self) -> None:
        """The task runs no more cases: its timer goes."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


_WATCHDOG: ContextVar[Watchdog | None] = ContextVar("evalh_watchdog", default=None)


def install() -> Watchdog:
    """A watchdog for the current task's cases (a suite's worker), found by `watchdog()`
    in that task. `close()` it when the task is done."""
    dog = Watchdog()
    _WATCHDOG.set(dog)
    return dog


def watchdog() -> tuple[Watchdog, bool]:
    """The current task's watchdog, and whether it is a new one for this call alone (a task
    without one installed: a worker process's one task per case); close a new one after."""
    dog = _WATCHDOG.get()
    if dog is not None and dog.task is asyncio.current_task():
        return dog, False
    return Watchdog(), True
