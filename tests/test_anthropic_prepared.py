"""The anthropic backend's prepared request (issue 33): what it sends is what the SDK's own
request path sends, its error replies are the SDK's exceptions, and an SDK whose request
builder cannot be used is called through `client.post` instead — against the loopback mock,
with the real SDK."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from evalh.mock import MockProvider
from evalh.providers import anthropic as backend_module
from evalh.providers.anthropic import AnthropicBackend
from evalh.providers.base import ChatRequest, ChatResponse, ProviderConfig
from evalh.providers.resilience import PermanentError, TransientError

REQUEST = ChatRequest(model="claude-test", messages=[{"role": "user", "content": "hello"}],
                      system="Be brief.", max_tokens=16, params={"top_k": 3})


@pytest.fixture
def mp() -> Iterator[MockProvider]:
    with MockProvider([{"match": "hello", "text": "hello back to you"}]) as provider:
        yield provider


def send(mp: MockProvider, *, prepared: bool = True, **config: Any) -> ChatResponse:
    backend = AnthropicBackend(ProviderConfig(provider="anthropic", model="claude-test",
                                              base_url=mp.base_url, **config), "k")

    async def go() -> ChatResponse:
        try:
            if not prepared:  # what an SDK whose request builder differs gets
                backend._open()
                backend._template = None
            return await backend.send(REQUEST)
        finally:
            await backend.aclose()

    return asyncio.run(go())


def test_the_prepared_request_sends_what_the_sdk_sends(mp: MockProvider) -> None:
    fast = send(mp)
    wire_fast = mp.requests[-1]
    whole = send(mp, prepared=False)
    wire_whole = mp.requests[-1]
    assert fast == whole and fast.text == "hello back to you"
    assert wire_fast.path == wire_whole.path == "/v1/messages"
    assert wire_fast.body == wire_whole.body
    assert wire_fast.body["system"] == "Be brief." and wire_fast.body["top_k"] == 3
    # aiohttp says keep-alive by omission; every other header is the SDK's, value for value
    differing = {name for name in {*wire_fast.headers, *wire_whole.headers}
                 if wire_fast.headers.get(name) != wire_whole.headers.get(name)}
    assert differing <= {"connection"}
    assert wire_fast.headers["anthropic-version"] and wire_fast.headers["x-stainless-lang"] == "python"


@pytest.mark.parametrize("prepared", [True, False])
def test_error_replies_are_the_sdks_exceptions_mapped_alike(mp: MockProvider, prepared: bool) -> None:
    mp.inject("overloaded")
    with pytest.raises(TransientError) as overloaded:
        send(mp, prepared=prepared)
    assert overloaded.value.status == 529 and "overloaded" in str(overloaded.value)
    mp.inject("malformed_json")
    with pytest.raises(TransientError, match="malformed reply from http://127.0.0.1"):
        send(mp, prepared=prepared)
    mp.inject("drop")
    with pytest.raises(TransientError, match="connection to http://127.0.0.1:[0-9]+ failed"):
        send(mp, prepared=prepared)


def test_no_template_when_the_sdk_cannot_build_one() -> None:
    class Odd:
        def _build_request(self, options: Any) -> Any:
            raise AttributeError("not this SDK")

    assert backend_module._template(Odd()) is None


def test_a_key_with_a_line_break_fails_at_once_without_showing_it(mp: MockProvider) -> None:
    """aiohttp refuses the header: a permanent error naming why (retrying cannot help), as
    the openai backend reports it, never the key itself."""
    backend = AnthropicBackend(ProviderConfig(provider="anthropic", model="claude-test",
                                              base_url=mp.base_url), "secret-part\nrest")

    async def go() -> None:
        try:
            await backend.send(REQUEST)
        finally:
            await backend.aclose()

    with pytest.raises(PermanentError, match="could not be sent") as info:
        asyncio.run(go())
    assert "secret-part" not in str(info.value) and mp.count() == 0
