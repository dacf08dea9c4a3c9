"""The config snapshot written into a run document: safe by construction.

Only fields a config model names in its `SNAPSHOT` allowlist are copied; everything else —
keys, headers, tokens, anything added later without thought — stays out. URLs keep their
host and path but lose credentials: user:password and secret-looking query parameters are
replaced by a marker. As a last line of defence, `scrub_secrets` removes the values of
secret-looking environment variables from any text about to be persisted.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
from pydantic import BaseModel

REDACTED = "[REDACTED]"
_SECRET_NAME = re.compile(r"key|token|secret|passw|pwd|credential|auth|sig|session", re.I)
# Keys of free-form tables that name a credential ("max_tokens" is a setting, "token" is not).
_SECRET_KEY = re.compile(
    r"api[_-]?key|^key$|secret|passw|pwd|credential|auth|signature|session|(^|[_-])token$", re.I
)
# `"key": value` in a JSON template (an HTTP target's body): a credential-looking key's
# literal value, string or number, is redacted; a `${VAR}` reference is kept (it names a
# secret, it does not hold one). Stricter than _SECRET_KEY: "author" is not "auth".
_JSON_PAIR = re.compile(r'"([^"\\]{1,64})"(\s*:\s*)("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)')
_CREDENTIAL_KEY = re.compile(
    r"api[_-]?key|secret|passw|pwd|credential|private[_-]?key|access[_-]?key|signature"
    r"|(^|[_-])(auth|authorization|key|token|session)$|(?<=[a-z])(Key|Token|Secret|Password)$",
)
_ENV_REF_ONLY = re.compile(r'"\$\{[A-Za-z_][A-Za-z0-9_]*\}"')
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
_URL_IN_TEXT = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>]+", re.I)


def redact_url(url: str) -> str:
    """Drop credentials from a URL: userinfo and secret-looking query values."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, REDACTED if _SECRET_NAME.search(k) else v) for k, v in pairs], safe="[]"
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _value(v: Any) -> Any:
    if isinstance(v, BaseModel):
        return snapshot(v)
    if isinstance(v, dict):  # free-form tables (params): a secret-looking key keeps its name only
        return {str(k): REDACTED if _SECRET_KEY.search(str(k)) else _value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_value(x) for x in v]
    if isinstance(v, str) and _URL.match(v):
        return redact_url(v)
    if isinstance(v, str) and "://" in v:  # a URL inside free text (a description)
        return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), v)
    if isinstance(v, str | int | float | bool) or v is None:
        return v
    return str(v)


def redact_json_text(text: str) -> str:
    """A JSON template with the literal values of credential-looking keys redacted."""

    def pair(m: re.Match[str]) -> str:
        key, sep, value = m.groups()
        if (_CREDENTIAL_KEY.search(key) or _CREDENTIAL_KEY.search(key.lower())) and not _ENV_REF_ONLY.fullmatch(value):
            return f'"{key}"{sep}"{REDACTED}"'
        return m.group(0)

    return _JSON_PAIR.sub(pair, text)


def snapshot(model: BaseModel) -> dict[str, Any]:
    """The allowlisted fields of a config model, recursively. Fields a model names in
    `SNAPSHOT_JSON_TEXT` hold JSON templates: their credential-looking values are redacted."""
    allowed: frozenset[str] = getattr(type(model), "SNAPSHOT", frozenset())
    json_text: frozenset[str] = getattr(type(model), "SNAPSHOT_JSON_TEXT", frozenset())
    out = {}
    for name in type(model).model_fields:
        if name in allowed:
            value = getattr(model, name)
            if name in json_text and isinstance(value, str):
                value = redact_json_text(value)
            out[name] = _value(value)
    return out


_REGISTERED: set[str] = set()


def register_secret(value: str | None) -> None:
    """Name a secret this process holds that is not in a secret-looking environment variable
    (a header value written in evalh.toml, a key read from a file), so it is scrubbed too."""
    if value and _looks_secret(value, 8):  # "passed" or "eval" would corrupt the document
        _REGISTERED.add(value)


def _looks_secret(value: str, min_len: int) -> bool:
    # A plain lowercase word ("complete", "disabled") in a variable named *_AUTH_MODE is a
    # setting, not a secret; replacing it would corrupt enum fields of the document.
    return len(value) >= min_len and not (value.isalpha() and value.islower())


def secret_env_values(min_len: int = 8) -> list[str]:
    """Secrets to scrub: values of environment variables whose names look secret (API keys,
    tokens, passwords) and every value given to `register_secret`; longest first."""
    found = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and _looks_secret(v, min_len)}
    return sorted(found | _REGISTERED, key=len, reverse=True)


def scrub_secrets(
    data: bytes, extra: list[str] | None = None, *, env: list[str] | None = None
) -> bytes:
    """Replace every occurrence of a secret value (as it appears inside JSON) by the marker.

    `env` is a precomputed `secret_env_values()` (a journal writing thousands of lines reads
    the environment once); by default the environment is read on each call.
    """
    env_values = secret_env_values() if env is None else env
    for secret in [*(extra or []), *env_values]:
        encoded = orjson.dumps(secret)[1:-1]
        if encoded and encoded in data:
            data = data.replace(encoded, REDACTED.encode())
    return data


def scrub_text(text: str, *, env: list[str] | None = None) -> str:
    """`scrub_secrets` for text shown on a terminal: CI keeps that output as a log."""
    for secret in secret_env_values() if env is None else env:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text
