"""Dotted-path lookups into outputs and expected values (`field = "a.b.0"`), shared by the
scorers, classification and sweeps."""

from __future__ import annotations

from typing import Any

import orjson

MISSING = object()
"""What `pick` returns for a path that does not exist (None is a value)."""


def pick(value: Any, field: str | None) -> Any:
    """`value[field]` for a dotted path (`a.b.0`), or `value` itself when field is None.

    A string output that holds JSON is parsed first, so `field` works on model replies.
    Returns `MISSING` when the path does not exist.
    """
    if field is None:
        return value
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return MISSING
    for part in field.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value


def as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def short(value: Any, limit: int = 80) -> str:
    text = as_text(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
