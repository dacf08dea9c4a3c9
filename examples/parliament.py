"""The `parliament` example's product: a chat service over the synthetic talks of
`datasets/talks.jsonl` that looks up its own sources and cites them.

It is a stand-in for a real retrieval-augmented service, offline and deterministic: it
searches the talks by keyword (and "by vector" for long questions, and aggregates by party
when the question asks about parties), answers one paragraph per talk it found, citing it
as `[n]` and naming the member as `[Name](/mp/slug) (PARTY)`, and returns the sources it
cited. Like real services it makes mistakes, on purpose and deterministically: for some
questions it names the wrong member for a source (the metadata pre-check catches it), adds
an unsupported budget claim, or a summary that overstates (only the judge catches those).

Its output: `{"answer", "sources": {"1": {talk_id, speaker, party, date, text}, …},
"num_iterations"}`; its trace: one entry per tool call, `{"tool", "hits", "count"}`; its
model: reported, so the run records it.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from evalh.targets.base import TargetOutput

MODEL = "answerer-sim-1"
_WORD = re.compile(r"[a-z]+")
_STOP_WORDS = ("a an and the of on in to for what who which how do does did has have is are was were this that "
               "with about say says said parliament members member party parties any anyone why their they")
_STOP = frozenset(_STOP_WORDS.split(" "))


@lru_cache(maxsize=1)
def talks() -> list[dict[str, Any]]:
    path = Path(__file__).resolve().parent.parent / "datasets" / "talks.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def _slug(name: str) -> str:
    return name.lower().replace(" ", "-")


def _search(question: str, k: int) -> list[dict[str, Any]]:
    q = _terms(question)
    ranked = sorted(talks(), key=lambda t: (-len(q & _terms(t["text"] + " " + t["topic"])), t["id"]))
    return [t for t in ranked[:k] if q & _terms(t["text"] + " " + t["topic"])]


def answer(inp: dict[str, Any]) -> TargetOutput:
    question = str(inp.get("question") or "")
    h = int(hashlib.sha256(question.encode()).hexdigest(), 16)
    trace: list[dict[str, Any]] = []
    hits = _search(question, 3)
    trace.append({"tool": "keyword_search", "hits": [t["id"] for t in hits], "count": len(hits)})
    if len(question.split()) > 12:
        more = [t for t in _search(question + " debate", 4) if t not in hits][:1]
        trace.append({"tool": "vector_search", "hits": [t["id"] for t in more], "count": len(more)})
        hits += more
    if "parties" in question.lower():
        trace.append({"tool": "aggregate_by_party", "count": len({t["party"] for t in hits})})
    if not hits:
        return TargetOutput(output={"answer": "I found no talk about that.", "sources": {}, "num_iterations": len(trace)},
                            trace=trace, model=MODEL)
    sources = {str(n): {k: t[k] for k in ("speaker", "party", "date", "text")} | {"talk_id": t["id"]}
               for n, t in enumerate(hits, start=1)}
    paragraphs = [f"Here is what the talks say about: {question}"]
    for n, t in enumerate(hits, start=1):
        speaker, party = t["speaker"], t["party"]
        if n == 2 and h % 5 == 0:  # the bug the harness exists for: the member of another source
            speaker, party = hits[0]["speaker"], hits[0]["party"]
        claim = t["text"].split(". ")[0].replace("Speaking on", "On").replace("the member ", "")
        line = f"{claim}, said [{speaker}](/mp/{_slug(speaker)}) ({party}) [{n}]."
        if n == 1 and h % 9 == 0:
            line += f" The proposal would reportedly cost two billion a year [{n}]."
        paragraphs.append(line)
    if len(hits) > 1 and h % 7 == 0:
        paragraphs.append("Taken together, the parties agree on the direction "
                          + "".join(f"[{n}]" for n in range(1, len(hits) + 1)) + ".")
    return TargetOutput(
        output={"answer": "\n\n".join(paragraphs), "sources": sources, "num_iterations": len(trace) + 1},
        trace=trace, model=MODEL,
    )
