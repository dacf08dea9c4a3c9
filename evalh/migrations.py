"""Small named migrations that bring older run documents up to `evalh.run/1`.

Each migration takes the raw dict of one schema version and returns the next. There is one
schema version so far; this is where the next one will plug in, so old files keep loading.
"""

from __future__ import annotations

from typing import Any

from evalh.errors import RunDocumentError
from evalh.models import RUN_SCHEMA

MIGRATIONS: dict[str, Any] = {}
"""schema → function(raw) -> raw of the next schema."""


def migrate(raw: dict[str, Any], shown: str) -> dict[str, Any]:
    seen = set()
    while raw.get("schema") != RUN_SCHEMA:
        schema = raw.get("schema")
        if schema in seen or schema not in MIGRATIONS:
            raise RunDocumentError(
                f"{shown}: run document schema {schema!r} is not supported by this evalh "
                f"(it reads {RUN_SCHEMA})"
            )
        seen.add(schema)
        raw = MIGRATIONS[schema](raw)
    return raw
