"""Measured sizes of an output: characters and words, counted by evalh (deterministic for
the text), and a token estimate derived from them where the provider reported none.

The text measured is the output itself when it is a string, else its canonical JSON
(sorted keys, no whitespace). `chars` counts Unicode code points (what `wc -m` counts),
`words` runs of non-whitespace (`wc -w`). `tokens_derived` = ⌈chars / 4⌉ is an estimate,
labelled `tokens_method: "derived: chars/4"`; a result whose provider reported output
tokens records `tokens_method: "reported"` and no estimate.
"""

from __future__ import annotations

import math
from typing import Any

DERIVED = "derived: chars/4"
REPORTED = "reported"


def text_of(output: Any) -> str:
    from evalh.fields import as_text

    return as_text(output)


def measure(output: Any, tokens_out: int | None) -> dict[str, Any]:
    text = text_of(output)
    out: dict[str, Any] = {"chars": len(text), "words": len(text.split())}
    if tokens_out is None:
        out["tokens_derived"] = math.ceil(len(text) / 4)
        out["tokens_method"] = DERIVED
    else:
        out["tokens_method"] = REPORTED
    return out


def tokens_of(measured: dict[str, Any] | None, tokens_out: int | None) -> tuple[int | None, bool]:
    """(output tokens, derived?): the reported count, else the derived estimate."""
    if tokens_out is not None:
        return tokens_out, False
    if measured and isinstance(measured.get("tokens_derived"), int):
        return int(measured["tokens_derived"]), True
    return None, False
