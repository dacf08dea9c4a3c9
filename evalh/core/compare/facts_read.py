"""The facts of a run document read a chunk of result lines at a time, without a model per
result (`read_facts`, `facts_from`): what `evalh compare` reads of a stored run.

A line of another shape than evalh writes is validated as a `CaseResult` (the same
coercions and the same named error as every other reader); so is every line of a document
in the earlier, indented layout, which `evalh.store` loads whole.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import IO, Annotated, Any, Literal

import msgspec
import orjson
from pydantic import ValidationError

from evalh.core.compare.facts import DEFAULT_OPTIONS, LinesApart, Options, SuiteFacts
from evalh.document import HEADS, chunk_lines, iter_case_chunks, read_head, result_counts
from evalh.errors import RunDocumentError, first_validation_error
from evalh.models import CaseResult


class _LineScore(msgspec.Struct, gc=False):  # (no cycle: the collector need not track it)
    scorer: str
    value: float | None = None
    judge_model: str | None = None


@functools.cache
def _line_type(cluster_by: str | None) -> tuple[type, msgspec.json.Decoder[Any]]:
    """The fields of a result line that a comparison reads, of the JSON types evalh writes
    (a float field takes a JSON integer too), and the decoder of a chunk of them; the other
    fields are skipped unparsed, and of `metadata` only the cluster field is read (none
    without one)."""
    fields: list[Any] = [
        ("case_id", Annotated[str, msgspec.Meta(min_length=1)]),
        ("status", Literal["passed", "failed", "errored", "judge_error", "skipped"]),
        ("case_digest", str | None, None),
        ("arm", str, "default"),
        ("attempt", Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)], 0),  # else as the model reads it
        ("score", float | None, None),
        ("scores", list[_LineScore], msgspec.field(default_factory=list)),
        ("latency_ms", float | None, None),
        ("cost_usd", float | None, None),
        ("cached", bool, False),
    ]
    if cluster_by:
        metadata = msgspec.defstruct("_Metadata", [("value", Any, None)], rename={"value": cluster_by}, gc=False)
        fields.append(("metadata", metadata, msgspec.field(default_factory=metadata)))
    line = msgspec.defstruct("_Line", fields, gc=False)
    return line, msgspec.json.Decoder(list[line])  # type: ignore[valid-type]


def add_line(facts: SuiteFacts, obj: Any, where: str, shown: str) -> None:
    """One parsed result line of a document (`where`: its place, for the error). A line
    of the types evalh writes is read as it is (`_line_type`); any other is validated as a
    `CaseResult`, with the model's coercions and its named error."""
    try:
        facts.extend((msgspec.convert(obj, _line_type(facts.cluster_by)[0]),))
        return
    except (msgspec.ValidationError, RecursionError):
        pass
    try:
        facts.extend((CaseResult.model_validate(obj),))
    except ValidationError as exc:
        loc, msg = first_validation_error(exc, (where,))
        raise RunDocumentError(f"{shown}: invalid run document at {loc}: {msg}") from None


def add_chunk(facts: SuiteFacts, name: str, view: memoryview, count: int, shown: str,
               scratch: bytearray) -> None:
    """`count` consecutive result lines of suite `name` (`document.iter_case_chunks`):
    parsed with one call when every one is of the types evalh writes, else line by line
    (`add_line`). `scratch`: a buffer reused for the array they make between brackets."""
    k = len(view)
    k -= 2 if view[k - 2:].tobytes() == b",\n" else 0
    if len(scratch) < k + 2:
        scratch.extend(bytes(k + 2 - len(scratch)))
    scratch[0], scratch[1:k + 1], scratch[k + 1] = 0x5B, view[:k], 0x5D  # [ lines ]
    try:
        results = _line_type(facts.cluster_by)[1].decode(memoryview(scratch)[:k + 2])
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        # RecursionError: a deeply nested field, even one only skipped (orjson, line by
        # line, reads up to its depth limit and names the document beyond it)
        results = None
    if results is not None and len(results) == count:  # else a line holds two (or none)
        facts.add_lines(results)
        return
    for data in chunk_lines(view, count):
        try:
            obj = orjson.loads(data[:-1] if data.endswith(b",") else data)
        except orjson.JSONDecodeError as exc:
            raise RunDocumentError(f"{shown}: not valid JSON: {exc}") from None
        add_line(facts, obj, f"suites.{name}.cases.{facts.results}", shown)


CHUNK_BYTES = 1 << 18
"""About how much of a document is decoded at a time (`document.iter_case_chunks`): a
chunk's lines, its decoded structs and the columns they go to stay in the processor's
caches (a 930 MB document read ~15 % faster than in 1 MB chunks)."""


def read_facts(path: Path, shown: str, options: dict[str, Options], *, rows: str = "checked") -> dict[str, SuiteFacts] | None:
    """The facts of every suite of the run document at `path` (`facts_from`). None when the
    document is not in the streamed layout (the caller loads it whole)."""
    try:
        with path.open("rb") as fh:
            head = read_head(fh)
            return None if head is None else facts_from(fh, head, shown, options, rows=rows)
    except OSError as exc:
        raise RunDocumentError(f"{path}: cannot read: {exc}") from None


def facts_from(fh: IO[bytes], head: dict[str, Any], shown: str, options: dict[str, Options], *,
               rows: str = "checked") -> dict[str, SuiteFacts]:
    """The facts of every suite of a streamed document whose header `head` was just read
    from `fh`, a chunk of result lines at a time (`options`: per suite, what to keep; a
    suite it does not name keeps the default).

    `rows`: how a line's row is found. "checked": a row is the lines of one (case, arm)
    that follow one another, as evalh writes them; in a document where a case's lines are
    apart (`SuiteFacts.folded`), the results are read again, rows found by case id
    ("lookup"). "unchecked": the first way, not checked: for a caller that checks it
    (`unfolded`)."""
    start = fh.tell()
    try:
        out = _facts_from(fh, head, shown, options, lookup=rows == "lookup")
        if rows != "checked" or all(facts.folded() for facts in out.values()):
            return out
    except LinesApart:
        pass
    fh.seek(start)
    return _facts_from(fh, head, shown, options, lookup=True)


def unfolded(facts: dict[str, SuiteFacts], like: dict[str, SuiteFacts]) -> bool:
    """Some suite of `facts` (read "unchecked") holds a case in two rows. A suite holding
    the same rows as its suite in `like` (facts read "checked") is folded as that one is:
    two runs of the same cases are checked for the price of one."""
    return not all((name in like and f.same_rows(like[name])) or f.folded() for name, f in facts.items())


def _facts_from(fh: IO[bytes], head: dict[str, Any], shown: str, options: dict[str, Options], *,
                lookup: bool) -> dict[str, SuiteFacts]:
    from evalh.gcpause import gc_paused

    out: dict[str, SuiteFacts] = {}
    counts = result_counts(head)
    scratch = bytearray()
    with gc_paused():  # arrays and strings only: nothing for the collector to find
        for name, _, block, count in iter_case_chunks(fh, head, shown, size=CHUNK_BYTES):
            facts = out.get(name)
            if facts is None:
                facts = out[name] = SuiteFacts(options.get(name, DEFAULT_OPTIONS), counts.get(name, 0), lookup=lookup)
            add_chunk(facts, name, block, count, shown, scratch)
    for name in head[HEADS]:
        if name not in out:
            out[name] = SuiteFacts(options.get(name, DEFAULT_OPTIONS))
    return out
