"""Pure text work for citation judging: paragraphs, `[n]` markers, the cited sources, and
the deterministic metadata pre-check. No I/O, no model.

Sources come from the case input, as a mapping `{"1": source, …}` or a list (numbered from
1). A source is its text, or an object with the text under `text_key` and any metadata
beside it (`{"text": "…", "speaker": "Helena Bargholtz", "party": "L"}`).

The pre-check: each mention pattern is a regex whose named groups name source metadata
keys, e.g. `\\[(?P<speaker>[^\\]]+)\\]\\(/mp/[^)]*\\)\\s*\\((?P<party>[^)]+)\\)` for a linked name
followed by a party. Whatever a paragraph states that way must match the metadata of a
source cited in the same sentence (else of any source the paragraph cites); a statement
that matches none is a `metadata_mismatch`, described in words for the record and the judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

CITATION = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\](?!\()")
"""`[3]`, `[1, 3]`, `[1;2]` — not a markdown link text such as `[12](/x)`."""
_BLOCK = re.compile(r"\n[ \t]*\n")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Source:
    number: int
    text: str
    meta: dict[str, Any] = field(default_factory=dict)


def paragraphs(answer: str) -> list[str]:
    """Blocks separated by blank lines; the items of a list are paragraphs of their own."""
    out: list[str] = []
    for block in _BLOCK.split(answer.replace("\r\n", "\n")):
        items: list[list[str]] = []
        for line in block.split("\n"):
            if _LIST_ITEM.match(line) or not items:
                items.append([line])
            else:
                items[-1].append(line)
        out.extend(t for item in items if (t := "\n".join(item).strip()))
    return out


def cited_numbers(text: str) -> list[int]:
    """Source numbers cited in `text`, in first-cited order, without repeats."""
    seen: dict[int, None] = {}
    for m in CITATION.finditer(text):
        for part in re.split(r"[,;]", m.group(1)):
            seen.setdefault(int(part.strip()), None)
    return list(seen)


def sources_of(raw: Any, text_key: str = "text") -> dict[int, Source] | None:
    """The numbered sources of a case input value; None when it is not a mapping or list."""
    if isinstance(raw, list):
        items = [(i + 1, v) for i, v in enumerate(raw)]
    elif isinstance(raw, dict):
        items = []
        for k, v in raw.items():
            if not str(k).strip().isdigit():
                return None
            items.append((int(str(k).strip()), v))
    else:
        return None
    out = {}
    for n, v in items:
        if isinstance(v, dict):
            text = v.get(text_key)
            meta = {k: x for k, x in v.items() if k != text_key}
            out[n] = Source(n, text if isinstance(text, str) else "", meta)
        else:
            out[n] = Source(n, "" if v is None else str(v))
    return out


def _norm(value: Any) -> str:
    return " ".join(str(value).split()).casefold()


def _sentence_at(text: str, pos: int) -> str:
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if m.start() >= pos:
            return text[start:m.start()]
        start = m.end()
    return text[start:]


def precheck(paragraph: str, sources: dict[int, Source], patterns: list[re.Pattern[str]]) -> str | None:
    """What the paragraph states about its cited sources that their metadata contradicts
    (one line per statement), or None when everything checkable matches."""
    problems: list[str] = []
    for pattern in patterns:
        for m in pattern.finditer(paragraph):
            stated = {k: v.strip() for k, v in m.groupdict().items() if v and v.strip()}
            nums = cited_numbers(_sentence_at(paragraph, m.start())) or cited_numbers(paragraph)
            cands = [sources[n] for n in nums if n in sources]
            # Only metadata a cited source has can be checked.
            checkable = {k: v for k, v in stated.items() if any(k in s.meta for s in cands)}
            if not checkable:
                continue
            if any(all(_norm(s.meta.get(k)) == _norm(v) for k, v in checkable.items()) for s in cands):
                continue
            says = ", ".join(f"{k} {v!r}" for k, v in checkable.items())
            has = "; ".join(
                f"[{s.number}] has " + ", ".join(f"{k} {s.meta.get(k)!r}" for k in checkable) for s in cands
            )
            problems.append(f"the paragraph states {says}, but {has}")
    return "\n".join(dict.fromkeys(problems)) or None
