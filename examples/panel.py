"""A toy refuter panel: five lenses review one reconstructed "intent" node.

This is a *target under test*, not part of evalh. Each lens is a simple, deterministic rule
standing in for an LLM reviewer, and some rules are wrong on purpose so the `panel` suite
has real false positives, false negatives and one failed lens call to count:

- ``provenance`` refutes a node whose source is missing, ``unknown`` or ``inferred:…``
  (it trusts any other source string, so a hearsay source slips through);
- ``contradiction`` refutes a node when an authored companion mentions the node's subject
  next to a negation word (a contradiction phrased without one is missed);
- ``duplication`` refutes a node whose claim shares ≥ 70 % of its words with a neighbour
  (a reworded twin is missed; a same-words-different-meaning node is flagged);
- ``scope`` refutes a claim with a universal quantifier (``all``, ``every``, ``always``,
  ``never``) — which also flags legitimate invariants;
- ``evidence`` refutes a node with no evidence, and *fails* (returns ``{"error": …}``) when
  its evidence is ``"<unavailable>"``, the way a lens whose tool call timed out would.

:func:`review` is the evalh entry point (``examples.panel:review``). It returns
``{"lenses": {lens: "refuted" | "survived" | {"error": …}}, "refutations": n}``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

LENSES = ("provenance", "contradiction", "duplication", "scope", "evidence")
_WORD = re.compile(r"[a-z0-9]+")
_NEGATION = re.compile(r"\b(not|never|no longer|none|forbidden|removed)\b")
_UNIVERSAL = re.compile(r"\b(all|every|always|never)\b", re.I)
_STOP = frozenset({"the", "a", "an", "of", "to", "is", "are", "be", "in", "on", "for", "and", "it", "its"})


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def provenance(node: Mapping[str, Any]) -> str:
    source = str(node.get("source") or "")
    return "refuted" if not source or source == "unknown" or source.startswith("inferred:") else "survived"


def contradiction(node: Mapping[str, Any]) -> str:
    subject = str(node.get("subject", "")).lower()
    for text in node.get("companions", []):
        low = str(text).lower()
        if subject and subject in low and _NEGATION.search(low):
            return "refuted"
    return "survived"


def duplication(node: Mapping[str, Any]) -> str:
    mine = _words(str(node.get("claim", "")))
    for other in node.get("neighbours", []):
        theirs = _words(str(other))
        if mine and theirs and len(mine & theirs) / len(mine | theirs) >= 0.7:
            return "refuted"
    return "survived"


def scope(node: Mapping[str, Any]) -> str:
    return "refuted" if _UNIVERSAL.search(str(node.get("claim", ""))) else "survived"


def evidence(node: Mapping[str, Any]) -> str | dict[str, str]:
    ev = node.get("evidence")
    if ev == "<unavailable>":
        return {"error": "evidence lookup failed: source unavailable"}
    return "refuted" if not ev else "survived"


_RULES = {
    "provenance": provenance, "contradiction": contradiction, "duplication": duplication,
    "scope": scope, "evidence": evidence,
}


def review(node: Mapping[str, Any]) -> dict[str, Any]:
    """Run the five lenses over one node; count the refutations (a failed lens counts none)."""
    lenses = {name: _RULES[name](node) for name in LENSES}
    return {"lenses": lenses, "refutations": sum(v == "refuted" for v in lenses.values())}
