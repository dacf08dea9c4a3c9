"""Deterministic rails around the answer pipeline, behind one dispatcher.

- :func:`canonicalize` — turn a user-supplied identifier (ticker or ISIN) into its canonical
  form, refusing anything hostile: path traversal, shell metacharacters, control bytes,
  non-ASCII look-alikes (``АAPL`` with a Cyrillic А), overlong input, bad ISIN checksums.
- :func:`impersonal` — published answers speak in the third person: no first/second-person
  pronouns or direct advice outside quoted speech.
- :func:`completeness` — a report must carry every required ``## Section``, each non-empty.
- :func:`materiality` — a monitor speaks only on a material change (relative and absolute
  floors), stays silent inside its cooldown unless the move is extreme.

:func:`run` is the evalh entry point (``examples.guards:run``): its input is
``{"guard": name, ...arguments}`` and it returns the guard's result dict, which always has
a ``verdict`` key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

MAX_IDENTIFIER_LEN = 24
_TICKER_RE = re.compile(r"[A-Z]{1,5}(?:[.\-/][A-Z]{1,2})?")
_ISIN_RE = re.compile(r"[A-Z]{2}[A-Z0-9]{9}[0-9]")
_EXCHANGES = frozenset({"NASDAQ", "NYSE", "AMEX", "LSE", "TSX", "XETRA"})


def _refuse(reason: str) -> dict[str, Any]:
    return {"verdict": "reject", "reason": reason}


def isin_check_digit_ok(isin: str) -> bool:
    """Validate an ISIN's final Luhn check digit (letters expand to two digits, A=10)."""
    digits = "".join(str(int(ch, 36)) for ch in isin[:-1]) + isin[-1]
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            d = d - 9 if d > 9 else d
        total += d
    return total % 10 == 0


def canonicalize(identifier: Any) -> dict[str, Any]:
    """Canonicalize a ticker or ISIN; refuse anything that is not plainly one.

    Accepted: ``aapl`` → ``AAPL``, ``$AAPL`` → ``AAPL``, ``NASDAQ:AAPL`` → ``AAPL``,
    ``brk-b`` / ``BRK/B`` → ``BRK.B``, ``US0378331005`` (valid check digit) as an ISIN.
    Non-ASCII input is refused outright rather than folded: a homoglyph that survives
    folding is an attack, and one that folds cleanly is never worth the risk.
    """
    if not isinstance(identifier, str):
        return _refuse("identifier must be a string")
    if len(identifier) > MAX_IDENTIFIER_LEN:
        return _refuse(f"identifier longer than {MAX_IDENTIFIER_LEN} characters")
    raw = identifier.strip()
    if not raw:
        return _refuse("empty identifier")
    if not raw.isascii():
        return _refuse("non-ASCII characters (possible homoglyph)")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in raw):
        return _refuse("control characters")
    if ".." in raw or raw.startswith(("/", "\\", ".")) or "\\" in raw:
        return _refuse("path-like identifier")
    if re.search(r"[\s;|&`$<>'\"(){}*?!=%]", raw.removeprefix("$")):
        return _refuse("shell or markup metacharacters")
    value = raw.removeprefix("$").upper()
    if ":" in value:
        exchange, _, value = value.partition(":")
        if exchange not in _EXCHANGES:
            return _refuse(f"unknown exchange prefix {exchange!r}")
    if len(value) == 12 and _ISIN_RE.fullmatch(value):
        if not isin_check_digit_ok(value):
            return _refuse("ISIN check digit mismatch")
        return {"verdict": "accept", "kind": "isin", "canonical": value}
    if _TICKER_RE.fullmatch(value):
        return {"verdict": "accept", "kind": "ticker", "canonical": re.sub(r"[\-/]", ".", value)}
    return _refuse("not a ticker or ISIN")


_PRONOUNS = [
    "I",
    "I'm",
    "I've",
    "I'd",
    "I'll",
    "me",
    "my",
    "mine",
    "myself",
    "we",
    "we're",
    "we've",
    "we'd",
    "we'll",
    "us",
    "our",
    "ours",
    "ourselves",
    "you",
    "you're",
    "you've",
    "you'd",
    "you'll",
    "your",
    "yours",
    "yourself",
    "let's",
]
# Longest first, so "we're" is reported as itself rather than as "we".
_PRONOUN_RE = re.compile(
    r"\b(?:" + "|".join(sorted(map(re.escape, _PRONOUNS), key=len, reverse=True)) + r")(?![\w'])",
    re.IGNORECASE,
)
_ADVICE_RE = re.compile(r"\b(?:should|must|ought to)\s+(?:buy|sell|hold|invest|consider)\b", re.I)
_QUOTED_RE = re.compile(r"\"[^\"]*\"|“[^”]*”")


def impersonal(text: Any) -> dict[str, Any]:
    """Reject first/second-person voice and direct trading advice outside quotes.

    ``US`` in capitals is the country, not the pronoun; the roman numeral in ``Series I``
    or ``Phase I`` is not the pronoun either. Quoted speech is exempt: reporting what a
    CEO said in the first person is fine.
    """
    if not isinstance(text, str) or not text.strip():
        return _refuse("empty text")
    prose = text.replace("’", "'")
    prose = _QUOTED_RE.sub(lambda m: " " * len(m.group(0)), prose)
    violations: list[str] = []
    for m in _PRONOUN_RE.finditer(prose):
        word = m.group(0)
        if word == "US":
            continue
        if word == "I" and re.search(
            r"\b(?:Series|Phase|Tier|Class|Type|World War)\s+$", prose[: m.start()]
        ):
            continue
        violations.append(word)
    violations += [m.group(0) for m in _ADVICE_RE.finditer(prose)]
    if violations:
        return {"verdict": "reject", "violations": violations}
    return {"verdict": "accept", "violations": []}


_HEADING_RE = re.compile(r"^#{1,3}\s+(.+?)\s*:?\s*$", re.MULTILINE)
DEFAULT_SECTIONS = ("Summary", "Evidence", "Risks")


def completeness(text: Any, required: Sequence[str] | None = None) -> dict[str, Any]:
    """Check that every required Markdown section is present and has a non-empty body."""
    if not isinstance(text, str):
        return _refuse("text must be a string")
    need = list(required) if required else list(DEFAULT_SECTIONS)
    headings = list(_HEADING_RE.finditer(text))
    bodies: dict[str, str] = {}
    for i, m in enumerate(headings):
        end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
        bodies.setdefault(m.group(1).strip().lower(), text[m.end() : end].strip())
    missing = [s for s in need if s.lower() not in bodies]
    empty = [s for s in need if s.lower() in bodies and not bodies[s.lower()]]
    if missing or empty:
        return {"verdict": "reject", "missing": missing, "empty": empty}
    return {"verdict": "accept", "missing": [], "empty": []}


def _finite(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def materiality(
    previous: Any,
    current: Any,
    floor_pct: Any = 5.0,
    floor_abs: Any = 0.0,
    hours_since_last_alert: Any = None,
    cooldown_hours: Any = 24.0,
    breakthrough_multiple: float = 3.0,
) -> dict[str, Any]:
    """Decide whether a monitored metric's move deserves an alert.

    ``speak`` when the relative change reaches ``floor_pct`` and the absolute change
    reaches ``floor_abs``; ``silent`` otherwise, and also inside the cooldown unless the
    relative move is at least ``breakthrough_multiple`` × the floor. A change from zero is
    judged by the absolute floor alone. Non-finite or negative settings are rejected.
    """
    prev, cur = _finite(previous), _finite(current)
    fpct, fabs, cool = _finite(floor_pct), _finite(floor_abs), _finite(cooldown_hours)
    if prev is None or cur is None:
        return _refuse("previous and current must be finite numbers")
    if fpct is None or fabs is None or cool is None or min(fpct, fabs, cool) < 0:
        return _refuse("floors and cooldown must be finite and non-negative")
    since = None if hours_since_last_alert is None else _finite(hours_since_last_alert)
    if hours_since_last_alert is not None and (since is None or since < 0):
        return _refuse("hours_since_last_alert must be a finite non-negative number")
    delta = abs(cur - prev)
    pct = math.inf if prev == 0 and delta > 0 else (0.0 if prev == 0 else delta / abs(prev) * 100)
    material = delta > 0 and delta >= fabs and (prev == 0 or pct >= fpct)
    result = {
        "change_abs": round(delta, 6),
        "change_pct": None if math.isinf(pct) else round(pct, 4),
    }
    if not material:
        return {"verdict": "silent", "why": "below floor", **result}
    if since is not None and since < cool and pct < breakthrough_multiple * fpct:
        return {"verdict": "silent", "why": "cooldown", **result}
    return {"verdict": "speak", "why": "material change", **result}


GUARDS: dict[str, Callable[..., dict[str, Any]]] = {
    "canonicalize": canonicalize,
    "impersonal": impersonal,
    "completeness": completeness,
    "materiality": materiality,
}


def run(case_input: Mapping[str, Any]) -> dict[str, Any]:
    """evalh entry point: ``{"guard": name, ...kwargs}`` → that guard's result.

    An unknown guard name is a dataset bug, so it raises rather than returning a verdict.
    """
    args = dict(case_input)
    name = args.pop("guard", None)
    if name not in GUARDS:
        raise ValueError(f"unknown guard {name!r}; expected one of {sorted(GUARDS)}")
    return GUARDS[name](**args)
