"""`ConnectionShards`: the sharded httpx transport both model backends use, against the
loopback mock provider with the real httpx and httpx2 clients."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from evalh.providers.base import ChatRequest, ProviderConfig
from evalh.providers.transport import ConnectionShards, sharded_client_kwargs
from evalh.testing import MockProvider

BODY = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def mp() -> Iterator[MockProvider]:
    with MockProvider([{"match": "hi", "text": "hello"}]) as provider:
        yield provider


def _modules() -> list[Any]:
    mods = [httpx]
    with contextlib.suppress(ImportError):  # httpx2: what anthropic >= 2 builds on
        mods.append(importlib.import_module("httpx2"))
    return mods


@pytest.mark.parametrize("module", _modules(), ids=lambda m: m.__name__)
def test_connections_are_reused_and_bounded_by_requests_in_flight(mp: MockProvider, module: Any) -> None:
    async def go() -> tuple[int, int, list[str]]:
        shards = ConnectionShards(module)
        async with module.AsyncClient(transport=shards, headers={"authorization": "Bearer k"}) as client:
            url = mp.openai_base_url + "/chat/completions"
            texts = []
            for _ in range(5):  # one after another: one connection
                r = await client.post(url, json=BODY)
                texts.append(r.json()["choices"][0]["message"]["content"])
            sequential = shards.connections
            gate = asyncio.Semaphore(4)

            async def one() -> str:
                async with gate:
                    r = await client.post(url, json=BODY)
                    return str(r.json()["choices"][0]["message"]["content"])

            texts += await asyncio.gather(*(one() for _ in range(40)))
            return sequential, shards.connections, texts

    sequential, total, texts = asyncio.run(go())
    assert sequential == 1
    assert 1 <= total <= 4  # never more connections than requests in flight
    assert texts == ["hello"] * 45
    assert mp.count() == 45


def test_a_dropped_connection_is_an_httpx_error_and_the_next_request_reconnects(mp: MockProvider) -> None:
    async def go() -> tuple[type[BaseException], int]:
        async with httpx.AsyncClient(transport=ConnectionShards(httpx)) as client:
            url = mp.openai_base_url + "/chat/completions"
            headers = {"authorization": "Bearer k"}
            await client.post(url, json=BODY, headers=headers)
            mp.inject("drop")
            with pytest.raises(httpx.TransportError) as info:
                await client.post(url, json=BODY, headers=headers)
            r = await client.post(url, json=BODY, headers=headers)
            return info.type, r.status_code

    kind, status = asyncio.run(go())
    assert issubclass(kind, httpx.TransportError)
    assert status == 200


def test_a_proxy_in_the_environment_keeps_httpx_own_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert sharded_client_kwargs(httpx) == {}
    monkeypatch.delenv("HTTPS_PROXY")
    for name in ("HTTP_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(sharded_client_kwargs(httpx)["transport"], ConnectionShards)


def test_the_openai_backend_sends_through_shards(mp: MockProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalh.providers.openai import OpenAIBackend

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)

    async def go() -> tuple[list[str], int]:
        backend = OpenAIBackend(ProviderConfig(provider="openai", model="m", base_url=mp.openai_base_url), "k")
        request = ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=8)
        try:
            replies = await asyncio.gather(*(backend.send(request) for _ in range(6)))
            shards = backend._client._transport
            assert isinstance(shards, ConnectionShards)
            opened = shards.connections
        finally:
            await backend.aclose()
        return [r.text for r in replies], opened

    texts, opened = asyncio.run(go())
    assert texts == ["hello"] * 6
    assert 1 <= opened <= 6
    assert mp.count() == 6


def test_a_response_closed_after_the_transport_does_not_revive_a_connection(mp: MockProvider) -> None:
    async def go() -> int:
        shards = ConnectionShards(httpx)
        client = httpx.AsyncClient(transport=shards, headers={"authorization": "Bearer k"})
        request = client.build_request("POST", mp.openai_base_url + "/chat/completions", json=BODY)
        response = await client.send(request, stream=True)
        await shards.aclose()
        await response.aclose()  # read to its end after the transport closed
        idle = len(shards._idle)
        await client.aclose()
        return idle

    assert asyncio.run(go()) == 0
