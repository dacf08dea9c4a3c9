"""OpenAI-compatible chat completions through `httpx` (OpenAI, vLLM, Ollama, llama.cpp).

`base_url` includes the API version, as the OpenAI SDK and these servers document it —
`https://api.openai.com/v1`, `http://localhost:8000/v1` (vLLM), `http://localhost:11434/v1`
(Ollama), `http://localhost:8080/v1` (llama.cpp) — and evalh POSTs to
`{base_url}/chat/completions`. Unset, it is `OPENAI_BASE_URL`, else the OpenAI API. The
key (from `api_key_env`, default `OPENAI_API_KEY`) goes in `Authorization: Bearer`; local
servers that need none accept any value.

`finish_reason == "length"` marks the reply truncated; usage comes from
`usage.prompt_tokens` / `usage.completion_tokens` (null when the server omits them).
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any
from urllib.parse import urlsplit

import httpx

from evalh.providers.base import ChatRequest, ChatResponse, ProviderConfig
from evalh.providers.resilience import (
    PermanentError,
    TransientError,
    is_retryable,
    parse_retry_after,
)
from evalh.providers.transport import sharded_client_kwargs


def resolve_base_url(config: ProviderConfig) -> str:
    url = config.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    return url.rstrip("/")


class OpenAIBackend:
    """One chat-completions call per `send`, on a shared `httpx.AsyncClient` whose
    connections are sharded (`evalh.providers.transport`: constant CPU per request at any
    number in flight)."""

    provider = "openai"

    def __init__(self, config: ProviderConfig, api_key: str) -> None:
        self.base_url = resolve_base_url(config)
        self._url = self.base_url + "/chat/completions"
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(config.timeout_s),
            headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
            **sharded_client_kwargs(httpx),
        )

    def body(self, request: ChatRequest) -> dict[str, Any]:
        messages = list(request.messages)
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        body: dict[str, Any] = {"model": request.model, "messages": messages}
        # Newer OpenAI models take `max_completion_tokens`; local servers take `max_tokens`.
        if "max_completion_tokens" not in request.params:
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        body.update(request.params)
        return body

    async def send(self, request: ChatRequest) -> ChatResponse:
        try:
            resp = await self._client.post(self._url, json=self.body(request))
        except httpx.TimeoutException:
            raise TransientError(f"request to {self._shown()} timed out") from None
        except httpx.TransportError as exc:
            raise TransientError(f"connection to {self._shown()} failed: {type(exc).__name__}: {exc}") from None
        if resp.status_code >= 400:
            text = f"HTTP {resp.status_code} from {self._shown()}: {_error_message(resp)}"
            if resp.status_code == 404 and not urlsplit(self.base_url).path.rstrip("/").endswith("/v1"):
                text += " (base_url usually ends in /v1, e.g. http://localhost:8000/v1)"
            if is_retryable(resp.status_code):
                raise TransientError(
                    text, status=resp.status_code, retry_after=parse_retry_after(dict(resp.headers))
                )
            raise PermanentError(text, status=resp.status_code)
        try:
            data = resp.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise TransientError(
                f"malformed JSON from {self._shown()} (HTTP {resp.status_code}): {resp.text[:200]!r}"
            ) from None
        return _response(data, request.model, self._shown())

    def _shown(self) -> str:
        parts = urlsplit(self.base_url)
        return f"{parts.scheme}://{parts.hostname or ''}{':' + str(parts.port) if parts.port else ''}"

    async def aclose(self) -> None:
        await self._client.aclose()


def _error_message(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return repr(resp.text[:200])
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])[:500]
    if isinstance(err, str):
        return err[:500]
    return repr(resp.text[:200])


def _response(data: Any, requested: str, shown: str) -> ChatResponse:
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        raise TransientError(f"reply from {shown} has no choices[0].message") from None
    tool_calls = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        args: Any = fn.get("arguments")
        if isinstance(args, str):
            with contextlib.suppress(json.JSONDecodeError):  # else kept as the raw string
                args = json.loads(args)
        tool_calls.append({"id": call.get("id"), "name": fn.get("name"), "input": args})
    usage = data.get("usage") or {}
    finish = choice.get("finish_reason")
    content = message.get("content")
    return ChatResponse(
        text=content if isinstance(content, str) else "",
        model=data.get("model") or requested,
        tokens_in=usage.get("prompt_tokens"),
        tokens_out=usage.get("completion_tokens"),
        stop_reason=finish,
        truncated=finish == "length",
        tool_calls=tool_calls or None,
    )
