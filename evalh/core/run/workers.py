"""`DaemonExecutor`: where sync targets run (the loop's default executor, so
`asyncio.to_thread` uses it, and `evalh.handoff.in_thread` posts its calls to it).

A sync call cannot be interrupted, so a target that hangs past its case's timeout keeps
running after the case is recorded `errored`. With a fixed-size pool that thread would keep
a slot: the next cases would wait in the pool's queue while their own timeouts ran, and
`asyncio.run` (and interpreter exit) would wait for the hung call before the process could
end. Here every call gets an idle thread or a new one, so an abandoned call holds only its
own thread; the threads are daemons and `shutdown` never waits for a busy one, so a run
that has written its document exits.

Calls known to return at once can go to the *lane* instead (`post_serial`): one thread that
runs them one after another from its queue, so a burst of them costs one wake-up and one
hand-over of the interpreter lock instead of one per call and per thread. Whoever posts
there watches it (`lane_call`): a lane call that has run too long is not cheap after all,
and `spill` gives every call waiting behind it a thread of its own and retires the lane
(its thread stops after the call it is in; the next serial call starts a new lane), so a
call that blocks or hangs holds only its own thread, as on the thread-per-call path.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

_Job = tuple[Future[Any] | None, Callable[..., Any], tuple[Any, ...], dict[str, Any]]
_SerialJob = tuple[Any, Callable[..., Any], tuple[Any, ...]]


class _Worker(threading.Thread):
    def __init__(self, pool: DaemonExecutor, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.pool = pool
        self.inbox: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()

    def run(self) -> None:
        while (job := self.inbox.get()) is not None:
            future, fn, args, kwargs = job
            if future is None:  # posted (`post`): the call hands its outcome back itself
                fn(*args)
            elif future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:  # handed to the awaiting coroutine
                    future.set_exception(exc)
            del job, future, fn, args, kwargs
            if not self.pool._idle(self):
                return


class _Lane(threading.Thread):
    """The thread that runs serial calls in turn; `running` is (when the call it is in
    started, by `time.perf_counter`, and that call's tag), or None between calls."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.inbox: queue.SimpleQueue[_SerialJob | None] = queue.SimpleQueue()
        self.running: tuple[float, Any] | None = None

    def run(self) -> None:
        clock = time.perf_counter
        while (job := self.inbox.get()) is not None:
            tag, fn, args = job
            self.running = (clock(), tag)
            fn(*args)  # a posted call: hands its outcome back itself, never raises
            self.running = None
            del job, tag, fn, args


class DaemonExecutor(ThreadPoolExecutor):
    """Runs each call on an idle daemon thread, or a new one; never joins a busy thread.
    A `ThreadPoolExecutor` only in type (asyncio's default executor must be one): none of
    its pool machinery is used."""

    def __init__(self, thread_name_prefix: str = "evalh-target") -> None:
        super().__init__(max_workers=1, thread_name_prefix=thread_name_prefix)
        self._prefix = thread_name_prefix
        self._lock = threading.Lock()
        self._free: list[_Worker] = []
        self._lane: _Lane | None = None
        self._started = 0
        self._shutdown = False
        self.handoff: Any = None
        """`evalh.handoff`'s state for the loop this executor serves (its calls' outcomes and
        functions' paces), kept here so that it goes with the loop."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._worker().inbox.put((future, fn, args, kwargs))
        return future

    def post(self, fn: Callable[..., None], /, *args: Any) -> None:
        """Run `fn(*args)` on a thread as `submit` does, without a `Future`: `fn` hands its
        outcome back itself and must not raise (`evalh.handoff.in_thread`)."""
        self._worker().inbox.put((None, fn, args, {}))

    def post_serial(self, tag: Any, fn: Callable[..., None], /, *args: Any) -> None:
        """Run `fn(*args)` on the lane, after the serial calls posted before it; `fn` is as
        for `post`. `tag` is what `lane_call` says of the call while it runs."""
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new calls after shutdown")
            lane = self._lane
            if lane is None:
                self._started += 1
                lane = _Lane(f"{self._prefix}_{self._started}")
                lane.start()  # may fail (the thread limit): then no lane is kept, as for `post`
                self._lane = lane
            lane.inbox.put((tag, fn, args))

    def lane_call(self) -> tuple[float, Any] | None:
        """The lane's call running now: (when it started, by `time.perf_counter`, its tag)."""
        lane = self._lane
        return None if lane is None else lane.running

    def lane_busy(self) -> bool:
        """A serial call is running or waiting."""
        lane = self._lane
        return lane is not None and (lane.running is not None or not lane.inbox.empty())

    def spill(self) -> int:
        """Every call waiting on the lane to a thread of its own; the lane's thread stops
        after the call it is in, and the next serial call starts a new lane. Returns the
        number of calls moved."""
        with self._lock:
            lane, self._lane = self._lane, None
        if lane is None:
            return 0
        waiting: list[_SerialJob] = []
        while True:  # a call the lane's thread takes meanwhile runs there: each runs once
            try:
                job = lane.inbox.get_nowait()
            except queue.Empty:
                break
            assert job is not None  # only `spill` and `shutdown` stop a lane, once it is retired
            waiting.append(job)
        moved = 0
        for job in waiting:
            try:
                self.post(job[1], *job[2])
            except RuntimeError:  # shut down meanwhile (asyncio's end, on another thread)
                break
            moved += 1
        for job in waiting[moved:]:  # ...so the rest run on the retired lane, as `shutdown` says
            lane.inbox.put(job)
        lane.inbox.put(None)
        return moved

    def _worker(self) -> _Worker:
        """An idle thread, or a new one."""
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new calls after shutdown")
            worker = self._free.pop() if self._free else None
            if worker is None:
                self._started += 1
                worker = _Worker(self, f"{self._prefix}_{self._started}")
                worker.start()
        return worker

    def _idle(self, worker: _Worker) -> bool:
        """A worker finished its call: back on the free list (True), or told to stop."""
        with self._lock:
            if self._shutdown:
                return False
            self._free.append(worker)
            return True

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop the idle threads; busy ones stop when their call returns. With `wait`, only
        the idle threads are joined: a call that never returns cannot hold the caller. The
        lane stops after the calls queued on it and is not joined (one of them may hang)."""
        with self._lock:
            self._shutdown = True
            idle, self._free = self._free, []
            lane, self._lane = self._lane, None
        if lane is not None:
            lane.inbox.put(None)
        for worker in idle:
            worker.inbox.put(None)
        if wait:
            for worker in idle:
                worker.join()
