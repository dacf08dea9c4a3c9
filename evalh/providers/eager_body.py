"""A request's body written when it is sent, not a loop pass later (aiohttp on Python 3.11).

aiohttp writes a request's body from a task of its own. From Python 3.12 it starts that
task eagerly (`eager_start=True`): a small body goes out with the headers inside `send`.
On Python 3.11 the task only runs on the loop's next pass, after everything else that was
ready: with 64 requests in flight, every reply handled on the same pass delays every
request sent on it, ~1 ms a request on a busy loop, so a run of 50 ms replies took
~53 ms a case. `EagerBodyRequest` (an aiohttp `request_class`) runs the writer's first
step at once, as 3.12 does: a body that needs no wait (any small one) is on the wire when
`send` returns; one that must wait (a paused transport, `Expect: 100-continue`) goes on
from where it stopped, in the task aiohttp makes of it. Nothing else changes: the bytes
sent, the errors raised (in that task, as before) and the response are aiohttp's.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Coroutine, Generator
from typing import Any

import aiohttp

EAGER_TASKS = sys.version_info >= (3, 12)
"""aiohttp starts the body's writer eagerly itself."""


class EagerBodyRequest(aiohttp.ClientRequest):
    """`aiohttp.ClientRequest` whose body writer takes its first step when it is made."""

    def write_bytes(self, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, None]:
        writer = super().write_bytes(*args, **kwargs)
        return writer if EAGER_TASKS else started(writer)


def started(coro: Coroutine[Any, Any, Any]) -> Coroutine[Any, Any, Any]:
    """`coro` with its first step already taken: a coroutine that returns what `coro`
    returned, raises what it raised, or takes over where it waits."""
    try:
        waiting_on = coro.send(None)
    except StopIteration as stop:
        return _returned(stop.value)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # raised where aiohttp's task would have raised it
        return _raised(exc)
    return _resumed(coro, waiting_on)


async def _returned(value: Any) -> Any:
    return value


async def _raised(exc: BaseException) -> Any:
    raise exc


@types.coroutine
def _resumed(coro: Coroutine[Any, Any, Any], waiting_on: Any) -> Generator[Any, Any, Any]:
    """Drive `coro`, already waiting on `waiting_on` (a future), to its end: what the task
    running this sends or throws in goes to `coro`, what `coro` waits on goes to the task."""
    while True:
        try:
            sent = yield waiting_on
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # a cancellation, thrown in by the task
            try:
                waiting_on = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                waiting_on = coro.send(sent)
            except StopIteration as stop:
                return stop.value
