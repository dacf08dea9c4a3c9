"""Reading a judge's reply: the JSON object in it, and what survives a cut at max_tokens.

A judge is asked for one JSON object. Models wrap it in prose or code fences, so
`extract_json` takes the first complete object in the text. When a reply stopped at the
token limit the object is cut short; `salvage_json` keeps every value that was complete
before the cut (closing the open containers), so the items a judge emitted before the cut
are kept and the reply is named `truncated`, never "unparseable output".
"""

from __future__ import annotations

import json
from typing import Any

_DECODER = json.JSONDecoder()


class ReplyInvalid(ValueError):
    """The reply is not what the judge was asked for (no JSON, no rationale, bad verdict).

    The message is shown to the judge when it is asked again, so it is written to it.
    """


def extract_json(text: str) -> dict[str, Any]:
    """The first complete JSON object in `text` (prose and code fences around it ignored).

    Raises `ReplyInvalid` when there is none.
    """
    start = text.find("{")
    while start != -1:
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise ReplyInvalid("the reply holds no JSON object")


_CLOSE = {"{": "}", "[": "]"}


def salvage_json(text: str) -> dict[str, Any] | None:
    """What a JSON object cut short still says: the longest prefix ending after a complete
    value, with its open containers closed. None when not even that parses.

    `{"items": [{"a": 1}, {"a": 2}, {"a"` → `{"items": [{"a": 1}, {"a": 2}]}`. A scalar
    at the very end is dropped (a number or literal may itself be cut), a string only when
    its closing quote is missing.
    """
    start = text.find("{")
    if start == -1:
        return None
    safe = _safe_points(text, start)
    for end, closers in reversed(safe):
        try:
            value = json.loads(text[start:end] + closers)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _safe_points(text: str, start: int) -> list[tuple[int, str]]:
    """(end, closers) after each complete member value: `text[start:end] + closers` parses.

    A small scanner over the JSON grammar's brackets, strings and separators; it trusts the
    text to be valid JSON up to the cut, which is all a truncated reply promises.
    """
    stack: list[str] = []
    expecting_key: list[bool] = []  # per open object: is the next string a key?
    points: list[tuple[int, str]] = []
    i, n = start, len(text)
    scalar_start: int | None = None

    def closers() -> str:
        return "".join(_CLOSE[c] for c in reversed(stack))

    def end_scalar(at: int) -> None:
        nonlocal scalar_start
        if scalar_start is not None and stack:
            points.append((at, closers()))
        scalar_start = None

    while i < n:
        ch = text[i]
        if ch == '"':
            end_scalar(i)
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                break  # the cut fell inside this string
            is_key = bool(stack) and stack[-1] == "{" and expecting_key[-1]
            i = j + 1
            if not is_key:
                points.append((i, closers()))
            continue
        if ch in "{[":
            end_scalar(i)
            stack.append(ch)
            expecting_key.append(ch == "{")
        elif ch in "}]":
            end_scalar(i)
            if not stack:
                break
            stack.pop()
            expecting_key.pop()
            if not stack:
                points.append((i + 1, ""))
                break
            points.append((i + 1, closers()))
        elif ch == ":":
            end_scalar(i)
            if expecting_key:
                expecting_key[-1] = False
        elif ch == ",":
            end_scalar(i)
            if stack and stack[-1] == "{":
                expecting_key[-1] = True
        elif ch.isspace():
            end_scalar(i)
        elif scalar_start is None:
            scalar_start = i
        i += 1
    return points
