"""The JSON evalh writes, in one place: a document (indented, closed by a newline) for
`--json` output and files, and a JSONL line (compact, closed by a newline) for journals."""

from __future__ import annotations

from typing import Any

import orjson


def document_bytes(value: Any) -> bytes:
    """`value` as an indented JSON document ending in a newline."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"


def document_text(value: Any) -> str:
    """`document_bytes` as text (what `--json` prints)."""
    return document_bytes(value).decode()


def jsonl_line(value: Any) -> bytes:
    """`value` as one line of JSONL: compact JSON and a newline."""
    return orjson.dumps(value) + b"\n"
