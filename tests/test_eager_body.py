"""`evalh.providers.eager_body`: a request's body is on the wire when its coroutine first
waits (for the reply), as aiohttp does on Python 3.12; and `started` keeps a coroutine's
result, errors and cancellation whatever step it is at."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest

from evalh.mock.mock_provider import MockProvider
from evalh.providers.eager_body import EAGER_TASKS, EagerBodyRequest, started


@pytest.mark.parametrize("request_class", [EagerBodyRequest, aiohttp.ClientRequest])
def test_the_body_has_left_when_the_request_first_waits(request_class: type[aiohttp.ClientRequest],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[bytes] = []
    transport_class: Any = type(None)

    async def main() -> tuple[bool, dict[str, Any]]:
        nonlocal transport_class
        with MockProvider() as mock:
            url = mock.openai_base_url + "/chat/completions"
            body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "MARKER"}]})
            headers = {"Authorization": "Bearer k", "Content-Type": "application/json"}
            async with aiohttp.ClientSession(request_class=request_class, headers=headers) as session:
                async with session.post(url, data=body) as resp:  # the connection opened
                    await resp.read()
                (proto, _), = [c for conns in session.connector._conns.values() for c in conns]  # type: ignore[union-attr]
                transport_class = type(proto.transport)
                original = transport_class.write

                def write(self: Any, data: Any) -> None:
                    written.append(bytes(data))
                    original(self, data)

                monkeypatch.setattr(transport_class, "write", write)
                # the request's coroutine run to its first wait (for the reply), no further
                rest = started(session.post(url, data=body).__aenter__())
                sent = b"MARKER" in b"".join(written)
                resp = await rest
                reply = orjson.loads(await resp.read())
                resp.release()
                return sent, reply

    sent, reply = asyncio.run(main())
    assert reply["choices"][0]["message"]["content"] == "ok"
    # aiohttp's own request sends it from a task the loop runs later, before Python 3.12
    assert sent is (request_class is EagerBodyRequest or EAGER_TASKS)


def test_started_returns_raises_and_resumes() -> None:
    async def value() -> int:
        return 7

    async def boom() -> None:
        raise ValueError("no")

    async def waits(fut: asyncio.Future[int]) -> int:
        return await fut + 1

    async def main() -> None:
        assert await started(value()) == 7
        with pytest.raises(ValueError, match="no"):
            await started(boom())
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        task = asyncio.ensure_future(started(waits(fut)))
        await asyncio.sleep(0)
        assert not task.done()
        fut.set_result(1)
        assert await task == 2
        # a cancellation reaches the coroutine where it waits
        fut2: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        task2 = asyncio.ensure_future(started(waits(fut2)))
        await asyncio.sleep(0)
        task2.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task2
        assert fut2.cancelled()

    asyncio.run(main())
