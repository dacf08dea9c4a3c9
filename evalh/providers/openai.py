"""OpenAI-compatible chat completions through `aiohttp` (OpenAI, vLLM, Ollama, llama.cpp).

`base_url` includes the API version, as the OpenAI SDK and these servers document it —
`https://api.openai.com/v1`, `http://localhost:8000/v1` (vLLM), `http://localhost:11434/v1`
(Ollama), `http://localhost:8080/v1` (llama.cpp) — and evalh POSTs to
`{base_url}/chat/completions` (a query in `base_url`, as some gateways take their key,
stays the query: `…/v1/chat/completions?api_key=…`). Unset, it is `OPENAI_BASE_URL`, else the OpenAI API. The
key (from `api_key_env`, default `OPENAI_API_KEY`) goes in `Authorization: Bearer`; local
servers that need none accept any value.

`finish_reason == "length"` marks the reply truncated; usage comes from
`usage.prompt_tokens` / `usage.completion_tokens` (null when the server omits them).

Why aiohttp and not httpx: its HTTP parser and connection pool are C-accelerated, and a
request costs ~0.3 ms of CPU against httpx's ~1.1-1.6 ms (its pool, even sharded, plus its
request/response models; bench/runner_results.md). At 32-64 requests in flight against a
fast local server, that CPU is what bounds a run's throughput on one event loop. The
anthropic SDK offers the same transport for the same reason (`DefaultAioHttpClient`).
A proxy from the environment (`HTTP(S)_PROXY`, `ALL_PROXY`, `NO_PROXY`) is looked up once
for the base URL, not per request (aiohttp's `trust_env` would spend two thread hops on
every request, for the proxy and for `.netrc`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import ssl
import urllib.request
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from evalh.providers.base import ChatRequest, ChatResponse, ProviderConfig
from evalh.providers.resilience import (
    PermanentError,
    TransientError,
    is_retryable,
    parse_retry_after,
)
from evalh.redact import redact_url

KEY_ENV = "OPENAI_API_KEY"
"""The key's variable when a config names no `api_key_env` (evalh.providers.base.ProviderModule)."""


def make_backend(config: ProviderConfig, api_key: str) -> OpenAIBackend:
    """The provider's client (evalh.providers.base.ProviderModule)."""
    return OpenAIBackend(config, api_key)


def resolve_base_url(config: ProviderConfig) -> str:
    url = config.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    base, query = split_query(url)
    return base.rstrip("/") + (f"?{query}" if query else "")


def split_query(url: str) -> tuple[str, str]:
    """`url` without its query string, and the query string (`""` when none). A base URL's
    query (`http://gateway/v1?api_key=…`, as some gateways take their key) is sent on every
    request after the endpoint's path, never glued before it."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", parts.fragment)), parts.query


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for `url` (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
    lower case too), or None when there is none or `NO_PROXY` covers the host."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    if not proxies or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxies.get(parts.scheme) or proxies.get("all")


def tls_needed(config: Any) -> bool:
    """Whether a client of `config` (a model target's or a judge's provider table) connects
    over TLS: its server (`base_url`, else the provider's variable, else its https:// API) or
    the environment's proxy for it is https://. A plain http:// server — a local model, the
    mock — needs no certificate bundle (loading one takes ~20 ms of every such run)."""
    from evalh.providers.base import BASE_URL_VARIABLES

    url = (getattr(config, "base_url", None)
           or os.environ.get(BASE_URL_VARIABLES.get(getattr(config, "provider", None) or "", ""), "")
           or "https://")
    if url.startswith("mock:"):
        return False
    return _tls(url, env_proxy(url))


def _tls(url: str, proxy: str | None) -> bool:
    return url.lower().startswith("https:") or (proxy or "").lower().startswith("https:")


def ssl_context() -> ssl.SSLContext:
    """Certificates as httpx verified them: `SSL_CERT_FILE` / `SSL_CERT_DIR` when set, else
    certifi's bundle (the same on every machine, whatever its system store holds). One
    context per process and setting (loading the bundle takes ~20 ms): every client shares
    it, and worker processes (`processes = N`) inherit the run's instead of loading it again."""
    return _ssl_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.lru_cache(maxsize=4)
def _ssl_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    if cert_file or cert_dir:
        return ssl.create_default_context()
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def _setup_problem(api_key: str, proxy: str | None) -> str | None:
    """Why no request can be sent with this key and proxy, or None. Found once, reported by
    every `send` as a permanent error (retrying cannot help)."""
    if any(ch in api_key for ch in "\r\n\0"):
        return "the API key contains a line break or NUL character (check the variable's value)"
    if proxy is not None and urlsplit(proxy).scheme not in ("http", "https"):
        return (f"the environment's proxy {redact_url(proxy)} is not an http:// or https:// proxy, "
                "which is all the openai backend speaks (set NO_PROXY for this host to bypass it)")
    return None


class OpenAIBackend:
    """One chat-completions call per `send`, on a shared `aiohttp.ClientSession` (made on
    first use, inside the running event loop, as aiohttp requires)."""

    provider = "openai"

    def __init__(self, config: ProviderConfig, api_key: str) -> None:
        base, self._query = split_query(resolve_base_url(config))
        self.base_url = base.rstrip("/")
        """The server's URL without its query (the query, a gateway's credential, is added
        by `url`)."""
        self._url = self.url("/chat/completions")
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        self._timeout_s = config.timeout_s
        self._proxy = env_proxy(self.base_url)
        self._tls = _tls(self.base_url, self._proxy)
        """Whether the server or its proxy speaks TLS: only then are certifi's certificates
        loaded (a plain http:// server left redirecting to https:// is verified against the
        system's, aiohttp's default)."""
        self._problem = _setup_problem(api_key, self._proxy)
        self._session: Any = None
        parts = urlsplit(self.base_url)
        self._server = f"{parts.scheme}://{parts.hostname or ''}{':' + str(parts.port) if parts.port else ''}"

    def url(self, path: str) -> str:
        """The URL of an endpoint `path` (`/chat/completions`, `/batches`) of this server,
        with the base URL's query parameters, if any, as its query."""
        return self.base_url + path + (f"?{self._query}" if self._query else "")

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

    def _open(self) -> Any:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=self._timeout_s, sock_connect=self._timeout_s)
        # limit=0: no cap of its own; requests in flight are bounded by the endpoint's limits.
        # Cleaning up closed TLS transports works around a CPython bug that newer versions fix
        # (aiohttp warns when it is asked for where it is not needed).
        connector = aiohttp.TCPConnector(
            limit=0, ssl=ssl_context() if self._tls else True,
            enable_cleanup_closed=bool(getattr(aiohttp.connector, "NEEDS_CLEANUP_CLOSED", False)),
        )
        from evalh.providers.eager_body import EagerBodyRequest

        self._session = aiohttp.ClientSession(
            connector=connector, timeout=timeout, headers=self._headers, proxy=self._proxy,
            cookie_jar=aiohttp.DummyCookieJar(),  # an API client keeps no cookies (~0.1 ms each)
            request_class=EagerBodyRequest,  # the body sent with the request, not a loop pass later
        )
        return self._session

    async def send(self, request: ChatRequest) -> ChatResponse:
        import aiohttp

        if self._problem is not None:
            raise PermanentError(f"cannot send to {self._shown()}: {self._problem}")
        session = self._session or self._open()
        try:
            async with session.post(self._url, data=orjson.dumps(self.body(request))) as resp:
                status, raw = resp.status, await resp.read()
                headers = resp.headers
        except TimeoutError:  # aiohttp's timeouts subclass it
            raise TransientError(f"request to {self._shown()} timed out") from None
        except aiohttp.ClientError as exc:
            raise TransientError(f"connection to {self._shown()} failed: {type(exc).__name__}: {exc}") from None
        except ValueError as exc:  # aiohttp refusing to build the request: retrying cannot help
            raise PermanentError(f"request to {self._shown()} could not be sent: {type(exc).__name__}: {exc}") from None
        if status >= 400:
            text = f"HTTP {status} from {self._shown()}: {_error_message(raw)}"
            if status == 404 and not urlsplit(self.base_url).path.rstrip("/").endswith("/v1"):
                text += " (base_url usually ends in /v1, e.g. http://localhost:8000/v1)"
            if is_retryable(status):
                raise TransientError(text, status=status, retry_after=parse_retry_after(dict(headers)))
            raise PermanentError(text, status=status)
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            excerpt = raw[:200].decode("utf-8", "replace")
            raise TransientError(f"malformed JSON from {self._shown()} (HTTP {status}): {excerpt!r}") from None
        return _response(data, request.model, self._shown())

    def _shown(self) -> str:
        """The server as errors name it (`scheme://host:port`, never credentials or path)."""
        return self._server

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _error_message(raw: bytes) -> str:
    excerpt = repr(raw[:200].decode("utf-8", "replace"))
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return excerpt
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])[:500]
    if isinstance(err, str):
        return err[:500]
    return excerpt


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
