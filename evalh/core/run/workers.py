"""`DaemonExecutor`: where sync targets run (the loop's default executor, so
`asyncio.to_thread` uses it, and `evalh.handoff.in_thread` posts its calls to it).

A sync call cannot be interrupted, so a target that hangs past its case's timeout keeps
running after the case is recorded `errored`. With a fixed-size pool that thread would keep
a slot: the next cases would wait in the pool's queue while their own timeouts ran, and
`asyncio.run` (and interpreter exit) would wait for the hung call before the process could
end. Here every call gets an idle thread or a new one, so an abandoned call holds only its
own thread; the threads are daemons and `shutdown` never waits for a busy one, so a run
that has written its document exits.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class _Worker(threading.Thread):
    def __init__(self, pool: DaemonExecutor, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.pool = pool
        self.inbox: queue.SimpleQueue[
            tuple[Future[Any] | None, Callable[..., Any], tuple[Any, ...], dict[str, Any]] | None]
        self.inbox = queue.SimpleQueue()

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


class DaemonExecutor(ThreadPoolExecutor):
    """Runs each call on an idle daemon thread, or a new one; never joins a busy thread.
    A `ThreadPoolExecutor` only in type (asyncio's default executor must be one): none of
    its pool machinery is used."""

    def __init__(self, thread_name_prefix: str = "evalh-target") -> None:
        super().__init__(max_workers=1, thread_name_prefix=thread_name_prefix)
        self._prefix = thread_name_prefix
        self._lock = threading.Lock()
        self._free: list[_Worker] = []
        self._started = 0
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._worker().inbox.put((future, fn, args, kwargs))
        return future

    def post(self, fn: Callable[..., None], /, *args: Any) -> None:
        """Run `fn(*args)` on a thread as `submit` does, without a `Future`: `fn` hands its
        outcome back itself and must not raise (`evalh.handoff.in_thread`)."""
        self._worker().inbox.put((None, fn, args, {}))

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
        the idle threads are joined: a call that never returns cannot hold the caller."""
        with self._lock:
            self._shutdown = True
            idle, self._free = self._free, []
        for worker in idle:
            worker.inbox.put(None)
        if wait:
            for worker in idle:
                worker.join()
