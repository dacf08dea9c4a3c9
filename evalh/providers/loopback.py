"""`base_url = "mock:PATH"`: a model target or judge served by evalh's loopback mock
provider, started in-process for the run from the script at PATH (relative to the project
root). Lets a suite run end to end with the real SDK and no key, offline (the shipped
`scenarios_model` suite does). No key variable is needed; the mock accepts any.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalh.services import RunServices

MOCK_SCHEME = "mock:"
MOCK_KEY = "evalh-mock-key"


def is_mock_url(url: str | None) -> bool:
    return bool(url) and url.startswith(MOCK_SCHEME)  # type: ignore[union-attr]


def mock_base_url(url: str, provider: str, services: RunServices) -> str:
    """The live base URL of the run's mock server for `url` (started on first use)."""
    providers: dict[str, Any] = services.providers
    mock = providers.get(url)
    if mock is None:
        from evalh.errors import ConfigError
        from evalh.mock.mock_provider import MockProvider
        from evalh.mock.script import Script

        path = url[len(MOCK_SCHEME):]
        full = services.root / path
        if not full.is_file():
            raise ConfigError(f"base_url {url!r}: no mock script at {path}")
        mock = providers[url] = MockProvider(Script.load(full)).start()
    return str(mock.openai_base_url if provider == "openai" else mock.base_url)


def script_digest(url: str, services: RunServices) -> str:
    """SHA-256 (first 16 hex) of the mock script's bytes: part of the cache key."""
    import hashlib

    return hashlib.sha256((services.root / url[len(MOCK_SCHEME):]).read_bytes()).hexdigest()[:16]
