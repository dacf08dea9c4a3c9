"""Model providers behind one interface: Anthropic (official SDK) and OpenAI-compatible
servers (httpx). Model targets and judges both go through `ProviderClient.chat`, so retries,
rate limits, the response cache and the run's budget apply to every model call.

    from evalh.providers import ChatRequest, get_provider

    client = get_provider(provider_config, services)   # memoized per run
    reply = await client.chat(ChatRequest(model=..., messages=[...]))

SDKs are imported when a client is first made, never when this package is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalh.providers.base import (
    ChatRequest,
    ChatResponse,
    ProviderClient,
    ProviderConfig,
    ProviderError,
)

if TYPE_CHECKING:
    from evalh.providers.clients import close_providers, get_provider

__all__ = [
    "ChatRequest",
    "ChatResponse",
    "ProviderClient",
    "ProviderConfig",
    "ProviderError",
    "close_providers",
    "get_provider",
]


def __getattr__(name: str) -> Any:
    """`get_provider` and `close_providers` are imported when first asked for: a config that
    only names a provider (`evalh.providers.base`, reached by every `evalh.toml` load)
    no longer imports the clients (asyncio, the HTTP and SSL machinery) with it."""
    if name in ("close_providers", "get_provider"):
        from evalh.providers import clients

        return getattr(clients, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
