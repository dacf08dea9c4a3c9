"""Anthropic Messages API through the official `anthropic` SDK (async client).

One attempt per `send`: the SDK's own retries are off (`max_retries=0`) because
`evalh.providers.resilience` retries every provider the same way. SDK exceptions are
mapped to `TransientError` (429, 5xx, 529 overloaded, timeouts, dropped connections,
malformed replies) or `PermanentError` (400, 401, 403, 404, …).

The base URL is the config's `base_url`, else `ANTHROPIC_BASE_URL`, else the SDK default
(`https://api.anthropic.com`; no `/v1`: the SDK adds it). The key is read from the
environment variable the config names (`api_key_env`, default `ANTHROPIC_API_KEY`).
"""

from __future__ import annotations

import json
import os
from typing import Any

from evalh.providers.base import ChatRequest, ChatResponse, ProviderConfig
from evalh.providers.resilience import (
    PermanentError,
    TransientError,
    is_retryable,
    parse_retry_after,
)


def resolve_base_url(config: ProviderConfig) -> str:
    return config.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"


class AnthropicBackend:
    """One Messages API call per `send`, on a shared `AsyncAnthropic` client."""

    provider = "anthropic"

    def __init__(self, config: ProviderConfig, api_key: str) -> None:
        try:
            import anthropic
        except ImportError:  # pragma: no cover - a dependency of evalh
            raise PermanentError("the `anthropic` package is not installed: pip install anthropic") from None
        self._sdk = anthropic
        self.base_url = resolve_base_url(config)
        # The SDK's aiohttp transport (the `anthropic[aiohttp]` extra, `DefaultAioHttpClient`):
        # ~1.6 ms of CPU per request against ~2.7-3 ms with its default httpx2 pool, which is
        # what bounds throughput at 32-64 requests in flight (bench/runner_results.md).
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=self.base_url, max_retries=0, timeout=config.timeout_s,
            http_client=anthropic.DefaultAioHttpClient(timeout=config.timeout_s),
        )

    async def send(self, request: ChatRequest) -> ChatResponse:
        sdk = self._sdk
        kwargs: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": request.messages,
        }
        if request.system:
            kwargs["system"] = request.system
        # Sampling and other parameters go as JSON fields, so any parameter the API accepts
        # works whatever the SDK version types (temperature, top_p, stop_sequences, tools, …).
        extra = dict(request.params)
        if request.temperature is not None:
            extra["temperature"] = request.temperature
        if extra:
            kwargs["extra_body"] = extra
        try:
            message = await self._client.messages.create(**kwargs)
        except sdk.APIStatusError as exc:
            status = exc.status_code
            text = f"HTTP {status} from Anthropic: {_error_message(exc)}"
            if is_retryable(status):
                raise TransientError(
                    text, status=status, retry_after=parse_retry_after(dict(exc.response.headers))
                ) from None
            raise PermanentError(text, status=status) from None
        except sdk.APITimeoutError:
            raise TransientError("Anthropic request timed out") from None
        except sdk.APIConnectionError as exc:
            raise TransientError(f"connection to Anthropic failed: {exc}") from None
        except (json.JSONDecodeError, sdk.APIResponseValidationError) as exc:
            raise TransientError(f"malformed reply from Anthropic: {exc}") from None
        return _response(message, request.model)

    async def aclose(self) -> None:
        await self._client.close()


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return f"{err.get('type', 'error')}: {err['message']}"[:500]
    return str(getattr(exc, "message", exc))[:500]


def _response(message: Any, requested: str) -> ChatResponse:
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for block in message.content or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "tool_use":
            tool_calls.append({"id": block.id, "name": block.name, "input": block.input})
    usage = getattr(message, "usage", None)
    return ChatResponse(
        text="".join(texts),
        model=getattr(message, "model", None) or requested,
        tokens_in=getattr(usage, "input_tokens", None),
        tokens_out=getattr(usage, "output_tokens", None),
        stop_reason=message.stop_reason,
        truncated=message.stop_reason == "max_tokens",
        tool_calls=tool_calls or None,
    )
