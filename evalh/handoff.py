"""A sync call run on a worker thread, its outcome handed back to the event loop.

`in_thread(fn, *args)` is `asyncio.to_thread` with less in between, for the calls evalh makes
once per case (a sync Python target, a sync custom scorer): `to_thread` makes a
`concurrent.futures.Future` (a condition and its lock), chains it to an asyncio future with
two callbacks and copies the outcome across, and wakes the loop for every call that
returns; here the thread queues its outcome for the loop (`_Returns`), and only the first
outcome queued while the loop is busy wakes it: the loop then settles every queued one in
one callback. The same behaviour: the call runs in a copy of the caller's context
(`evalh.context.current()` sees its case), its exception is raised to the caller, and a
caller that stops waiting (a timeout) leaves the call to finish on its thread, its outcome
dropped — also when it returns after the loop has closed.

**Cheap functions share one thread.** A thread per call costs a wake-up of that thread and
two hand-overs of the interpreter lock per call, with up to `concurrency` threads woken
each by its own futex — more than an instant function itself (bench/lean_path_results.md).
So each function's calls are timed on their thread (`_Pace`, per loop): a function starts
with a thread per call, and once a window of its calls has nearly all returned within
`CHEAP_S` it is *cheap*: its calls go to the executor's lane (`DaemonExecutor.post_serial`),
one thread that runs them in turn. The loop holds them until it has nothing else to do (at
most `HOLD_S`) and hands them over together (`_Returns.serial`): the lane's thread is woken
once per burst and takes the interpreter lock when the loop waits. It stays safe
for a function that then blocks: a loop timer (`_Returns.watch`, armed only while the lane
has work) looks every `STUCK_S / 2`, and when the lane's call has run longer than
`STUCK_S` the calls waiting behind it each get a thread of their own (`spill`) and that
function goes back to a thread per call, to be proven cheap again over a window four times
as long (so one that blocks now and then settles on threads). A cheap function whose call
on the lane returns slower than `STUCK_S`, or that makes more than `WINDOW // 16` calls
slower than `CHEAP_S` in a window (however long), goes back the same way as soon as it
does, and the calls queued on the lane go to threads: calls a little slower than cheap but
never stuck would otherwise run in turn, each holding every call behind it. Declaring a function cheap (`@evalh.api.inline`)
still saves the rest: it is then called on the loop, with no thread at all.

Used when the running loop's default executor can `post` a call (the runner's
`evalh.core.run.workers.DaemonExecutor`); with any other executor it is `asyncio.to_thread`.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

CHEAP_S = 0.0002
"""A call that returns within this (wall time on its thread) counts as cheap: about what
the thread hand-off it would save costs, so running such calls one after another loses
no throughput to running them side by side."""
STUCK_S = 0.002
"""A call on the lane running longer than this is taken to block: the calls behind it are
given threads of their own."""
HOLD_S = 0.001
"""Serial calls wait on the loop for it to be idle at most this long before they go to
the lane all the same."""
WINDOW = 64
"""Calls a new function is timed over before it may be called cheap."""
MAX_WINDOW = 4096
"""The longest window: a function that keeps being sent back is tried again this rarely."""


class _Pace:
    """How one function's calls went: cheap (to the lane) or not (a thread per call), and
    the current window's count of calls and of slow ones. Read and changed on the loop."""

    __slots__ = ("calls", "cheap", "slow", "window")

    def __init__(self) -> None:
        self.cheap = False
        self.calls = 0
        self.slow = 0
        self.window = WINDOW

    def took(self, seconds: float) -> bool:
        """One call returned after `seconds`; True if that sent a cheap function back."""
        if seconds > STUCK_S:
            if self.cheap:
                self.demote()
                return True
            self.calls += 1
            self.slow = self.window  # this window cannot prove it cheap
            return False
        self.calls += 1
        if seconds > CHEAP_S:
            self.slow += 1
            if self.cheap and self.slow > WINDOW // 16:
                # Each slow call on the lane held every call queued behind it, and none was
                # slow enough to be spilled: back now, not at the window's end (a long
                # window would let hundreds of them run in turn, `concurrency` calls waiting).
                self.demote()
                return True
        if self.calls >= self.window:
            ok = self.slow <= self.window // 16
            if self.cheap and not ok:
                self.demote()
                return True
            self.cheap = ok
            self.calls = self.slow = 0
        return False

    def demote(self) -> None:
        """Back to a thread per call, proven cheap again only over a longer window."""
        self.cheap = False
        self.calls = self.slow = 0
        self.window = min(self.window * 4, MAX_WINDOW)


_Held = tuple[asyncio.Future[Any], contextvars.Context, Callable[..., Any], tuple[Any, ...], _Pace]


class _Returns:
    """The outcomes of one loop's calls, queued by their threads and settled on the loop;
    its functions' paces, and the watch over the lane."""

    __slots__ = ("__weakref__", "_armed", "_executor", "_held", "_held_since", "_lock", "_loop", "_paces",
                 "_queued", "_ready", "_watching")

    def __init__(self, loop: asyncio.AbstractEventLoop, executor: Any) -> None:
        self._loop = weakref.ref(loop)  # held weakly: the loop's to hold, not ours
        self._executor = executor
        self._lock = threading.Lock()
        self._queued: list[tuple[asyncio.Future[Any], Any, bool, _Pace, float]] = []
        self._armed = False  # a settle is scheduled on the loop: no need to wake it again
        self._paces: dict[Any, _Pace] = {}
        self._watching = False  # the lane's watch timer is set
        self._held: list[_Held] = []  # serial calls not yet handed to the lane
        self._held_since = 0.0
        self._ready = getattr(loop, "_ready", None)  # asyncio's loop: its callbacks due now

    def pace(self, fn: Callable[..., Any]) -> _Pace:
        try:
            pace = self._paces.get(fn)
        except TypeError:  # an unhashable callable: timed afresh every call, never cheap
            return _Pace()
        if pace is None:
            if len(self._paces) >= 1024:  # functions made per call: start over rather than grow
                self._paces.clear()
            pace = self._paces[fn] = _Pace()
        return pace

    def put(self, future: asyncio.Future[Any], outcome: Any, failed: bool, pace: _Pace, took: float) -> None:
        """On a worker thread: queue a call's outcome; wake the loop if nothing else has.
        Once the loop is gone or closed nobody waits for the outcome: it is dropped, and so
        is the queue (its futures would keep the closed loop alive as long as this thread
        holds `self`)."""
        loop = self._loop()
        with self._lock:
            if loop is None or loop.is_closed():
                self._queued.clear()
                return
            self._queued.append((future, outcome, failed, pace, took))
            if self._armed:
                return
            self._armed = True
        try:
            loop.call_soon_threadsafe(self._settle_all)
        except RuntimeError:  # it closed meanwhile: the same
            with self._lock:
                self._queued.clear()

    def _settle_all(self) -> None:
        with self._lock:
            queued, self._queued = self._queued, []
            self._armed = False
        spill = False
        for future, outcome, failed, pace, took in queued:
            spill |= pace.took(took)
            _settle(future, outcome, failed)
        if spill:  # the function's calls queued on the lane go to threads with the rest
            self._executor.spill()

    def serial(self, loop: asyncio.AbstractEventLoop, job: _Held) -> None:
        """On the loop: the call `job` to the lane once the loop has nothing else to do (or
        `HOLD_S` has passed), with every other one made meanwhile: the lane's thread is then
        woken once for them all, and takes the interpreter lock while the loop waits (woken
        earlier, it would wait for the lock and be woken in vain each time the loop lets it
        go between callbacks)."""
        self._held.append(job)
        if len(self._held) == 1:
            self._held_since = time.perf_counter()
            loop.call_soon(self._hand_over, loop)

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._ready and time.perf_counter() - self._held_since < HOLD_S:
            loop.call_soon(self._hand_over, loop)  # more to do on the loop first
            return
        held, self._held = self._held, []
        post = self._executor.post_serial
        for future, ctx, fn, args, pace in held:
            try:
                post(pace, _call, self, future, ctx, fn, args, pace)
            except RuntimeError as exc:  # the executor was shut down meanwhile: as `post` says it
                if not future.done():
                    future.set_exception(exc)
        self.watch(loop)

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the loop, after calls went to the lane: look at the lane every `STUCK_S / 2`
        while it has work."""
        if not self._watching:
            self._watching = True
            loop.call_later(STUCK_S / 2, self._look, loop)

    def _look(self, loop: asyncio.AbstractEventLoop) -> None:
        self._watching = False
        running = self._executor.lane_call()
        if running is not None and time.perf_counter() - running[0] > STUCK_S:
            pace: _Pace = running[1]
            if pace.cheap:
                pace.demote()
            self._executor.spill()
            return  # a new lane starts with the next serial call, which sets the watch again
        if self._executor.lane_busy():
            self.watch(loop)


def _returns(loop: asyncio.AbstractEventLoop, executor: Any) -> _Returns:
    """The loop's `_Returns`, kept on its executor (`DaemonExecutor.handoff`): nothing
    outside the loop's own objects refers to it, so whatever it holds (queued futures, a
    function that refers to its loop) goes with the loop. A map keyed weakly by the loop
    could not drop an entry whose value refers back to its key."""
    returns: _Returns | None = executor.handoff
    if returns is None or returns._loop() is not loop:
        returns = executor.handoff = _Returns(loop, executor)
    return returns


async def in_thread(fn: Callable[..., Any], /, *args: Any) -> Any:
    """`fn(*args)` on a worker thread; its result, or its exception raised here."""
    loop = asyncio.get_running_loop()
    executor = getattr(loop, "_default_executor", None)
    post = getattr(executor, "post", None)
    if post is None:
        return await asyncio.to_thread(fn, *args)
    returns = _returns(loop, executor)
    future = loop.create_future()
    pace = returns.pace(fn)
    if pace.cheap:
        returns.serial(loop, (future, contextvars.copy_context(), fn, args, pace))
    else:
        post(_call, returns, future, contextvars.copy_context(), fn, args, pace)
    return await future


def _call(returns: _Returns, future: asyncio.Future[Any], ctx: contextvars.Context,
          fn: Callable[..., Any], args: tuple[Any, ...], pace: _Pace) -> None:
    """On the worker thread: the call, then its outcome (and how long it took) to the loop."""
    started = time.perf_counter()
    try:
        outcome, failed = ctx.run(fn, *args), False
    except BaseException as exc:  # handed to the awaiting coroutine, as to_thread does
        outcome, failed = exc, True
    returns.put(future, outcome, failed, pace, time.perf_counter() - started)


def _settle(future: asyncio.Future[Any], outcome: Any, failed: bool) -> None:
    if future.done():  # the caller stopped waiting (cancelled: its case timed out)
        return
    if not failed:
        future.set_result(outcome)
    elif isinstance(outcome, StopIteration):  # a future cannot hold one: said as what it is
        future.set_exception(RuntimeError(f"StopIteration: {outcome}"))
    else:
        future.set_exception(outcome)
