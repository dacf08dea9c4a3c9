"""A content-addressed response cache on disk.

The key is the SHA-256 of the canonical JSON of everything that changes a reply: the
provider, the endpoint (host, port and path of the base URL; never a key), the model id,
every generation parameter (max_tokens, temperature, `params`), the system prompt and the
rendered messages, the attempt index (so `--repeats N` gives N replies; a suite with
`cache_repeats = true` shares one), the caller's `cache_salt` (judges put their rubric
digest there) and the identity of the credential the request is sent with: a domain-
separated SHA-256 of the key (`credential_id`), never the key, so suites calling one
endpoint with different keys (accounts, projects, permissions) never serve each other's
replies. One JSON file per key under `<dir>/<first 2 hex>/<key>.json`, written atomically.
Errors and truncated replies are never stored.

A stored reply is scrubbed like every file evalh writes (`evalh.redact.scrub_secrets`):
a provider or proxy that echoes the request headers or the key in its reply leaves
`[REDACTED]` in the cache, never the value; a hit returns the scrubbed text.

A hit comes back with `cached=True`, cost 0 and latency None (so it stays out of latency
figures); its token counts are those of the reply it repeats. Identical requests in flight
at the same time are made once: the others wait and are served from the cache.

The default directory is `.evalh/cache/` under the project root; `EVALH_CACHE_DIR`
overrides it; `evalh run --no-cache` disables the cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from evalh.models import sha256_of
from evalh.providers.base import ChatRequest, ChatResponse

CACHE_DIR_ENV = "EVALH_CACHE_DIR"
DEFAULT_CACHE_DIR = ".evalh/cache"
_FORMAT = "evalh.cache/1"


def default_cache_dir(root: Path) -> Path:
    env = os.environ.get(CACHE_DIR_ENV)
    return Path(env) if env else root / DEFAULT_CACHE_DIR


def endpoint_of(base_url: str | None) -> str:
    """host[:port][/path] of a base URL: what identifies the server, never credentials."""
    if not base_url:
        return ""
    if base_url.startswith("mock:"):
        return base_url  # a mock script (and its digest) names the endpoint
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{host}{port}{parts.path.rstrip('/')}"


def credential_id(api_key: str) -> str:
    """What identifies a credential in a cache key: a SHA-256 of the key under a domain
    prefix (so the digest is of no use anywhere else), never the key itself."""
    return hashlib.sha256(b"evalh.cache.credential/1\0" + api_key.encode()).hexdigest()


def cache_key(
    provider: str, base_url: str | None, request: ChatRequest, *, credential: str = ""
) -> str:
    """The key of a request; `credential` is the `credential_id` of the key it is sent with."""
    return sha256_of(
        {
            "v": 2,
            "provider": provider,
            "endpoint": endpoint_of(base_url),
            "credential": credential,
            "model": request.model,
            "system": request.system,
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "params": request.params,
            "attempt": request.attempt,
            "salt": request.cache_salt,
        }
    )


class ResponseCache:
    """Replies by key, on disk. Safe to share by every client of one run."""

    def __init__(self, directory: Path, *, shared_repeats: Iterable[str] = ()) -> None:
        self.directory = Path(directory)
        self.shared_repeats = frozenset(shared_repeats)
        """Suites whose repeats share one cached reply (`cache_repeats = true`)."""
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.write_errors = 0
        self._inflight: dict[str, asyncio.Future[None]] = {}
        self._secrets: list[str] | None = None  # the environment's, read at the first write

    def attempt_for(self, suite: str, attempt: int) -> int:
        """The attempt index that goes into the key for a call of `suite`."""
        return 0 if suite in self.shared_repeats else attempt

    def path_for(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> ChatResponse | None:
        try:
            data = orjson.loads(self.path_for(key).read_bytes())
            r = data["response"]
            if data.get("format") != _FORMAT:
                return None
            return ChatResponse(
                text=r["text"], model=r["model"], tokens_in=r.get("tokens_in"),
                tokens_out=r.get("tokens_out"), stop_reason=r.get("stop_reason"),
                tool_calls=r.get("tool_calls"), cached=True, latency_ms=None, cost_usd=0.0,
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent or unreadable: a miss, the reply is fetched again

    def put(self, key: str, response: ChatResponse) -> bool:
        """Store a reply unless it is truncated (errors never reach here). False when not stored."""
        if response.truncated or response.cached:
            return False
        from evalh.atomic import atomic_write_bytes
        from evalh.redact import scrub_secrets, secret_env_values

        record: dict[str, Any] = {
            "format": _FORMAT,
            "response": {
                "text": response.text, "model": response.model,
                "tokens_in": response.tokens_in, "tokens_out": response.tokens_out,
                "stop_reason": response.stop_reason, "tool_calls": response.tool_calls,
            },
        }
        try:
            if self._secrets is None:
                self._secrets = secret_env_values()
            data = scrub_secrets(orjson.dumps(record), env=self._secrets)
            atomic_write_bytes(self.path_for(key), data, env=self._secrets)
        except OSError:
            self.write_errors += 1  # a read-only cache must not fail the run
            return False
        self.writes += 1
        return True

    async def fetch(self, key: str, call: Callable[[], Awaitable[ChatResponse]]) -> ChatResponse:
        """The cached reply for `key`, or `call()`'s reply (stored when cacheable).

        Concurrent fetches of one key make one call; the others then read the cache, and
        make their own call only when the first one failed or was not cacheable.
        """
        hit = self.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        leader = self._inflight.get(key)
        if leader is not None:
            await asyncio.shield(leader)
            hit = self.get(key)
            if hit is not None:
                self.hits += 1
                return hit
            self.misses += 1
            return await call()
        self.misses += 1
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._inflight[key] = done
        try:
            response = await call()
            self.put(key, response)
            return response
        finally:
            del self._inflight[key]
            done.set_result(None)

    def describe(self) -> dict[str, Any]:
        return {"hits": self.hits, "misses": self.misses, "writes": self.writes,
                "write_errors": self.write_errors}
