"""`ConnectionShards`: an httpx transport that keeps one single-connection pool per
connection, so each request costs the same whatever the number in flight.

Why: httpcore's connection pool rescans every pooled connection on each request and each
response close (`_assign_requests_to_connections` asks every connection whether it is
idle, expired, readable: encode/httpcore#1035). At 32–64 connections that is 3–10 ms of
CPU per request on one event loop — more than a 50 ms provider leaves per request at 64
in flight. Here a request takes an idle inner transport (one connection, its own
`AsyncHTTPTransport`) from a free list, or opens a new one; the transport goes back on
the list when the response stream is closed. Free-list work is O(1), and each inner pool
scans one connection.

Used by the `openai` backend (httpx). Works with `httpx2` too (pass the module), but the
`anthropic` backend keeps the SDK's own client: httpx2's pool no longer rescans every
connection, and shards measured no faster there. The number of connections is bounded by
the requests in flight (the endpoint's `max_in_flight`), as it was with one pool and
`max_connections=None`. HTTP/1.1 keep-alive and the keep-alive expiry are the inner
pools' (5 s by default).

Proxies from the environment (`HTTP(S)_PROXY`, `ALL_PROXY`) are applied by httpx only to
clients built without an explicit transport; `sharded_client_kwargs` therefore returns
nothing to shard when one is set, and the client keeps httpx's own pool.
"""

from __future__ import annotations

import ssl
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterable
from types import ModuleType
from typing import Any

_STREAM_CLASSES: dict[str, type] = {}


def _releasing_stream_class(httpx: ModuleType) -> type:
    """A subclass of `httpx.AsyncByteStream` (the client asserts the type) that calls
    `release` once, when the response is closed."""
    cls = _STREAM_CLASSES.get(httpx.__name__)
    if cls is not None:
        return cls

    class ReleasingStream(httpx.AsyncByteStream):  # type: ignore[misc,name-defined]
        __slots__ = ("_inner", "_release")

        def __init__(self, inner: Any, release: Callable[[], None]) -> None:
            self._inner = inner
            self._release: Callable[[], None] | None = release

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._inner:
                yield chunk

        async def aclose(self) -> None:
            try:
                await self._inner.aclose()
            finally:
                release, self._release = self._release, None
                if release is not None:
                    release()

    _STREAM_CLASSES[httpx.__name__] = ReleasingStream
    return ReleasingStream


class ConnectionShards:
    """An `AsyncBaseTransport` (duck-typed: httpx only calls these three methods) over
    inner single-connection `AsyncHTTPTransport`s, made on demand and reused LIFO."""

    def __init__(self, httpx: ModuleType, **transport_kwargs: Any) -> None:
        self._httpx = httpx
        self._stream = _releasing_stream_class(httpx)
        self._kwargs = transport_kwargs
        self._kwargs["limits"] = httpx.Limits(
            max_connections=1, max_keepalive_connections=1,
            keepalive_expiry=transport_kwargs.get("limits", httpx.Limits()).keepalive_expiry,
        )
        self._idle: list[Any] = []
        self._all: list[Any] = []
        self._closed = False

    def _new(self) -> Any:
        kwargs = self._kwargs
        verify = kwargs.get("verify", True)
        if not isinstance(verify, ssl.SSLContext):
            # One context for every inner transport: building one loads the CA bundle.
            kwargs["verify"] = self._httpx.create_ssl_context(
                verify=verify, cert=kwargs.pop("cert", None), trust_env=kwargs.get("trust_env", True)
            )
        transport = self._httpx.AsyncHTTPTransport(**kwargs)
        self._all.append(transport)
        return transport

    async def handle_async_request(self, request: Any) -> Any:
        inner = self._idle.pop() if self._idle else self._new()
        try:
            response = await inner.handle_async_request(request)
        except BaseException:
            self._release(inner)
            raise
        response.stream = self._stream(response.stream, lambda: self._release(inner))
        return response

    def _release(self, inner: Any) -> None:
        # A response read to its end after `aclose` must not put a closed transport back.
        if not self._closed:
            self._idle.append(inner)

    @property
    def connections(self) -> int:
        """Inner transports opened so far (at most the peak number in flight)."""
        return len(self._all)

    async def aclose(self) -> None:
        self._closed = True
        transports, self._all, self._idle = self._all, [], []
        for transport in transports:
            await transport.aclose()

    async def __aenter__(self) -> ConnectionShards:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def sharded_client_kwargs(
    httpx: ModuleType, socket_options: Iterable[tuple[int, int, int]] | None = None
) -> dict[str, Any]:
    """`{"transport": ConnectionShards(...)}` to pass to `httpx.AsyncClient(...)`, or `{}`
    when the environment sets a proxy (then httpx's own pool, which honours it, is used)."""
    if any(scheme != "no" for scheme in urllib.request.getproxies()):  # `no` is NO_PROXY
        return {}
    kwargs: dict[str, Any] = {}
    if socket_options is not None:
        kwargs["socket_options"] = list(socket_options)
    return {"transport": ConnectionShards(httpx, **kwargs)}
