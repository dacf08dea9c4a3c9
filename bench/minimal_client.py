"""A minimal keep-alive HTTP/1.1 client for the latency-bound benchmark's experiment row:
what the `openai` target would reach if its HTTP client cost next to nothing.

Not shipped, on purpose: it speaks just enough HTTP/1.1 for the loopback mock (plain TCP,
`Content-Length` replies, no TLS, proxies, chunked or compressed bodies, redirects), which
is what aiohttp does for evalh's `openai` backend. `use_in_openai_backend()` swaps it into
`OpenAIBackend.send` for one benchmark process.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: Any = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.closed = False

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            reply = self._reply()
            if reply is not None:
                self.waiter = None
                waiter.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("server closed the connection"))

    def _reply(self) -> tuple[int, bytes] | None:
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        head = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        length = 0
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if len(self.buf) < end + 4 + length:
            return None
        body = bytes(self.buf[end + 4 : end + 4 + length])
        del self.buf[: end + 4 + length]
        return int(head[0].split(" ", 2)[1]), body


class MinimalClient:
    """POSTs on a LIFO free list of keep-alive connections to one origin."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "127.0.0.1", parts.port or 80, parts.path
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.head = f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{extra}"
        self.idle: list[_Connection] = []

    async def post(self, body: bytes) -> tuple[int, bytes]:
        loop = asyncio.get_running_loop()
        conn = None
        while self.idle and conn is None:
            candidate = self.idle.pop()
            conn = None if candidate.closed else candidate
        if conn is None:
            _, conn = await loop.create_connection(_Connection, self.host, self.port)
        conn.waiter = loop.create_future()
        conn.transport.write(f"{self.head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        try:
            reply = await conn.waiter
        except BaseException:
            conn.transport.abort()
            raise
        self.idle.append(conn)
        return reply


def use_in_openai_backend() -> None:
    """Replace `OpenAIBackend.send` in this process by one on `MinimalClient` (same body,
    same reply parsing)."""
    import orjson

    from evalh.providers import openai

    async def send(self: Any, request: Any) -> Any:
        client = self.__dict__.get("_minimal")
        if client is None:
            client = self._minimal = MinimalClient(self._url, self._headers)
        status, raw = await client.post(orjson.dumps(self.body(request)))
        if status != 200:
            raise openai.TransientError(f"HTTP {status}", status=status)
        return openai._response(orjson.loads(raw), request.model, self._shown())

    openai.OpenAIBackend.send = send  # type: ignore[method-assign]
