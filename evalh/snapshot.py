"""The config snapshot written into a run document: safe by construction.

Only fields a config model names in its `SNAPSHOT` allowlist are copied; everything else —
keys, headers, tokens, anything added later without thought — stays out, and what is copied
goes through `evalh.redact` (URL credentials, credential values in JSON templates, secret
keys of free-form tables).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from evalh.redact import REDACTED, is_secret_key, redact_json_text, redact_url, redact_urls


def _value(v: Any) -> Any:
    if isinstance(v, BaseModel):
        return snapshot(v)
    if isinstance(v, dict):  # free-form tables (params): a secret-looking key keeps its name only
        return {str(k): REDACTED if is_secret_key(str(k)) else _value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_value(x) for x in v]
    if isinstance(v, str):  # a URL, or one inside free text (a description)
        return redact_urls(v)
    if isinstance(v, str | int | float | bool) or v is None:
        return v
    return str(v)


def snapshot(model: BaseModel) -> dict[str, Any]:
    """The allowlisted fields of a config model, recursively. Fields a model names in
    `SNAPSHOT_JSON_TEXT` hold JSON templates: their credential-looking values are redacted."""
    allowed: frozenset[str] = getattr(type(model), "SNAPSHOT", frozenset())
    json_text: frozenset[str] = getattr(type(model), "SNAPSHOT_JSON_TEXT", frozenset())
    if_set: frozenset[str] = getattr(type(model), "SNAPSHOT_IF_SET", frozenset())
    out = {}
    for name in type(model).model_fields:
        if name in allowed:
            value = getattr(model, name)
            if value is None and name in if_set:  # a later key, unset: the snapshot reads as before it
                continue
            if name in json_text and isinstance(value, str):
                value = redact_json_text(value)
            elif name == "base_url" and isinstance(value, str):  # its query carries a gateway's key
                value = redact_url(value, every_query=True)
            out[name] = _value(value)
    return out
