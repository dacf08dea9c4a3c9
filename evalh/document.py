"""The layout of a run document on disk: a header line, then one case result per line.

A run document is one JSON object (`evalh.run/1`, readable by any JSON parser, with the
keys and nesting it always had: `suites.NAME.cases` is every result of a suite). Since
the streamed layout, evalh writes it so that a reader can stop early or jump to one case:

```
{"schema":"evalh.run/1","run_id":…,…,"summary":{…},"suite_heads":{"gate":{…},…},
"suites":{
"gate":{"regime":…,"aggregate":{…},…,"cases":[
{"case_id":"a",…},
{"case_id":"b",…}
]},
"live":{…,"cases":[
…
]}
}}
```

- **line 1, the header**: every top-level member but `suites` (run facts, the config
  snapshot, the summary), and `suite_heads`: each suite without its cases (aggregates,
  arms, details, metrics, contrasts) and how many `results` it holds. Cut its trailing
  comma and close the brace and it is a JSON object of its own: `read_head` parses only
  this line, whatever the number of cases;
- then `suites`, each suite's members on the line that opens it and its `cases` one
  compact result per line. JSON escapes every newline inside a string, so each line is one
  result: a reader streams them (`iter_case_lines`) or keeps the byte offset of each
  (`case_offsets`) and reads one result with a seek (`read_case_at`).

Documents of the earlier layout (indented, two spaces a level) are read by the fallback
readers of `evalh.store` and `evalh.run_header`: nothing needs to be migrated.
"""

from __future__ import annotations

import mmap
import os
from array import array
from collections.abc import Callable, Iterable, Iterator
from io import BufferedIOBase
from typing import IO, Any, cast

import orjson

from evalh.errors import RunDocumentError

HEADS = "suite_heads"
"""The header member that holds each suite without its cases."""
_OPEN_TAIL = b',"cases":[\n'
_LINE_LIMIT = 1 << 30


def _object_open(value: dict[str, Any]) -> bytes:
    """`value` as a JSON object with its closing brace left off (members may follow)."""
    body = orjson.dumps(value)
    return body[:-1]


INDEX = "line_index"
"""The header member that gives the byte offset of every `EVERY`th result of each suite."""
EVERY = 1024
_WIDTH = 16
_UNSET = b"%*d" % (_WIDTH, -1)


def document_chunks(
    top: dict[str, Any],
    heads: dict[str, dict[str, Any]],
    cases: Callable[[str], Iterable[bytes]],
    *,
    scrub: Callable[[bytes], bytes] = lambda b: b,
    patches: list[tuple[int, bytes]] | None = None,
) -> Iterator[bytes]:
    """The document, in chunks of whole lines, each passed through `scrub` (secrets out).
    `top`: every top-level member but `suites` (in document order); `heads`: each suite's
    members but `cases`, in order, with the number of `results` it will give; `cases(name)`:
    that suite's results, each as compact JSON bytes (no newline), in document order.

    The header ends with `line_index`: the byte offset of every `EVERY`th result of each
    suite, written as -1 padded to a fixed width and known only once the results are
    written: `patches` (when given) receives (position, bytes) pairs that fill them in, for a
    writer that can seek back (`evalh.atomic.atomic_write_chunks`). A document left unpatched
    (printed as it is made) is valid JSON whose readers find the results by scanning."""
    for part in _parts(top, heads, cases, scrub, patches):
        assert isinstance(part, bytes)
        yield part


def document_layout(
    top: dict[str, Any],
    heads: dict[str, dict[str, Any]],
    lengths: Callable[[str], Iterable[int]],
    *,
    scrub: Callable[[bytes], bytes] = lambda b: b,
) -> tuple[list[tuple[int, bytes]], array[int], array[int]]:
    """The document `document_chunks` writes when `lengths(name)` gives the byte length of
    each of that suite's results (as scrubbed), without the results: the layout's own lines
    (the header, its line index filled in; each suite's opening and closing lines) as (byte
    offset, bytes), and each result line's byte offset and length (the result and its `,\n`
    or `\n`), suite after suite in document order. What a writer that places the results
    itself lays out first (`evalh.core.run.finish`)."""
    patches: list[tuple[int, bytes]] = []
    own: list[tuple[int, bytes]] = []
    offsets, sizes = array("q"), array("q")
    at = 0
    for part in _parts(top, heads, lengths, scrub, patches):
        if isinstance(part, int):
            offsets.append(at)
            sizes.append(part)
            at += part
        else:
            own.append((at, part))
            at += len(part)
    header = bytearray(own[0][1])
    for where, value in patches:
        header[where:where + len(value)] = value
    own[0] = (0, bytes(header))
    return own, offsets, sizes


def _parts(
    top: dict[str, Any],
    heads: dict[str, dict[str, Any]],
    cases: Callable[[str], Iterable[bytes]] | Callable[[str], Iterable[int]],
    scrub: Callable[[bytes], bytes],
    patches: list[tuple[int, bytes]] | None,
) -> Iterator[bytes | int]:
    """`document_chunks`, where a result given as its length (not its bytes) is that many
    bytes and its separator, given as their count (`document_layout`)."""
    counted: dict[str, int] = {}
    header = {k: v for k, v in top.items() if k not in ("suites", HEADS, INDEX)}
    header[HEADS] = {name: dict(head) for name, head in heads.items()}
    names = list(heads)
    first = scrub(_object_open(header)) + b',"' + INDEX.encode() + b'":{"every":%d,"offsets":{' % EVERY
    slots: dict[str, int] = {}  # suite → position of its first entry
    for k, name in enumerate(names):
        n = heads[name].get("results")
        entries = -(-n // EVERY) if isinstance(n, int) and n > 0 else 0
        first += (b"," if k else b"") + orjson.dumps(name) + b":["
        slots[name] = len(first)
        first += b",".join([_UNSET] * entries) + b"]"
    first += b"}},\n" + b'"suites":{\n'
    written = len(first)
    yield first
    for k, name in enumerate(names):
        head = {key: v for key, v in heads[name].items() if key not in ("cases", "results")}
        opened = _object_open(head)
        chunk = scrub(orjson.dumps(name) + b":" + opened + (_OPEN_TAIL if len(opened) > 1 else _OPEN_TAIL[1:]))
        written += len(chunk)
        yield chunk
        n = 0
        pending: bytes | int | None = None
        for line in cases(name):
            if pending is not None:
                pending = pending + b",\n" if isinstance(pending, bytes) else pending + 2
                written += pending if isinstance(pending, int) else len(pending)
                yield pending
            if n % EVERY == 0 and patches is not None and n // EVERY < _entries(heads[name]):
                patches.append((slots[name] + (n // EVERY) * (_WIDTH + 1), b"%*d" % (_WIDTH, written)))
            pending = scrub(line) if isinstance(line, bytes) else line
            n += 1
        if pending is not None:
            pending = pending + b"\n" if isinstance(pending, bytes) else pending + 1
            written += pending if isinstance(pending, int) else len(pending)
            yield pending
        counted[name] = n
        tail = b"]}" + (b",\n" if k < len(names) - 1 else b"\n")
        written += len(tail)
        yield tail
    yield b"}}\n"
    for name, head in heads.items():
        if head.get("results") is not None and head["results"] != counted.get(name):
            raise AssertionError(f"suite {name}: header says {head['results']} results, {counted.get(name)} written")


def _entries(head: dict[str, Any]) -> int:
    n = head.get("results")
    return -(-n // EVERY) if isinstance(n, int) and n > 0 else 0


def indexed_offset(head: dict[str, Any], suite: str, i: int) -> tuple[int, int] | None:
    """(byte offset of a result line at or before result `i` of `suite`, how many result
    lines to step over from there) from the header's `line_index`; None when the header has
    no usable index (an unpatched or older document: find the offsets by scanning)."""
    index = head.get(INDEX)
    if not isinstance(index, dict) or index.get("every") != EVERY:
        return None
    offsets = (index.get("offsets") or {}).get(suite)
    if not isinstance(offsets, list) or not 0 <= i // EVERY < len(offsets):
        return None
    at = offsets[i // EVERY]
    if not isinstance(at, int) or isinstance(at, bool) or at <= 0:
        return None
    return at, i % EVERY


def read_case_near(fd: int, offset: int, skip: int, shown: str) -> Any:
    """The raw result `skip` result lines after the one at `offset` (see `indexed_offset`);
    a `RunDocumentError` when the lines there are not results."""
    at = offset
    for _ in range(skip):
        at = _line_end(fd, at, shown)
    if os.pread(fd, 1, at) != b"{":
        raise RunDocumentError(f"{shown}: no result at byte {at}: the document's line index is wrong")
    return read_case_at(fd, at, shown)


def _line_end(fd: int, at: int, shown: str) -> int:
    if os.pread(fd, 1, at) != b"{":
        raise RunDocumentError(f"{shown}: no result at byte {at}: the document's line index is wrong")
    while True:
        block = os.pread(fd, 1 << 16, at)
        if not block:
            raise RunDocumentError(f"{shown}: not valid JSON: the document ends early (byte {at})")
        nl = block.find(b"\n")
        if nl >= 0:
            return at + nl + 1
        at += len(block)


def read_head(fh: IO[bytes]) -> dict[str, Any] | None:
    """The header of a document in the streamed layout, parsed from its first line (the
    file is left just after it); None when the document has another layout (the caller
    falls back to reading it whole, or by scanning)."""
    first = fh.readline(_LINE_LIMIT)
    if not first.endswith(b",\n") or not first.startswith(b"{"):
        return None
    try:
        head = orjson.loads(first[:-2] + b"}")
    except orjson.JSONDecodeError:
        return None
    if not isinstance(head, dict) or not isinstance(head.get(HEADS), dict):
        return None
    return head


def light_raw(head: dict[str, Any]) -> dict[str, Any]:
    """A raw run document from its header: every suite with an empty `cases` list."""
    raw = {k: v for k, v in head.items() if k != HEADS}
    raw["suites"] = {
        name: {**{k: v for k, v in h.items() if k != "results"}, "cases": []}
        for name, h in head[HEADS].items() if isinstance(h, dict)
    }
    return raw


def result_counts(head: dict[str, Any]) -> dict[str, int]:
    """Suite → how many results the header says it holds."""
    out = {}
    for name, h in head[HEADS].items():
        n = h.get("results") if isinstance(h, dict) else None
        out[name] = n if isinstance(n, int) else 0
    return out


def _check_opener(members: bytes, head: Any, name: str, where: str) -> None:
    """A suite's members on the line that opens it are the header's copy of them
    (`suite_heads`, less `results`): evalh reads the header, any other JSON parser the
    suite itself, and the two must not see two different runs."""
    try:
        opened = orjson.loads(members)
    except orjson.JSONDecodeError:
        raise RunDocumentError(f"{where}: not valid JSON in the run document's layout: suite {name!r} opens badly") from None
    kept = {k: v for k, v in head.items() if k != "results"} if isinstance(head, dict) else None
    if opened != kept:
        differ = sorted(k for k in {*opened, *(kept or {})} if opened.get(k) != (kept or {}).get(k))
        raise RunDocumentError(f"{where}: suite {name!r} differs from its copy in the header "
                               f"({', '.join(differ) or 'its members'}): the document was edited or damaged")


def iter_case_lines(fh: IO[bytes], head: dict[str, Any], shown: str) -> Iterator[tuple[str, int, bytes]]:
    """(suite, byte offset, result JSON) of every result, in document order, from a file
    positioned just after the header line (`read_head`). A line that is not where the layout
    puts it is a `RunDocumentError` naming the file and line."""
    for name, at, view, count in iter_case_chunks(fh, head, shown):
        for line in chunk_lines(view, count):
            yield name, at, line[:-1] if line.endswith(b",") else line
            at += len(line) + 1


def chunk_lines(view: memoryview, count: int) -> list[bytes]:
    """The `count` lines of a chunk (`iter_case_chunks`), each without its newline (a result
    line's comma kept: a line is one byte longer than its result, plus the newline)."""
    block = bytes(view)
    if count == 1:
        return [block.removesuffix(b"\n")]
    lines = block.split(b"\n")
    lines.pop()  # what follows the last newline: nothing
    return lines


def _linked_lines(buf: bytearray, i: int, stop: int) -> int:
    """How many lines buf[i:stop] holds when it is whole lines, each but the last ending
    with `,` and followed by one beginning with `{` (0 when it is not): what
    `buf.count(b"\n") == buf.count(b",\n{") + 1` checks, with the newlines found by
    memchr (`find` of one byte) and only their neighbours looked at. Two counts look at
    every byte, each slower than memchr: 1.5 s of CPU over a 930 MB document."""
    find = buf.find
    n = 0
    nl = find(0x0A, i, stop)
    while nl >= 0:
        n += 1
        nxt = nl + 1
        if nxt == stop:
            return n
        if nl == i or buf[nl - 1] != 0x2C or buf[nxt] != 0x7B:  # `,` before, `{` after
            return 0
        nl = find(0x0A, nxt, stop)
    return 0


def iter_case_chunks(
    fh: IO[bytes], head: dict[str, Any], shown: str, *, size: int = 1 << 20
) -> Iterator[tuple[str, int, memoryview, int]]:
    """`iter_case_lines` about `size` bytes at a time: (suite, byte offset, consecutive
    result lines of that suite as they are in the file, how many). Less its trailing comma,
    a chunk between brackets is a JSON array: a reader parses a thousand results with one
    call. A chunk is a view of the reader's buffer, valid until the next one is asked for
    (the buffer is reused: a million results cost no million allocations).

    The layout is checked as line by line (a JSON string holds no raw newline, so a newline
    is a line break): every line a result until the suite's end, each ending with a comma
    but its last; where that does not hold, the lines are read one by one to name the line
    that breaks it."""
    names = list(head[HEADS])
    pos = fh.tell()  # the file offset of buf[i]
    number = 1  # the line number of the last line read
    buf = bytearray(2 * size)
    i = end = 0  # buf[i:end]: bytes read, not yet consumed (whole lines, but at the file's end)

    def fill() -> bool:
        """More bytes after buf[i:end] (which move to the front), ending at a line break
        unless the file ends first; False at the end of the file."""
        nonlocal buf, i, end
        rest = end - i
        if len(buf) < rest + size:  # a new buffer: views of the old one may still be held
            buf = buf[i:end] + bytearray(size)
        else:
            buf[:rest] = buf[i:end]
        i, end = 0, rest
        with memoryview(buf) as view:
            got = cast(BufferedIOBase, fh).readinto(view[rest:rest + size])
        if not got:
            return False
        end = rest + got
        if buf[end - 1] != 0x0A:  # complete the last line
            tail = fh.readline()
            if end + len(tail) > len(buf):
                buf = buf[:end] + bytearray(len(tail) + size)
            buf[end:end + len(tail)] = tail
            end += len(tail)
        return True

    def line() -> bytes:
        nonlocal i, pos, number
        nl = buf.find(b"\n", i, end)
        if nl < 0 and fill():
            nl = buf.find(b"\n", i, end)
        stop = nl + 1 if nl >= 0 else end
        data = bytes(buf[i:stop])
        i, pos, number = stop, pos + len(data), number + 1
        return data

    def bad(what: str) -> RunDocumentError:
        return RunDocumentError(f"{shown}:{number}: not valid JSON in the run document's layout: expected {what}")

    if line() != b'"suites":{\n':
        raise bad('"suites":{')
    for k, name in enumerate(names):
        opener = line()
        key = orjson.dumps(name) + b":"
        if not (opener.startswith(key + b"{") and opener.endswith(b'"cases":[\n')):
            raise bad(f"the start of suite {name!r}")
        _check_opener(opener[len(key):-len(_OPEN_TAIL)] + b"}" if opener.endswith(_OPEN_TAIL) else b"{}",
                      head[HEADS][name], name, f"{shown}:{number}")
        n = 0
        more = True  # a result may come next: none yet, or the last one ended with a comma
        close = b"]},\n" if k < len(names) - 1 else b"]}\n"
        while True:
            if i == end:
                fill()
            if more and buf.startswith(b"{", i, end):
                # Whole result lines, each but the last followed by another: a chunk. Tried
                # on all that is read, then up to the suite's end when it is in there.
                stop = end
                for _ in range(2):
                    lines = _linked_lines(buf, i, stop)
                    if lines:
                        break
                    at = buf.find(b"\n]", i, stop)
                    if at < 0:
                        break
                    stop = at + 1
                if lines:
                    more = buf.endswith(b",\n", i, stop)
                    yield name, pos, memoryview(buf)[i:stop], lines
                    i, pos, number, n = stop, pos + (stop - i), number + lines, n + lines
                    continue
                while more and buf.startswith(b"{", i, end):  # a line lacks its comma or newline:
                    at = pos  # one by one, up to it
                    data = line()
                    more = data.endswith(b",\n")
                    n += 1
                    yield name, at, memoryview(data), 1
                continue
            data = line()
            if data == close and (not more or n == 0):
                break
            raise bad(f"a result of suite {name!r} or its end")
        expected = head[HEADS][name].get("results") if isinstance(head[HEADS][name], dict) else None
        if isinstance(expected, int) and expected != n:
            raise RunDocumentError(f"{shown}:{number}: suite {name!r} holds {n} results, its header says {expected}")
    if line() != b"}}\n":
        raise bad("the end of the document")
    if buf[i:end].strip():
        raise bad("nothing after the end of the document")
    while rest := fh.read(1 << 16):
        if rest.strip():
            raise bad("nothing after the end of the document")


def case_offsets(fh: IO[bytes], head: dict[str, Any], shown: str) -> dict[str, array[int]]:
    """Suite → the byte offset of each of its results, in document order (one pass over the
    lines, none of them parsed)."""
    out: dict[str, array[int]] = {name: array("q") for name in head[HEADS]}
    for name, at, _ in iter_case_lines(fh, head, shown):
        out[name].append(at)
    return out


def line_offsets(fd: int, head: dict[str, Any], shown: str) -> dict[str, array[int]]:
    """`case_offsets` without reading the lines into Python: the newlines are found in a
    memory map of the file (open at `fd`), so the offsets of a million results cost a
    fraction of a second; the lines themselves are not parsed."""
    names = list(head[HEADS])
    out: dict[str, array[int]] = {name: array("q") for name in names}
    if os.fstat(fd).st_size == 0:
        raise RunDocumentError(f"{shown}: not valid JSON: the document is empty")
    with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as m:
        def end_of(at: int) -> int:
            nl = m.find(b"\n", at)
            if nl < 0:
                raise RunDocumentError(f"{shown}: not valid JSON: the document ends early (byte {at})")
            return nl + 1

        pos = end_of(0)  # the header line
        if m[pos:pos + 11] != b'"suites":{\n':
            raise RunDocumentError(f"{shown}: not valid JSON in the run document's layout at byte {pos}")
        pos += 11
        for name in names:
            opener = orjson.dumps(name) + b":{"
            if m[pos:pos + len(opener)] != opener:
                raise RunDocumentError(f"{shown}: the start of suite {name!r} is not where the layout puts it (byte {pos})")
            pos = end_of(pos)
            offsets = out[name]
            while True:
                first = m[pos:pos + 1]
                if first == b"{":
                    offsets.append(pos)
                    pos = end_of(pos)
                elif first == b"]":
                    pos = end_of(pos)
                    break
                else:
                    raise RunDocumentError(f"{shown}: a result of suite {name!r} or its end was expected at byte {pos}")
    return out


def read_case_at(fd: int, offset: int, shown: str) -> Any:
    """The raw result whose line starts at `offset` (see `case_offsets`)."""
    chunks = []
    at = offset
    while True:
        block = os.pread(fd, 1 << 16, at)
        if not block:
            break
        end = block.find(b"\n")
        if end >= 0:
            chunks.append(block[:end])
            break
        chunks.append(block)
        at += len(block)
    data = b"".join(chunks)
    if data.endswith(b","):
        data = data[:-1]
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RunDocumentError(f"{shown}: the result at byte {offset}: not valid JSON: {exc}") from None
