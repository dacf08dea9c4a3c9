"""`get_provider`: the one way targets and judges reach a model.

A run's providers live in `services.providers`, memoized by config, so every target and
judge that names the same endpoint (provider + base URL) shares one HTTP client and one
`EndpointLimits` (in `services.limits`, recorded in the run). `close_providers` closes them
at the end of the run.

Every call goes through `ManagedClient.chat`: response cache → retries under the
endpoint's limits → cost from the price table → the budget. Budget rule: a request with
`billed_by_runner=True` (model targets) is charged by the runner per result; any other
request (judges) is charged here, once, when the reply arrives (never for cache hits).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from evalh.models import sha256_of
from evalh.providers.base import (
    Backend,
    ChatRequest,
    ChatResponse,
    ProviderConfig,
    ProviderError,
    ProviderModule,
)
from evalh.providers.prices import cost_usd
from evalh.providers.resilience import EndpointLimits, RetryPolicy, call_with_retries
from evalh.redact import redact_url, register_url_secrets

if TYPE_CHECKING:
    from evalh.services import RunServices


def _estimate_tokens(request: ChatRequest) -> int:
    """Tokens a request may use, for tokens-per-minute limits: ~4 characters a token for
    the prompt, plus the whole `max_tokens` (the provider reserves it the same way)."""
    chars = len(request.system or "") + sum(len(str(m.get("content", ""))) for m in request.messages)
    return chars // 4 + request.max_tokens


class ManagedClient:
    """A `ProviderClient`: one backend wrapped in cache, retries, limits, prices, budget."""

    def __init__(
        self,
        config: ProviderConfig,
        backend: Backend,
        limits: EndpointLimits,
        services: RunServices,
        cache_url: str | None = None,
        credential: str = "",
    ) -> None:
        self.config = config
        self.cache_url = cache_url or backend.base_url
        """The base URL the cache key names (a mock's script, not its port)."""
        self.credential = credential
        """The `credential_id` of the key requests are sent with (part of the cache key)."""
        self.backend = backend
        self.limits = limits
        self.services = services
        self.policy = RetryPolicy(config.max_retries, config.backoff_base_s, config.backoff_max_s)
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
        """How retries wait (tests swap it and `clock` to observe the waits without spending them)."""
        self.clock: Callable[[], float] = time.monotonic
        """The monotonic clock of a retry's deadline (re-slept until it has passed)."""
        self.batch: Any = None
        """With `batch = true`, the `evalh.providers.batch.BatchSender` that sends its
        uncached requests in batches instead of one by one."""

    @property
    def endpoint(self) -> str:
        return self.limits.name

    async def chat(self, request: ChatRequest) -> ChatResponse:
        cache = self.services.cache
        if cache is None:
            return await self._call(request)
        return await cache.fetch(self.cache_key(request), lambda: self._call(request))

    def cache_key(self, request: ChatRequest) -> str:
        """The response-cache key of `request` sent through this client."""
        from evalh.providers.cache import cache_key

        return cache_key(self.backend.provider, self.cache_url, request, credential=self.credential)

    async def _call(self, request: ChatRequest) -> ChatResponse:
        if self.batch is not None:
            response: ChatResponse = await self.batch.call(request)
            return response
        from evalh.providers.waits import case_clock

        t0 = time.perf_counter()
        with case_clock() as clock:  # the request's own time: rate-limit waits left out
            response = await call_with_retries(
                lambda: self.backend.send(request),
                policy=self.policy,
                limits=self.limits,
                what=f"{self.backend.provider} {request.model}",
                tokens=_estimate_tokens(request),
                sleep=self.sleep,
                clock=self.clock,
            )
        response.latency_ms = round((time.perf_counter() - t0 - clock.waited_s) * 1000, 3)
        response.cost_usd = cost_usd(
            self.services.prices, response.model, response.tokens_in, response.tokens_out
        )
        if response.cost_usd is None and response.model != request.model:
            response.cost_usd = cost_usd(
                self.services.prices, request.model, response.tokens_in, response.tokens_out
            )
        if not request.billed_by_runner:
            self.services.budget.charge(
                cost_usd=response.cost_usd, tokens_in=response.tokens_in,
                tokens_out=response.tokens_out,
            )
        return response

    async def aclose(self) -> None:
        """Closing is the run's job (`close_providers`): clients are shared."""


def api_key_for(config: ProviderConfig) -> str:
    """The key from the environment variable the config names; ProviderError if unset."""
    from evalh.providers.loopback import MOCK_KEY, is_mock_url
    from evalh.redact import register_secret

    name = config.key_env()
    key = os.environ.get(name)
    if not key and is_mock_url(config.base_url):
        return MOCK_KEY
    if not key:
        raise ProviderError(f"{config.provider} {config.model}: set {name} in the environment",
                            retryable=False)
    register_secret(key)  # `api_key_env` may name a variable that does not look secret
    return key


def _provider_module(config: ProviderConfig) -> ProviderModule:
    """The module of `config.provider` in `evalh.registry.PROVIDERS` (built-in or plugin)."""
    from evalh import registry
    from evalh.imports import ImportFailure

    try:
        module: ProviderModule = registry.provider_module(config.provider)
    except ImportFailure as exc:
        raise ProviderError(str(exc), retryable=False) from None
    return module


def _make_backend(config: ProviderConfig, base_url: str, key: str) -> Backend:
    live = config.model_copy(update={"base_url": base_url})
    return _provider_module(config).make_backend(live, key)


def _resolved_base_url(config: ProviderConfig, services: RunServices) -> str:
    from evalh.providers.loopback import is_mock_url, mock_base_url

    if config.base_url and is_mock_url(config.base_url):
        return mock_base_url(config.base_url, config.provider, services)
    return _provider_module(config).resolve_base_url(config)


def limits_name(provider: str, base_url: str) -> str:
    """`provider@base_url` with any credentials in the URL removed."""
    # a model's base_url has a query only to carry a gateway's credential, whatever its name
    return f"{provider}@{redact_url(base_url.rstrip('/'), every_query=provider != 'http')}"


def get_provider(config: ProviderConfig, services: RunServices) -> ManagedClient:
    """The run's client for `config` (created on first use, then memoized in
    `services.providers`). Raises `ProviderError` when the key variable is unset."""
    providers: dict[str, Any] = services.providers
    memo = "client:" + sha256_of(config.model_dump(mode="json"))
    client = providers.get(memo)
    if client is not None:
        return client
    base_url = _resolved_base_url(config, services)
    # OPENAI_BASE_URL / ANTHROPIC_BASE_URL stand in for an unset base_url: its query is a
    # gateway's credential as much as a configured one (evalh.redact), before the first call
    register_url_secrets(base_url, every_query=True)
    # A mock endpoint is named by its script, not its port of the day, so the cache and
    # the recorded limits stay stable from run to run.
    stable_url = config.base_url if config.base_url and config.base_url.startswith("mock:") else base_url
    name = limits_name(config.provider, stable_url)
    backend_memo = "backend:" + sha256_of(
        [config.provider, base_url, config.key_env(), config.timeout_s]
    )
    key = api_key_for(config)
    backend = providers.get(backend_memo)
    if backend is None:
        backend = providers[backend_memo] = _make_backend(config, base_url, key)
    limits = services.limits.get(name)
    if limits is None:
        limits = services.limits[name] = EndpointLimits(
            name, config.max_in_flight, config.rpm, config.tpm, max_wait_s=services.max_retry_wait_s
        )
    cache_url = stable_url
    if stable_url != base_url:  # a mock: an edited script must not be served stale replies
        from evalh.providers.loopback import script_digest

        cache_url = f"{stable_url}#{script_digest(stable_url, services)}"
    from evalh.providers.cache import credential_id

    # a base URL's query carries a gateway's credential: replies under another are not shared
    query = urlsplit(base_url).query
    client = providers[memo] = ManagedClient(
        config, backend, limits, services, cache_url, credential_id(f"{key}\0{query}" if query else key)
    )
    if config.batch:  # through the provider's batch API (docs/batch.md)
        from evalh.providers.batch import BatchSender

        client.batch = BatchSender(client)
    return client


async def close_providers(services: RunServices) -> None:
    """Close every HTTP client the run opened (called once, at the end of the run)."""
    providers: dict[str, Any] = getattr(services, "providers", {})
    backends = [v for k, v in providers.items() if k.startswith("backend:")]
    mocks = [v for k, v in providers.items() if k.startswith("mock:")]
    providers.clear()
    for backend in backends:
        with contextlib.suppress(Exception):  # closing must never hide the run's outcome
            await backend.aclose()
    for mock in mocks:
        mock.stop()
