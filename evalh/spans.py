"""Exact text, exactly: claim spans (character offsets into a text) and content digests
(SHA-256 of a text's UTF-8 bytes), checked the one way everywhere — by the labelling export
(`evalh.labels.rubric.claim_spans`), by `[suites.S.require]` in `evalh validate` and
`evalh run` (`evalh.core.run.requirements`), and when secrets are scrubbed from an output whose
claims carry offsets (`evalh.redact.scrub_with_spans`)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, TypeGuard


class ScrubbedClaim(ValueError):
    """A claim that quotes text a secret scrub cut: its words are not in the stored output,
    so it cannot be shown or rated (its case is refused, not the run)."""


class SpanError(ValueError):
    """A claim or a digest that does not hold: `where` (a dotted path) and why."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where}: {why}")
        self.where, self.why = where, why


def text_sha256(text: str) -> str:
    """SHA-256 of the text's exact UTF-8 bytes (what `sha256sum` of the file gives)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_digest(text: Any, digest: Any, where: str) -> None:
    """`digest` is the SHA-256 of `text`'s bytes; SpanError otherwise (naming a digest of
    the JSON-encoded text, a common mistake, as such)."""
    if not isinstance(text, str):
        raise SpanError(where, "the text a digest covers is not a string")
    if not isinstance(digest, str):
        raise SpanError(where, "no SHA-256 of the text")
    want = text_sha256(text)
    if digest.lower() == want:
        return
    hint = (" (it is the digest of the JSON-encoded text, not of its bytes)"
            if digest.lower() == hashlib.sha256(json.dumps(text).encode("utf-8")).hexdigest() else "")
    raise SpanError(where, f"SHA-256 {digest[:12]}… is not the text's ({want[:12]}…){hint}")


def _offset(value: Any) -> TypeGuard[int]:
    """An integer offset: not a bool (JSON `true` is not 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def checked_claims(raw: Any, text: Any, claims_path: str, text_path: str) -> list[dict[str, Any]]:
    """The claims (`[{id, start, end, text?}]`) as `{id, start, end, text}`, the text taken
    from `text` at the offsets. SpanError when a claim's offsets are not inside the text,
    its quoted `text` is not the characters there, or an id repeats."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SpanError(claims_path, "a list of claims")
    if not isinstance(text, str):
        raise SpanError(text_path, "the text claims index is not a string")
    out = []
    seen: set[str] = set()
    for i, c in enumerate(raw):
        where = f"{claims_path}[{i}]"
        if not isinstance(c, dict) or not isinstance(c.get("id"), str) or not c["id"]:
            raise SpanError(where, "a claim needs a string `id`")
        start, end = c.get("start"), c.get("end")
        if not (_offset(start) and _offset(end) and 0 <= start < end <= len(text)):
            raise SpanError(where, f"start/end must be offsets inside {text_path} (0 ≤ start < end ≤ {len(text)})")
        if "text" in c and text[start:end] != c["text"]:
            raise SpanError(where, f"its text is not the output's characters {start}–{end}")
        if c["id"] in seen:
            raise SpanError(where, f"repeated claim id {c['id']!r}")
        seen.add(c["id"])
        out.append({"id": c["id"], "start": start, "end": end, "text": text[start:end]})
    return out


def through_scrub(raw: Any, cuts: list[list[int]], marker_len: int, claims_path: str) -> Any:
    """The claims (`[{id, start, end, text?}]`, offsets into the text before secrets were
    cut from it) with offsets into the stored text, where each `[start, end]` of `cuts`
    became a marker of `marker_len` characters: an offset after a cut moves by the
    difference, a span that reaches into a cut covers the whole marker. A claim that carries
    its `text` and reaches into a cut raises ScrubbedClaim (that text is not stored)."""
    if not cuts or not isinstance(raw, list):
        return raw

    def moved(offset: int, *, end: bool) -> int:
        shift = 0
        for a, b in cuts:
            if offset >= b:
                shift += marker_len - (b - a)
            elif offset > a:  # inside a cut: the span covers the whole marker
                return a + shift + (marker_len if end else 0)
            else:
                break
        return offset + shift

    out = []
    for i, c in enumerate(raw):
        if not (isinstance(c, dict) and _offset(c.get("start")) and _offset(c.get("end"))):
            out.append(c)
            continue
        start, end = c["start"], c["end"]
        if "text" in c and any(a < end and start < b for a, b in cuts):
            raise ScrubbedClaim(f"{claims_path}[{i}]: claim {c.get('id')!r} quotes text a secret scrub cut "
                                    "from the output")
        out.append({**c, "start": moved(start, end=False), "end": moved(end, end=True)})
    return out
