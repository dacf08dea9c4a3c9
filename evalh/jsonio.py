"""The JSON evalh writes, in one place: documents indented and closed by a newline, for
`--json` output and the files beside the runs (baseline, labels, exported requests); and
JSON Lines, one compact value per line, for the run journal, the ratings store and the
datasets generation freezes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson


def document_bytes(value: Any) -> bytes:
    """`value` as an indented JSON document ending in a newline."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"


def document_text(value: Any) -> str:
    """`document_bytes` as text (what `--json` prints)."""
    return document_bytes(value).decode()


def jsonl_line(value: Any) -> bytes:
    """`value` as one JSON Lines record: compact, closed by a newline."""
    return orjson.dumps(value) + b"\n"


def jsonl_bytes(values: Iterable[Any]) -> bytes:
    """`values` as JSON Lines, one record per line."""
    return b"".join(jsonl_line(v) for v in values)
