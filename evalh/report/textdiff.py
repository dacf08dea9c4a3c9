"""A word-level diff of two outputs, as plain (op, text) pieces every surface can draw.

`word_diff(base, candidate)` splits both texts into words, runs of whitespace and single
punctuation marks (see `_TOKEN`), and aligns them with `difflib.SequenceMatcher`. The pieces are plain
strings: each renderer shows them as text (the dashboard as text nodes, HTML escaped),
never as markup. Outputs that are not strings are compared as their indented JSON.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import orjson

_TOKEN = re.compile(r"\s+|\w(?:[\w'’.,:/%-]*\w)?|[^\w\s]", re.UNICODE)
"""Whitespace runs, words (inner punctuation kept: `$2.4B` is `$` and `2.4B`, `don't` one
word) and single marks (a trailing comma or full stop is its own token)."""

MAX_TOKENS = 20_000
"""Above this many tokens on either side the diff is by line (word alignment is
quadratic in the worst case; a line diff of a huge output stays fast)."""


def as_text(value: Any) -> str:
    """An output as the text a reader compares: a string as is, anything else as
    indented JSON (keys in their stored order), null as the empty string."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return str(value)


def _merge(out: list[list[str]], op: str, text: str) -> None:
    if not text:
        return
    if out and out[-1][0] == op:
        out[-1][1] += text
    else:
        out.append([op, text])


def word_diff(base: Any, candidate: Any) -> dict[str, Any]:
    """The diff of two outputs: `ops` is a list of `[op, text]` with op `eq` (in both),
    `del` (only in base) or `ins` (only in candidate); `by` says whether words or lines
    were aligned; `changed_words` counts the words deleted plus the words inserted."""
    a, b = as_text(base), as_text(candidate)
    by = "word"
    ta, tb = _TOKEN.findall(a), _TOKEN.findall(b)
    if len(ta) > MAX_TOKENS or len(tb) > MAX_TOKENS:
        by = "line"
        ta, tb = a.splitlines(keepends=True), b.splitlines(keepends=True)
    ops: list[list[str]] = []
    changed = 0
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _merge(ops, "eq", "".join(ta[i1:i2]))
            continue
        if tag in ("delete", "replace"):
            _merge(ops, "del", "".join(ta[i1:i2]))
            changed += sum(1 for t in ta[i1:i2] if not t.isspace())
        if tag in ("insert", "replace"):
            _merge(ops, "ins", "".join(tb[j1:j2]))
            changed += sum(1 for t in tb[j1:j2] if not t.isspace())
    return {"by": by, "ops": _fold_spaces(ops), "changed_words": changed, "same": a == b}


def _fold_spaces(ops: list[list[str]]) -> list[list[str]]:
    """A run of changed words reads as one change: whitespace kept between two changes
    goes into both the deleted and the inserted text (`mostly for` → `including a`)."""
    out: list[list[str]] = []
    pending: list[list[str]] = []  # changes since the last real equal piece, in order
    for k, (op, text) in enumerate(ops):
        between = (op == "eq" and text.isspace() and 0 < k < len(ops) - 1
                   and ops[k - 1][0] != "eq" and ops[k + 1][0] != "eq")
        if op != "eq" or between:
            pending.append([op, text])
            continue
        out.extend(_grouped(pending))
        pending = []
        out.append([op, text])
    out.extend(_grouped(pending))
    return out


def _grouped(changes: list[list[str]]) -> list[list[str]]:
    dels = "".join(t for op, t in changes if op in ("del", "eq"))
    ins = "".join(t for op, t in changes if op in ("ins", "eq"))
    has_del = any(op == "del" for op, _ in changes)
    has_ins = any(op == "ins" for op, _ in changes)
    return ([["del", dels]] if has_del else []) + ([["ins", ins]] if has_ins else [])
