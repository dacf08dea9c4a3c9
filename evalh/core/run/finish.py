"""A complete run's document made from its journal without a second full copy on disk.

The document holds every result the journal holds, in another order (the cases run
shuffled; the document lists them in dataset order), so writing it beside the journal
(`RunStore.write`) needs twice the space of the results at its end. A large complete run
(a journal of `MIN_JOURNAL` bytes or more) is finished instead by moving its results out of
the journal, which shrinks from its end as they go:

1. **Lay out** the document in memory: where each result line goes (`document_layout`:
   the same bytes `RunStore.write` would write), cut into `SEGMENTS` segments of whole
   lines. Each segment gets a region of a staging file (`.<run_id>.finish-stage`), sized
   to hold exactly its lines, each after a 12-byte (offset, length) header. The layout's
   own lines (the header, each suite's opening and closing lines) are staged now; the
   document (`.<run_id>.finish-doc`) is created empty at its full size (a sparse file).
2. **Commit**: the plan (the segments, the regions, and for each result its journal line
   and its place in the document: 24 bytes a result) is written atomically
   (`.<run_id>.finish`). Before it exists, nothing was taken from the journal: a kill
   leaves the run as it was (the staged files are swept).
3. **Distribute**, a chunk of the journal at a time from its end (`CHUNKS`): its result lines
   are appended to their segments' regions, the staging file is synced, then the journal
   is truncated below them. The journal plus the staging file hold every result, once
   (the staged lines lack the journal's `{"suite":…,"result":` wrapper).
4. **Assemble**, one segment at a time from the last: its region is read, its lines are
   sorted by their place and must tile the segment exactly, the segment is written into
   the document and synced, then the staging file is truncated below the region.
5. The document is renamed into place; the journal, the plan and the staging file go.

At every moment each result is in the journal, the staging file or the document, and
what holds it is synced before any other copy is dropped. A run killed after step 2 is
completed by `evalh run --resume` (`complete_pending`): the plan says where everything is
(the journal's size says how far step 3 went, the staging file's how far step 4 did), and
the same steps continue. The document is the one the uninterrupted finish would have
written, byte for byte.

Disk: at most the journal's size (or the document's, with its 12-byte headers), plus the
plan, plus one chunk (1/64 of the journal, at most 16 MiB) or one segment (1/32 of the
document) in flight — about 1.1 × the document for a run of instant cases
(bench/finish_disk_bench.py). The document's results are the journal's lines
as they are: when a secret the run's scrub knows occurs in the journal (one registered
late), or a line is not in the journal's own form, or the journal is small, the document
is written beside the journal as before (`RunStore.write`).
"""

from __future__ import annotations

import bisect
import contextlib
import os
import struct
import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from evalh.atomic import atomic_write_chunks, fsync_dir, write_all, write_failed
from evalh.core.run.retained import JournalLines
from evalh.document import document_layout
from evalh.errors import RunDocumentError
from evalh.models import Run
from evalh.redact import secret_env_values, secret_forms
from evalh.store import RunStore, run_parts

MIN_JOURNAL = 64 << 20
"""A journal smaller than this is finished by writing the document beside it (a few
fsyncs and files saved; the peak is at most twice this)."""
CHUNK = 16 << 20
CHUNKS = 64
"""The journal is moved to the staging file in `CHUNKS` chunks of at most `CHUNK` bytes (a
chunk is on disk twice until the staging file is synced and the journal truncated)."""
SEGMENTS = 32
SEGMENT_MIN = 1 << 20
"""The document is assembled in `SEGMENTS` segments of at least this many bytes."""
_READ = 4 << 20  # bytes of the journal read at a time to check it
_ENTRY = struct.Struct("<qI")  # a staged line's place in the document and its length
_RESULT = b',"result":'
_SUITE = b'{"suite":'
_VERSION = 1


@dataclass
class _Plan:
    """Where everything of a finish is: the document's segments (`bounds`, byte offsets in
    the document, first 0, last its size), each segment's region of the staging file
    (`regions`, same count), and for each result, in journal order, its journal line's
    offset and its line's place and length in the document."""

    bounds: list[int]
    regions: list[int]
    j_at: array[int]
    d_at: array[int]
    d_len: array[int]

    def dump(self) -> list[bytes]:
        head = {"evalh_finish": _VERSION, "bounds": self.bounds, "regions": self.regions,
                "results": len(self.j_at), "byteorder": sys.byteorder}
        return [orjson.dumps(head) + b"\n", self.j_at.tobytes(), self.d_at.tobytes(), self.d_len.tobytes()]

    @classmethod
    def load(cls, path: Path) -> _Plan:
        data = path.read_bytes()
        nl = data.find(b"\n")
        try:
            head = orjson.loads(data[:nl])
            n = head["results"]
            ok = head.get("evalh_finish") == _VERSION and head.get("byteorder") == sys.byteorder
        except (orjson.JSONDecodeError, KeyError, TypeError):
            ok = False
        if nl < 0 or not ok or len(data) != nl + 1 + 24 * n:
            raise RunDocumentError(f"{path}: not the plan of a finish this evalh writes")
        arrays = []
        for k in range(3):
            column = array("q")
            column.frombytes(data[nl + 1 + 8 * n * k:nl + 1 + 8 * n * (k + 1)])
            arrays.append(column)
        return cls(head["bounds"], head["regions"], *arrays)

    def segment(self, d_at: int) -> int:
        return bisect.bisect_right(self.bounds, d_at) - 1


def finish_from_journal(store: RunStore, run: Run, lines: JournalLines) -> bool:
    """Write complete `run`'s document from its journal as the module docstring says, the
    journal removed; False (nothing done) when it is to be written beside the journal
    (`RunStore.write`) instead."""
    journal = lines.path
    try:
        if journal.stat().st_size < MIN_JOURNAL:
            return False
    except OSError:
        return False
    lock = store.lock(run.run_id, wait_s=30)  # held by the run already: re-entrant
    try:
        laid = _lay_out(run, lines)
        if laid is None:
            return False
        plan, staged, prefixes, suite_of, j_len = laid
        if not _journal_as_laid_out(journal, plan, prefixes, suite_of, j_len):
            return False
        plan_path, stage, doc = store.finish_paths(run.run_id)
        cursors = _stage(plan, staged, stage, doc)
        try:
            atomic_write_chunks(plan_path, plan.dump())  # the commit: from here on, forward
        except BaseException:
            _remove(stage, doc)
            raise
        _carry_on(store, run.run_id, plan, cursors)
    finally:
        lock.release()
    return True


def complete_pending(store: RunStore, run_id: str) -> Path | None:
    """Finish the document of run `run_id` that a kill stopped while it was made from the
    journal (the caller holds the run); its path, or None when no such finish is pending."""
    plan_path, stage, doc = store.finish_paths(run_id)
    if not plan_path.is_file():
        return None
    plan = _Plan.load(plan_path)
    if doc.is_file():
        _carry_on(store, run_id, plan)
    elif store.path_for(run_id).is_file():  # killed after the rename: only the leftovers
        _remove(store.journal_path(run_id), stage, plan_path)
    else:
        raise RunDocumentError(f"{plan_path}: the document it was making ({doc.name}) is gone; "
                               "the results it had taken from the journal are in "
                               f"{stage.name}: cannot finish run {run_id}")
    return store.path_for(run_id)


def _lay_out(run: Run, lines: JournalLines) -> tuple[_Plan, list[tuple[int, bytes]], list[bytes], array[int], array[int]] | None:
    """The plan, the layout's own lines (place, bytes), each suite's journal prefix
    (`{"suite":…,"result":`), and each result's suite and journal line length in journal
    order; None for a run with no result. Held per result: the plan's 24 bytes and 16 more,
    and while the rows are sorted into journal order a list of one integer each."""
    names = list(run.suites)
    prefixes = [_SUITE + orjson.dumps(name) + _RESULT for name in names]
    kept = [lines.suites.get(name) for name in names]
    n = sum(len(k) for k in kept if k is not None)
    if not n:
        return None

    def lengths(name: str) -> Iterator[int]:
        k = names.index(name)
        rows = kept[k]
        if rows is not None:
            size, wrap = rows.size, len(prefixes[k]) + 2
            for j in rows.sorted_rows():
                yield size[j] - wrap

    top, heads, scrub = run_parts(run, lines)
    own, d_at, d_len = document_layout(top, heads, lengths, scrub=scrub)
    total = (own[-1][0] + len(own[-1][1])) if own else 0
    # segments of whole lines (the layout's and the results', in document order)
    target = max(SEGMENT_MIN, -(-total // SEGMENTS))
    bounds, regions = [0], [0]
    fill = region = 0
    k = 0
    for r in range(n + 1):
        while k < len(own) and (r == n or own[k][0] < d_at[r]):
            at, data = own[k]
            if fill >= target:
                bounds.append(at)
                regions.append(regions[-1] + region)
                fill = region = 0
            fill += len(data)
            region += _ENTRY.size + len(data)
            k += 1
        if r < n:
            if fill >= target:
                bounds.append(d_at[r])
                regions.append(regions[-1] + region)
                fill = region = 0
            fill += d_len[r]
            region += _ENTRY.size + d_len[r]
    bounds.append(total)
    regions.append(regions[-1] + region)
    # journal order: what the journal is consumed in
    j_at, suite_of = array("q"), array("I")
    for k, rows in enumerate(kept):
        if rows is not None:
            j_at.extend(rows.at[j] for j in rows.sorted_rows())
            suite_of.extend([k] * len(rows))
    order = array("q", (v % n for v in sorted(j_at[i] * n + i for i in range(n))))

    def journal_length(i: int) -> int:  # prefix, result, `}\n`; the document's line: result, `,\n` or `\n`
        last = i + 1 == n or suite_of[i + 1] != suite_of[i]
        return len(prefixes[suite_of[i]]) + d_len[i] - (1 if last else 2) + 2

    j_len = array("q", (journal_length(i) for i in order))
    plan = _Plan(bounds, regions, array("q", (j_at[i] for i in order)), array("q", (d_at[i] for i in order)),
                 array("q", (d_len[i] for i in order)))
    return plan, own, prefixes, array("I", (suite_of[i] for i in order)), j_len


def _journal_as_laid_out(journal: Path, plan: _Plan, prefixes: list[bytes], suite_of: array[int],
                         j_len: array[int]) -> bool:
    """Whether each result's journal line is `{"suite":…,"result":` + its document line's
    result + `}` (the layout took their lengths from that), and no secret the document's
    scrub knows occurs in the journal (then the document's results are the journal's bytes)."""
    forms = secret_forms(secret_env_values())
    j_at = plan.j_at
    n = len(j_at)
    fd = os.open(journal, os.O_RDONLY | os.O_CLOEXEC)
    try:
        first = 0
        while first < n:
            last = first
            while last + 1 < n and j_at[last + 1] + j_len[last + 1] - j_at[first] <= _READ:
                last += 1
            lo, hi = j_at[first], j_at[last] + j_len[last]
            buf = os.pread(fd, hi - lo, lo)
            if len(buf) != hi - lo or any(form in buf for form in forms):
                return False
            for r in range(first, last + 1):
                at = j_at[r] - lo
                if not (buf.startswith(prefixes[suite_of[r]], at) and buf.startswith(b"}\n", at + j_len[r] - 2)):
                    return False
            first = last + 1
    finally:
        os.close(fd)
    return True


def _chunks(plan: _Plan, remaining: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """The rows below `remaining`, from the last down, in runs spanning a chunk of the
    journal (`CHUNKS`): (the run's first byte, its end — `end` for the first run —, its
    first row, its last row)."""
    j_at = plan.j_at
    chunk = max(1, min(CHUNK, end // CHUNKS))
    r, hi = remaining - 1, end
    while r >= 0:
        s = r
        while s > 0 and hi - j_at[s - 1] <= chunk:
            s -= 1
        yield j_at[s], hi, s, r
        hi, r = j_at[s], s - 1


def _stage(plan: _Plan, staged: list[tuple[int, bytes]], stage: Path, doc: Path) -> list[int]:
    """The staging file with each segment's region empty but for the layout's own lines,
    and the document as a sparse file of its size, both synced; where each region's lines
    end."""
    try:
        fd = os.open(stage, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
        try:
            os.ftruncate(fd, plan.regions[-1])
            cursors = list(plan.regions[:-1])
            for at, data in staged:
                s = plan.segment(at)
                os.lseek(fd, cursors[s], os.SEEK_SET)
                write_all(fd, _ENTRY.pack(at, len(data)) + data)
                cursors[s] += _ENTRY.size + len(data)
            os.fsync(fd)
        finally:
            os.close(fd)
        fd = os.open(doc, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
        try:
            os.ftruncate(fd, plan.bounds[-1])
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        _remove(stage, doc)
        raise write_failed(stage, exc) from None
    return cursors


def _carry_on(store: RunStore, run_id: str, plan: _Plan, cursors: list[int] | None = None) -> None:
    """Steps 3 to 5 from wherever the files say they stopped (`cursors`: where each
    region's staged lines end, when known)."""
    journal = store.journal_path(run_id)
    plan_path, stage, doc = store.finish_paths(run_id)
    try:
        sfd = os.open(stage, os.O_RDWR | os.O_CLOEXEC)
        try:
            try:
                jfd = os.open(journal, os.O_RDWR | os.O_CLOEXEC)
            except FileNotFoundError:
                jfd = -1
            try:
                jsize = os.fstat(jfd).st_size if jfd >= 0 else 0
                remaining = bisect.bisect_left(plan.j_at, jsize)  # rows still in the journal
                if remaining:
                    cursors = cursors or _cursors(sfd, plan, remaining)
                    _distribute(journal, jfd, sfd, plan, remaining, jsize, cursors)
            finally:
                if jfd >= 0:
                    os.close(jfd)
            dfd = os.open(doc, os.O_RDWR | os.O_CLOEXEC)
            try:
                _assemble(stage, sfd, dfd, plan)
                os.fsync(dfd)
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)
        os.replace(doc, store.path_for(run_id))
        fsync_dir(doc.parent)
    except OSError as exc:
        raise write_failed(doc, exc) from None
    _remove(journal, stage, plan_path)


def _remove(*paths: Path) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


def _cursors(sfd: int, plan: _Plan, remaining: int) -> list[int]:
    """Where each region's staged lines end. A fresh finish has staged only the layout's
    own lines; after a kill, what a region holds ends at its first line that is not whole
    or whose result the journal still holds (staged by the chunk the kill cut short: it is
    staged again)."""
    pending = set(plan.d_at[:remaining])
    cursors = []
    for s in range(len(plan.bounds) - 1):
        lo, hi = plan.bounds[s], plan.bounds[s + 1]
        data = os.pread(sfd, plan.regions[s + 1] - plan.regions[s], plan.regions[s])
        pos = 0
        while pos + _ENTRY.size <= len(data):
            at, size = _ENTRY.unpack_from(data, pos)
            stop = pos + _ENTRY.size + size
            if not (size and lo <= at and at + size <= hi and stop <= len(data)
                    and data[stop - 1] == 0x0A and at not in pending):
                break
            pos = stop
        cursors.append(plan.regions[s] + pos)
    return cursors


def _distribute(journal: Path, jfd: int, sfd: int, plan: _Plan, remaining: int, jsize: int,
                cursors: list[int]) -> None:
    """Step 3 for the rows below `remaining` (those the journal still holds)."""
    j_at, d_at, d_len, bounds = plan.j_at, plan.d_at, plan.d_len, plan.bounds
    pack, find, cut = _ENTRY.pack, bisect.bisect_right, len(_RESULT)
    seps = (b"", b"\n", b",\n")
    for lo, hi, first, last in _chunks(plan, remaining, jsize):
        buf = os.pread(jfd, hi - lo, lo)
        view = memoryview(buf)
        batches: dict[int, list[bytes | memoryview]] = {}
        for r in range(first, last + 1):
            at = j_at[r] - lo
            nl = buf.find(b"\n", at)
            start = buf.find(_RESULT, at, nl) + cut
            sep = d_len[r] - (nl - 1 - start)
            if nl < 0 or start < cut or not buf.startswith(_SUITE, at) or buf[nl - 1] != 0x7D or sep not in (1, 2):
                raise RunDocumentError(f"{journal}: the journal line at byte {j_at[r]} is not the result "
                                       "written there: the journal was changed while its document was made")
            s = find(bounds, d_at[r]) - 1
            entries = batches.get(s)
            if entries is None:
                entries = batches[s] = []
            entries += (pack(d_at[r], d_len[r]), view[start:nl - 1], seps[sep])
        for s, entries in batches.items():
            data = b"".join(entries)
            if cursors[s] + len(data) > plan.regions[s + 1]:
                raise RunDocumentError(f"{journal}: more results than its run's document holds")
            os.lseek(sfd, cursors[s], os.SEEK_SET)
            write_all(sfd, data)
            cursors[s] += len(data)
        os.fsync(sfd)
        os.ftruncate(jfd, lo)


def _assemble(stage: Path, sfd: int, dfd: int, plan: _Plan) -> None:
    """Step 4 for the regions the staging file still holds."""
    held = os.fstat(sfd).st_size
    for s in reversed(range(len(plan.bounds) - 1)):
        lo, hi = plan.bounds[s], plan.bounds[s + 1]
        if plan.regions[s + 1] > held:
            continue  # in the document already
        data = os.pread(sfd, plan.regions[s + 1] - plan.regions[s], plan.regions[s])
        view = memoryview(data)
        entries = []
        pos = 0
        while pos + _ENTRY.size <= len(data):
            at, size = _ENTRY.unpack_from(data, pos)
            if not size:
                break
            entries.append((at, pos + _ENTRY.size, size))
            pos += _ENTRY.size + size
        entries.sort()
        out = []
        expected = lo
        for at, start, size in entries:
            if at != expected:
                break
            out.append(view[start:start + size])
            expected += size
        if pos != len(data) or expected != hi or len(out) != len(entries):
            raise RunDocumentError(f"{stage}: the results staged for bytes {lo}-{hi} of the document "
                                   "do not make them up: cannot finish the document")
        os.lseek(dfd, lo, os.SEEK_SET)
        write_all(dfd, b"".join(out))
        os.fsync(dfd)
        os.ftruncate(sfd, plan.regions[s])
        held = plan.regions[s]
