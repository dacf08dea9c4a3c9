"""The JSON documents evalh writes, in one place: indented and closed by a newline, for
`--json` output and the files beside the runs (baseline, labels, exported requests). The
one JSONL writer is the run journal's (`store.Journal`)."""

from __future__ import annotations

from typing import Any

import orjson


def document_bytes(value: Any) -> bytes:
    """`value` as an indented JSON document ending in a newline."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"


def document_text(value: Any) -> str:
    """`document_bytes` as text (what `--json` prints)."""
    return document_bytes(value).decode()
