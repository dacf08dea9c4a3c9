"""A sync call run on a worker thread, its outcome handed back to the event loop.

`in_thread(fn, *args)` is `asyncio.to_thread` with less in between, for the calls evalh makes
once per case (a sync Python target, a sync custom scorer): `to_thread` makes a
`concurrent.futures.Future` (a condition and its lock), chains it to an asyncio future with
two callbacks and copies the outcome across; here the thread sets the loop's future itself
through `call_soon_threadsafe`. The same behaviour: the call runs in a copy of the caller's
context (`evalh.context.current()` sees its case), its exception is raised to the caller,
and a caller that stops waiting (a timeout) leaves the call to finish on its thread, its
outcome dropped — also when it returns after the loop has closed.

Used when the running loop's default executor can `post` a call (the runner's
`evalh.core.run.workers.DaemonExecutor`); with any other executor it is `asyncio.to_thread`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable
from typing import Any


async def in_thread(fn: Callable[..., Any], /, *args: Any) -> Any:
    """`fn(*args)` on a worker thread; its result, or its exception raised here."""
    loop = asyncio.get_running_loop()
    post = getattr(getattr(loop, "_default_executor", None), "post", None)
    if post is None:
        return await asyncio.to_thread(fn, *args)
    future = loop.create_future()
    post(_call, loop, future, contextvars.copy_context(), fn, args)
    return await future


def _call(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], ctx: contextvars.Context,
          fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """On the worker thread: the call, then its outcome to the loop."""
    try:
        outcome, failed = ctx.run(fn, *args), False
    except BaseException as exc:  # handed to the awaiting coroutine, as to_thread does
        outcome, failed = exc, True
    with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits for it any more
        loop.call_soon_threadsafe(_settle, future, outcome, failed)


def _settle(future: asyncio.Future[Any], outcome: Any, failed: bool) -> None:
    if future.done():  # the caller stopped waiting (cancelled: its case timed out)
        return
    if not failed:
        future.set_result(outcome)
    elif isinstance(outcome, StopIteration):  # a future cannot hold one: said as what it is
        future.set_exception(RuntimeError(f"StopIteration: {outcome}"))
    else:
        future.set_exception(outcome)
