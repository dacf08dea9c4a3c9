"""The provider interface shared by model targets and judges.

A `ProviderClient` turns a `ChatRequest` into a `ChatResponse`. Implementations own the
wire format; the shared machinery (retry with backoff honouring retry-after, adaptive
in-flight limits, requests/tokens-per-minute limits, the content-addressed cache, budget
charging) wraps them once. SDKs are imported inside the factories, never at module import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

BATCH_PROVIDERS = frozenset({"anthropic", "openai"})
"""The providers whose batch APIs evalh speaks (`batch = true`; evalh.providers.batch)."""
BASE_URL_VARIABLES = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}
"""The variable each provider reads when a config names no `base_url`."""


def url_credentials_problem(url: str | None) -> str | None:
    """Why a provider URL cannot be used, or None. The key goes in its own header
    (x-api-key / Authorization: Bearer), so a user:password@ would have to be a second
    Authorization header: aiohttp refuses to build the request and the SDK reports a bare
    "Connection error." on every case."""
    if url and not url.startswith("mock:") and "@" in urlsplit(url).netloc:
        return ("credentials in the URL (user:password@) cannot be sent with the API key: "
                "remove them, and put the key in the variable `api_key_env` names")
    return None


def base_url_variable_problems(tree: Any, where: str) -> list[str]:
    """For every provider in a config tree (a suite's `model_dump()`) that names no
    `base_url`, the problem with the variable it falls back to, as `where: VARIABLE: …`."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            provider = node.get("provider") or node.get("kind")
            variable = BASE_URL_VARIABLES.get(provider) if isinstance(provider, str) else None
            if variable and "model" in node and not node.get("base_url"):
                problem = url_credentials_problem(os.environ.get(variable))
                line = f"{where}: {variable}: {problem}"
                if problem and line not in found:
                    found.append(line)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tree)
    return found


class ProviderConfig(BaseModel):
    """How to reach a model. `SNAPSHOT` lists what may be written into a run document:
    never the key itself (only the *name* of the variable holding it), never headers."""

    model_config = ConfigDict(extra="forbid")
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset(
        {"provider", "model", "base_url", "api_key_env", "max_tokens", "temperature",
         "timeout_s", "max_retries", "max_in_flight", "rpm", "tpm", "params",
         "backoff_base_s", "backoff_max_s", "batch"}
    )
    SNAPSHOT_IF_SET: ClassVar[frozenset[str]] = frozenset({"batch"})

    provider: str
    """`anthropic` (the official SDK), `openai` (any OpenAI-compatible server, via aiohttp),
    or a provider an installed plugin registers (`evalh plugins` lists them)."""
    model: str
    """The model id sent to the provider; also the key of its price."""
    base_url: str | None = None
    """Server to call. Anthropic: without `/v1` (default `ANTHROPIC_BASE_URL`, else the API).
    OpenAI-compatible: with `/v1`, e.g. `http://localhost:8000/v1` (default
    `OPENAI_BASE_URL`, else the OpenAI API). `mock:PATH` serves replies from a mock script."""
    api_key_env: str | None = None
    """Name of the environment variable holding the key (default ANTHROPIC_API_KEY / OPENAI_API_KEY)."""
    max_tokens: int = Field(1024, ge=1)
    """Output limit; a reply that reaches it is marked `truncated` (and never cached)."""
    temperature: float | None = None
    """Sampling temperature; unset leaves the provider's default."""
    timeout_s: float = Field(60.0, gt=0)
    """Per attempt; a timed-out attempt is retried."""
    max_retries: int = Field(4, ge=0)
    """Retries after the first attempt on 429, 5xx, 529, timeouts, dropped connections."""
    max_in_flight: int = Field(16, ge=1)
    """Ceiling of requests in flight to this endpoint; halved on 429, regained one by one."""
    rpm: int | None = Field(None, ge=1)
    """Requests per minute (optional)."""
    tpm: int | None = Field(None, ge=1)
    """Tokens per minute (optional)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Other generation parameters passed through (top_p, stop, …); part of the cache key."""
    backoff_base_s: float = Field(0.5, ge=0)
    """First retry waits up to this long (full jitter), doubling per attempt."""
    backoff_max_s: float = Field(30.0, ge=0)
    """Cap of one backoff wait (a server's `retry-after` is honoured even when longer)."""
    batch: bool | None = None
    """`true`: requests go through the provider's batch API (Anthropic Message Batches,
    OpenAI Batch API) at the batch price (50 % of list), answered within 24 h instead of at
    once (docs/batch.md)."""
    batch_poll_s: float = Field(10.0, gt=0)
    """With `batch`: the first wait before asking whether a batch has ended; doubled after
    each ask, up to `batch_poll_max_s`."""
    batch_poll_max_s: float = Field(300.0, gt=0)
    """With `batch`: the longest wait between two asks."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # every provider table records `batch` in the run's snapshot, when it is set
        cls.SNAPSHOT_IF_SET = frozenset(getattr(cls, "SNAPSHOT_IF_SET", frozenset())) | {"batch"}

    @field_validator("provider")
    @classmethod
    def _registered(cls, name: str) -> str:
        from evalh import registry

        if name not in registry.providers():
            known = ", ".join(sorted(registry.providers()))
            raise ValueError(f"unknown provider {name!r} (known: {known})")
        return name

    @field_validator("base_url")
    @classmethod
    def _no_credentials_in_url(cls, url: str | None) -> str | None:
        problem = url_credentials_problem(url)
        if problem:
            raise ValueError(problem)
        return url

    @model_validator(mode="after")
    def _batch_provider(self) -> ProviderConfig:
        if self.batch and self.provider not in BATCH_PROVIDERS:
            raise ValueError(f"batch = true: provider {self.provider!r} has no batch API evalh speaks "
                             f"(only {', '.join(sorted(BATCH_PROVIDERS))})")
        return self

    def key_env(self) -> str:
        if self.api_key_env:
            return self.api_key_env
        from evalh import registry

        module: ProviderModule = registry.provider_module(self.provider)
        return module.KEY_ENV


class ProviderModule(Protocol):
    """What a provider's module defines: the built-in `evalh.providers.anthropic` and
    `evalh.providers.openai`, and a plugin's module named by an `evalh.providers` entry point
    (docs/plugins.md). Everything above the wire — cache, retries, limits, prices, budget —
    is evalh's (`evalh.providers.clients.get_provider`)."""

    KEY_ENV: str
    """The environment variable holding the key when a config names no `api_key_env`."""

    def resolve_base_url(self, config: ProviderConfig) -> str:
        """The server a config calls (its `base_url`, else the provider's default)."""
        ...

    def make_backend(self, config: ProviderConfig, api_key: str) -> Backend:
        """One client for `config.base_url` (already resolved): its `send` makes one attempt
        and raises `TransientError` (retried) or `PermanentError`."""
        ...


class Backend(Protocol):
    """The wire client a provider module makes; shared by every request to its endpoint."""

    provider: str
    base_url: str

    async def send(self, request: ChatRequest) -> ChatResponse: ...

    async def aclose(self) -> None: ...


@dataclass
class ChatRequest:
    model: str
    messages: list[dict[str, Any]]
    """[{"role": "user"|"assistant", "content": str}, …]"""
    system: str | None = None
    max_tokens: int = 1024
    temperature: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    attempt: int = 0
    """Repeat index; part of the cache key so repeats do not collapse onto one reply."""
    cache_salt: str = ""
    """Anything else that changes the meaning of the reply (for judges, the rubric digest)."""
    billed_by_runner: bool = False
    """True for calls made by a target: the runner charges the run's budget per result, so
    the provider wrapper must not. False (judges, anything else): the wrapper charges the
    reply's tokens and cost to `services.budget` itself."""


@dataclass
class ChatResponse:
    text: str
    model: str
    tokens_in: int | None = None
    tokens_out: int | None = None
    stop_reason: str | None = None
    truncated: bool = False
    """The reply stopped at max_tokens."""
    tool_calls: list[dict[str, Any]] | None = None
    cached: bool = False
    latency_ms: float | None = None
    cost_usd: float | None = None
    """From the run's price table; None for an unpriced model, 0 when served from cache."""


class ProviderClient(Protocol):
    config: ProviderConfig

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """One reply, after retries. Raises `ProviderError` when it still fails."""
        ...

    async def aclose(self) -> None: ...


class ProviderError(Exception):
    """A provider call that failed after its retries (status, last error, attempts)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        attempts: int = 1,
        retryable: bool = True,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts
        self.retryable = retryable
        """False when the failure was final at once (bad request, bad key), not exhausted retries."""
