"""citecheck — a sourcing gate for cited answers.

An answer cites its sources with markers (``[1]``, ``[2]``, ``[1, 3]``). The gate splits the
answer into sentences, extracts every checkable claim from each sentence — figures in the
notations below, and literal quotes — and accepts the answer only when every claim is found
in the union of the sources that sentence cites. Anything else is rejected with a reason:
an uncited claim, a citation to a source that does not exist, or a claim the cited sources
do not support.

Notations understood (the "surface" the gate regression covers):

======================  ===========================================================
quote                   ``"..."`` / ``“...”`` — must appear verbatim in the source
date (ISO)              ``2024-03-15``
date (long)             ``March 15, 2024``, ``15 March 2024``, ``March 2024``
quarter                 ``Q3 2024``, ``Q3 FY24``, ``3Q24``
year range              ``2023-2024``, ``2023–24``
range                   ``10-15%``, ``$2-3B``
money                   ``$2.3B``, ``$450M``, ``€1.2 billion``, ``£300``
percent                 ``12%``, ``12.5 percent``
basis points            ``25 bps``, ``25 basis points``
multiple                ``3.5x``, ``3.5×``
scaled number           ``1.5 million``, ``40K``
plain number            ``12,400``, ``2021``
======================  ===========================================================

Figures match across notations of the same kind (``$2.3 billion`` ≡ ``$2,300 million``,
``March 15, 2024`` ≡ ``2024-03-15``) and within the precision the answer states: ``$2.3B``
is supported by a source saying ``$2.31B`` but not by one saying ``$2.4B``.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
# Case-sensitive single-letter scales that must end the word: "2023-2024 the" is not trillions.
_SCALE = r"(?-i:[TBMK])\b|bn\b|trillion\b|billion\b|million\b|thousand\b"
_SCALES: dict[str, float] = {
    "k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6,
    "b": 1e9, "bn": 1e9, "billion": 1e9, "t": 1e12, "trillion": 1e12,
}  # fmt: skip
_MONTH = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_YEAR = r"(?:19|20)\d{2}"
_LB = r"(?<![\w.,])"  # a figure starts at a word boundary, not mid-number

_CITE_RE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_QUOTE_RE = re.compile(r"\"([^\"]{2,}?)\"|“([^”]{2,}?)”")
_SENTENCE_END_RE = re.compile(r"[.!?]\s+(?=[A-Z\"“])")
_I = re.IGNORECASE

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("date_iso", re.compile(rf"\b({_YEAR})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\b")),
    ("date_mdy", re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+({_YEAR})\b", _I)),
    ("date_dmy", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+({_YEAR})\b", _I)),
    ("date_my", re.compile(rf"\b({_MONTH})\.?\s+({_YEAR})\b", _I)),
    ("quarter", re.compile(rf"\bQ([1-4])\s*(?:FY\s*)?'?({_YEAR}|\d{{2}})\b", _I)),
    ("quarter_nq", re.compile(r"\b([1-4])Q\s*'?(\d{2}|\d{4})\b", _I)),
    (
        "range",
        re.compile(
            rf"(?P<cur>[$€£])?{_LB}(?P<lo>{_NUM})(?P<lopct>%)?\s*[-–—]\s*[$€£]?(?P<hi>{_NUM})"
            rf"(?:\s*(?P<scale>%|percent\b|{_SCALE}))?",
            _I,
        ),
    ),
    ("money", re.compile(rf"(?P<cur>[$€£])\s?(?P<num>{_NUM})(?:\s*(?P<scale>{_SCALE}))?", _I)),
    ("percent", re.compile(rf"{_LB}(?P<num>{_NUM})\s*(?:%|percent\b|per cent\b)", _I)),
    ("bps", re.compile(rf"{_LB}(?P<num>{_NUM})\s*(?:bps|bp|basis points?)\b", _I)),
    ("multiple", re.compile(rf"{_LB}(?P<num>{_NUM})\s*(?:x|×)(?!\w)", _I)),
    (
        "number",
        re.compile(
            rf"{_LB}(?P<num>{_NUM})(?:\s*(?P<scale>(?-i:[TBMK])\b|bn\b)|\s+(?P<word>trillion|billion|million|thousand)\b)?(?![\w%])",
            _I,
        ),
    ),
]


@dataclass(frozen=True)
class Claim:
    """One checkable claim: its kind, surface text, normalized value and tolerance."""

    kind: str
    text: str
    value: Any
    tol: float
    start: int
    end: int


def _num(text: str) -> tuple[float, int]:
    """Parse ``"12,400.5"`` into (value, number of decimals written)."""
    clean = text.replace(",", "")
    decimals = len(clean.split(".", 1)[1]) if "." in clean else 0
    return float(clean), decimals


def _scale(word: str | None) -> float:
    return _SCALES[word.lower()] if word and word.lower() in _SCALES else 1.0


def _month(name: str) -> int:
    key = name.lower()[:3]
    return [m.lower() for m in calendar.month_abbr].index(key)


def _date(y: int, m: int, d: int) -> tuple[int, int, int] | None:
    try:
        _dt.date(y, m, d)
    except ValueError:
        return None
    return (y, m, d)


def _year2(lo_year: int, text: str) -> int:
    return int(text) if len(text) == 4 else (lo_year // 100) * 100 + int(text)


def _make(kind: str, m: re.Match[str]) -> tuple[str, Any, float] | None:
    """Turn one pattern match into (kind, value, tolerance); None when it is no claim."""
    g = m.groups()
    if kind == "date_iso":
        return "date", _date(int(g[0]), int(g[1]), int(g[2])), 0.0
    if kind == "date_mdy":
        return "date", _date(int(g[2]), _month(g[0]), int(g[1])), 0.0
    if kind == "date_dmy":
        return "date", _date(int(g[2]), _month(g[1]), int(g[0])), 0.0
    if kind == "date_my":
        return "date", (int(g[1]), _month(g[0]), 0), 0.0
    if kind in ("quarter", "quarter_nq"):
        year = int(g[1]) if len(g[1]) == 4 else 2000 + int(g[1])
        return "quarter", (int(g[0]), year), 0.0
    if kind == "range":
        cur, lo_s, hi_s, scale = m["cur"], m["lo"], m["hi"], m["scale"]
        pct = bool(m["lopct"]) or (scale or "").lower() in ("%", "percent")
        if not (cur or pct or scale) and re.fullmatch(_YEAR, lo_s) and len(hi_s) in (2, 4):
            return "year_range", (int(lo_s), _year2(int(lo_s), hi_s)), 0.0
        (lo, dlo), (hi, dhi) = _num(lo_s), _num(hi_s)
        mult = 1.0 if pct else _scale(scale)
        unit = "%" if pct else (cur or "")
        return "range", (unit, lo * mult, hi * mult), 0.5 * 10 ** -max(dlo, dhi) * mult
    value, decimals = _num(m["num"])
    if kind == "money":
        mult = _scale(m["scale"])
        return "money", (m["cur"], value * mult), 0.5 * 10**-decimals * mult
    if kind in ("percent", "bps", "multiple"):
        return kind, value, 0.5 * 10**-decimals
    mult = _scale(m["scale"] or m["word"])
    return "number", value * mult, 0.5 * 10**-decimals * mult


def _mask(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def normalize_quote(text: str) -> str:
    """Fold curly quotes/apostrophes and collapse whitespace for literal comparison."""
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return re.sub(r"\s+", " ", text).strip()


def extract_claims(text: str, *, quotes: bool = True) -> list[Claim]:
    """Extract claims from ``text`` in document order; each character feeds one claim.

    Citation markers are never claims. With ``quotes=False`` (used on sources) quoted
    passages are scanned for figures instead of being taken as literal-quote claims.
    """
    claims: list[Claim] = []
    work = _CITE_RE.sub(lambda m: " " * len(m.group(0)), text)
    if quotes:
        for m in _QUOTE_RE.finditer(work):
            body = normalize_quote(m.group(1) or m.group(2)).rstrip(",.;:")
            claims.append(Claim("quote", m.group(0), body, 0.0, m.start(), m.end()))
            work = _mask(work, m.start(), m.end())
    for name, pattern in _PATTERNS:
        for m in list(pattern.finditer(work)):
            made = _make(name, m)
            if made is None:
                continue
            kind, value, tol = made
            claims.append(
                Claim(kind, text[m.start() : m.end()].strip(), value, tol, m.start(), m.end())
            )
            work = _mask(work, m.start(), m.end())
    return sorted(claims, key=lambda c: c.start)


def _supports(claim: Claim, src: Claim) -> bool:
    """Whether one source claim supports one answer claim (kind, unit and precision)."""
    if claim.value is None or src.value is None or claim.kind != src.kind:
        return False
    eps = 1e-9
    if claim.kind == "date":
        y, mo, d = claim.value
        return src.value == claim.value or (d == 0 and src.value[:2] == (y, mo))
    if claim.kind in ("quarter", "year_range"):
        return bool(src.value == claim.value)
    if claim.kind == "range":
        unit, lo, hi = claim.value
        s_unit, s_lo, s_hi = src.value
        tol = claim.tol * (1 + eps)
        return unit == s_unit and abs(lo - s_lo) <= tol and abs(hi - s_hi) <= tol
    if claim.kind == "money":
        return bool(claim.value[0] == src.value[0]) and abs(
            claim.value[1] - src.value[1]
        ) <= claim.tol * (1 + eps)
    return bool(abs(claim.value - src.value) <= claim.tol * (1 + eps))


def _sentences(text: str, protected: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sentence spans; a boundary inside a quote does not split it."""
    spans, start = [], 0
    for m in _SENTENCE_END_RE.finditer(text):
        cut = m.start() + 1
        if any(a < cut < b for a, b in protected):
            continue
        spans.append((start, cut))
        start = cut
    spans.append((start, len(text)))
    return spans


def _sources(raw: Any) -> dict[int, str]:
    if isinstance(raw, Mapping):
        return {int(k): str(v) for k, v in raw.items()}
    if isinstance(raw, Sequence) and not isinstance(raw, str):
        return {i + 1: str(v) for i, v in enumerate(raw)}
    raise TypeError("sources must be a mapping {n: text} or a list of texts")


def check(case_input: Mapping[str, Any]) -> dict[str, Any]:
    """Gate one answer against its sources.

    ``case_input`` is ``{"answer": str, "sources": {"1": text, ...} | [text, ...]}``.
    Returns ``{"verdict": "accept"|"reject", "reasons": [...], "claims": [...]}``; each
    claim row names its kind, text, the sources cited for it and the one supporting it.
    Malformed input is rejected (the gate fails closed), never accepted.
    """
    try:
        answer = case_input["answer"]
        sources = _sources(case_input.get("sources", {}))
        if not isinstance(answer, str):
            raise TypeError("answer must be a string")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return {"verdict": "reject", "reasons": [f"malformed input: {exc}"], "claims": []}
    if not answer.strip():
        return {"verdict": "reject", "reasons": ["empty answer"], "claims": []}

    reasons: list[str] = []
    rows: list[dict[str, Any]] = []
    claims = extract_claims(answer)
    src_claims = {n: extract_claims(t, quotes=False) for n, t in sources.items()}
    src_quotes = {n: normalize_quote(t) for n, t in sources.items()}
    quote_spans = [(c.start, c.end) for c in claims if c.kind == "quote"]
    for a, b in _sentences(answer, quote_spans):
        cited = sorted(
            {int(n) for m in _CITE_RE.finditer(answer[a:b]) for n in m.group(1).split(",")}
        )
        for n in cited:
            if n not in sources:
                reasons.append(f"citation [{n}] names no provided source")
        known = [n for n in cited if n in sources]
        for claim in (c for c in claims if a <= c.start < b):
            support = None
            for n in known:
                if claim.kind == "quote":
                    hit = claim.value in src_quotes[n]
                else:
                    hit = any(_supports(claim, s) for s in src_claims[n])
                if hit:
                    support = n
                    break
            rows.append(
                {"kind": claim.kind, "text": claim.text, "cited": cited, "supported_by": support}
            )
            if not cited:
                reasons.append(f"uncited {claim.kind} {claim.text!r}")
            elif claim.value is None:
                reasons.append(f"invalid {claim.kind} {claim.text!r}")
            elif support is None and known:
                refs = ", ".join(f"[{n}]" for n in known)
                reasons.append(f"unsupported {claim.kind} {claim.text!r}: not in cited {refs}")
    return {"verdict": "reject" if reasons else "accept", "reasons": reasons, "claims": rows}
