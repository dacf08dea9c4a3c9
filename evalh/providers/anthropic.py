"""Anthropic Messages API through the official `anthropic` SDK (async client).

One attempt per `send`: the SDK's own retries are off (`max_retries=0`) because
`evalh.providers.resilience` retries every provider the same way. SDK exceptions are
mapped to `TransientError` (429, 5xx, 529 overloaded, timeouts, dropped connections,
malformed replies) or `PermanentError` (400, 401, 403, 404, …).

The base URL is the config's `base_url`, else `ANTHROPIC_BASE_URL`, else the SDK default
(`https://api.anthropic.com`; no `/v1`: the SDK adds it). A query in the base URL (a
gateway's `?api_key=…`) is sent as the query of every request. The key is read from the
environment variable the config names (`api_key_env`, default `ANTHROPIC_API_KEY`).

Errors name the server called: "Anthropic" for the API itself, else the proxy or compatible
server's `scheme://host:port` (never its credentials or path).
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from evalh.providers.base import ChatRequest, ChatResponse, ProviderConfig
from evalh.providers.resilience import (
    PermanentError,
    TransientError,
    is_retryable,
    parse_retry_after,
)

KEY_ENV = "ANTHROPIC_API_KEY"
"""The key's variable when a config names no `api_key_env` (evalh.providers.base.ProviderModule)."""


def make_backend(config: ProviderConfig, api_key: str) -> AnthropicBackend:
    """The provider's client (evalh.providers.base.ProviderModule)."""
    return AnthropicBackend(config, api_key)


def resolve_base_url(config: ProviderConfig) -> str:
    return config.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"


def server_name(base_url: str) -> str:
    """What errors call the server: `Anthropic` for its API, else `scheme://host:port`."""
    parts = urlsplit(base_url)
    if parts.hostname == "api.anthropic.com":
        return "Anthropic"
    return f"{parts.scheme}://{parts.hostname or ''}{':' + str(parts.port) if parts.port else ''}"


class AnthropicBackend:
    """One Messages API call per `send`, on a shared `AsyncAnthropic` client."""

    provider = "anthropic"

    def __init__(self, config: ProviderConfig, api_key: str) -> None:
        try:
            import anthropic
        except ImportError:  # pragma: no cover - a dependency of evalh
            raise PermanentError("the `anthropic` package is not installed: pip install anthropic") from None
        self._sdk = anthropic
        from evalh.providers.openai import split_query

        base, query = split_query(resolve_base_url(config))
        self.base_url = base
        self.server = server_name(self.base_url)
        # The SDK's aiohttp transport (the `anthropic[aiohttp]` extra, `DefaultAioHttpClient`):
        # ~1.6 ms of CPU per request against ~2.7-3 ms with its default httpx2 pool, which is
        # what bounds throughput at 32-64 requests in flight (bench/runner_results.md).
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=self.base_url, max_retries=0, timeout=config.timeout_s,
            default_query=dict(parse_qsl(query, keep_blank_values=True)) or None,
            http_client=anthropic.DefaultAioHttpClient(timeout=config.timeout_s),
        )

    async def send(self, request: ChatRequest) -> ChatResponse:
        sdk = self._sdk
        body = message_body(request)
        try:
            # The SDK's own request path (auth, version headers, base URL, timeouts, its error
            # types), with the reply kept as the JSON it is (`cast_to=object`): building the
            # typed params and `Message` cost ~0.4 ms of CPU per request, a third of the call.
            reply = await self._client.post("/v1/messages", body=body, cast_to=object)
            if isinstance(reply, str):  # JSON sent without a JSON content type: the raw text
                reply = json.loads(reply)
        except sdk.APIStatusError as exc:
            status = exc.status_code
            text = f"HTTP {status} from {self.server}: {_error_message(exc)}"
            if status == 404 and urlsplit(self.base_url).path.rstrip("/").endswith("/v1"):
                text += " (an anthropic base_url is given without /v1, e.g. http://localhost:8080: /v1/messages is added)"
            if is_retryable(status):
                raise TransientError(
                    text, status=status, retry_after=parse_retry_after(dict(exc.response.headers))
                ) from None
            raise PermanentError(text, status=status) from None
        except sdk.APITimeoutError:
            raise TransientError(f"request to {self.server} timed out") from None
        except sdk.APIConnectionError as exc:
            raise TransientError(f"connection to {self.server} failed: {exc}") from None
        except json.JSONDecodeError as exc:  # cast_to=object: the SDK validates nothing
            raise TransientError(f"malformed reply from {self.server}: {exc}") from None
        return _response(reply, request.model, self.server)

    async def aclose(self) -> None:
        await self._client.close()


def message_body(request: ChatRequest) -> dict[str, Any]:
    """The Messages API body of `request` (also a Message Batches request's `params`)."""
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "messages": request.messages,
    }
    if request.system:
        body["system"] = request.system
    # Sampling and other parameters go as JSON fields, so any parameter the API accepts
    # works whatever the SDK version types (temperature, top_p, stop_sequences, tools, …).
    body.update(request.params)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return f"{err.get('type', 'error')}: {err['message']}"[:500]
    return str(getattr(exc, "message", exc))[:500]


def _response(data: Any, requested: str, server: str = "Anthropic") -> ChatResponse:
    """A Messages API reply (JSON) as a `ChatResponse`; a reply of another shape is malformed."""
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise TransientError(f"malformed reply from {server}: no content list in {str(data)[:200]!r}")
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for block in data["content"]:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            tool_calls.append({"id": block.get("id"), "name": block.get("name"), "input": block.get("input")})
    usage = data["usage"] if isinstance(data.get("usage"), dict) else {}
    stop = data.get("stop_reason")
    return ChatResponse(
        text="".join(texts),
        model=data.get("model") or requested,
        tokens_in=usage.get("input_tokens"),
        tokens_out=usage.get("output_tokens"),
        stop_reason=stop,
        truncated=stop == "max_tokens",
        tool_calls=tool_calls or None,
    )
