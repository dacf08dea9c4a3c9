"""Datasets: JSONL (one case a line) or a JSON array, validated case by case.

Every rejection names the file and the line (for a JSON array, the item index) and exits 2:
a malformed line, a byte that is not UTF-8, a case that does not validate, a duplicate id, a
group that crosses splits or sampling methods (`metadata.sampling`), an integer beyond 64 bits (JSON parsers round it to a float, and
evalh keeps every value exact or refuses it: write such a number as a string), a value nested
deeper than a digest can be taken of.
"""

from __future__ import annotations

import hashlib
import json
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import orjson
from pydantic import ValidationError

from evalh.errors import DatasetError, first_validation_error
from evalh.models import Case


class CaseList(Sequence[Case]):
    """A dataset's cases, kept as compact JSON (one buffer, an offset per case) and made a
    `Case` model again when one is read: a validated model costs ~1.9 KB, its JSON what its
    JSONL line does (~70 B for a short case), so a run of a million cases holds tens of MB
    of them, not gigabytes. Each read validates anew (the record was validated when the
    dataset loaded): a read gives an equal model, not the same object."""

    __slots__ = ("_data", "_ends")

    def __init__(self, data: bytes | bytearray, ends: array[int]) -> None:
        self._data = data
        self._ends = ends

    @classmethod
    def of(cls, records: Iterator[bytes] | Sequence[bytes]) -> CaseList:
        ends: array[int] = array("q")
        buf = bytearray()
        for raw in records:
            buf += raw
            ends.append(len(buf))
        return cls(buf, ends)

    def __len__(self) -> int:
        return len(self._ends)

    def raw(self, i: int) -> bytes:
        """Case `i`'s record as compact JSON."""
        if i < 0:
            i += len(self._ends)
        start = self._ends[i - 1] if i > 0 else 0
        return bytes(self._data[start:self._ends[i]])

    @overload
    def __getitem__(self, i: int) -> Case: ...
    @overload
    def __getitem__(self, i: slice) -> list[Case]: ...
    def __getitem__(self, i: int | slice) -> Case | list[Case]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if not -len(self._ends) <= i < len(self._ends):
            raise IndexError("case index out of range")
        return Case.model_validate(orjson.loads(self.raw(i)))

    def __iter__(self) -> Iterator[Case]:
        for i in range(len(self._ends)):
            yield self[i]

    def ids(self) -> list[str]:
        """Every case's id, in order (read from the records, no model made)."""
        return [orjson.loads(self.raw(i))["id"] for i in range(len(self._ends))]

    def where(self, keep: Callable[[Case], bool]) -> CaseList:
        """The cases `keep` holds, in order, kept as compactly."""
        return CaseList.of(self.raw(i) for i, case in enumerate(self) if keep(case))


def case_ids(cases: Sequence[Case]) -> list[str]:
    """The ids of `cases`, in order."""
    return cases.ids() if isinstance(cases, CaseList) else [c.id for c in cases]


@dataclass(frozen=True)
class Dataset:
    path: Path
    cases: Sequence[Case]
    """A `CaseList` for a dataset loaded from a file; a plain list elsewhere (a rejudge's
    stored cases, cases made in memory)."""
    known_sha256: str | None = field(default=None, repr=False, compare=False, kw_only=True)
    """`sha256` as loading computed it, from the models it validated anyway (made again
    from the compact records, each case would cost a second validation)."""

    @property
    def sha256(self) -> str:
        """Digest of the dataset: SHA-256 over its cases' digests, in file order."""
        if self.known_sha256 is not None:
            return self.known_sha256
        h = hashlib.sha256()
        for case in self.cases:
            h.update(case.digest.encode())
            h.update(b"\n")
        return h.hexdigest()


_LONG_DIGITS = re.compile(r"\d{19,}")
"""An integer literal this long may not fit 64 bits (2^63 has 19 digits): checked exactly."""
_INT_MIN, _UINT_MAX = -(2**63), 2**64 - 1


def _big_int(text: str) -> str | None:
    """The first integer literal of the JSON `text` outside 64 bits, as written, or None.
    (orjson reads such a literal as a float, silently rounded; the standard parser keeps it.)"""
    if not _LONG_DIGITS.search(text):
        return None
    found: list[str] = []

    def check(literal: str) -> int:
        value = int(literal)
        if not found and not _INT_MIN <= value <= _UINT_MAX:
            found.append(literal)
        return 0

    try:
        json.loads(text, parse_int=check)
    except (ValueError, RecursionError):
        return None  # orjson has judged the syntax already
    return found[0] if found else None


def _check_value(shown: str, text: str, value: object) -> None:
    """Refuse what would change or break on the way to a digest: integers beyond 64 bits and
    nesting deeper than the canonical JSON encoder takes."""
    literal = _big_int(text)
    if literal is not None:
        short = literal if len(literal) <= 40 else literal[:37] + "..."
        raise DatasetError(f"{shown}: integer {short} does not fit in 64 bits and would be rounded: "
                           "write it as a string")
    try:
        orjson.dumps(value)
    except TypeError as exc:  # "Recursion limit reached"
        raise DatasetError(f"{shown}: value cannot be stored: {exc} (nested too deeply)") from None


def _line_of(data: bytes, offset: int) -> tuple[int, int]:
    """(line, column), 1-based, of a byte offset."""
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def _first_error(exc: ValidationError) -> str:
    loc, msg = first_validation_error(exc)
    return f"{loc or 'case'}: {msg}"


def _records(path: Path, text: str) -> Iterator[tuple[int, object]]:
    """(line number, parsed value) pairs, one at a time for JSONL (a million-line file is not
    held parsed). A JSON array gives item positions as 'lines'."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise DatasetError(f"{path}: not valid JSON: {exc}") from None
        literal = _big_int(text)
        if literal is not None:
            where = text.find(literal)
            line = text.count("\n", 0, where) + 1
            _check_value(f"{path}:{line}", literal, None)
        if not isinstance(items, list):
            raise DatasetError(f"{path}: not valid JSON: expected an array of cases")
        for i, item in enumerate(items):
            _check_value(f"{path}: item {i + 1}", "", item)
        yield from ((i + 1, item) for i, item in enumerate(items))
        return
    yield from _jsonl_values(str(path), text.splitlines())


def _jsonl_values(shown: str, lines: Iterable[str]) -> Iterator[tuple[int, object]]:
    """(line number, parsed value) of each JSONL line of `lines` (numbered from 1), blank
    lines and `//` comments skipped; a malformed line is a `DatasetError` naming it."""
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip() or raw.lstrip().startswith("//"):
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise DatasetError(f"{shown}:{lineno}: malformed JSON line: {exc}") from None
        _check_value(f"{shown}:{lineno}", raw, value)
        yield lineno, value


def case_positions(path: Path, shown: str) -> list[str]:
    """Where each case of a dataset is, in file order: `file:line` (JSONL) or `file: item i`
    (a JSON array), named as `shown` — for messages about a case after it loaded."""
    text = path.read_text(encoding="utf-8")
    array = text.lstrip().startswith("[")
    return [f"{shown}: item {line}" if array else f"{shown}:{line}" for line, _ in _records(Path(shown), text)]


def load_dataset(path: Path | str, *, display: str | None = None) -> Dataset:
    """Load and validate a dataset. `display` is how the path is named in errors."""
    path = Path(path)
    shown = display or str(path)
    try:
        with path.open("rb") as fh:
            start = fh.read(1 << 16)
            while start and not start.strip() and (more := fh.read(1 << 16)):
                start = more
            array_file = start.lstrip().startswith(b"[")
            if array_file:  # a JSON array is parsed whole
                fh.seek(0)
                data = fh.read()
    except FileNotFoundError:
        raise DatasetError(f"{shown}: dataset not found") from None
    except OSError as exc:
        raise DatasetError(f"{shown}: cannot read: {exc}") from None
    if array_file:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line, column = _line_of(data, exc.start)
            raise DatasetError(
                f"{shown}:{line}: not valid UTF-8: byte 0x{data[exc.start]:02x} at column {column} "
                f"({exc.reason}); save the file as UTF-8"
            ) from None
        return _cases(path, shown, _records(Path(shown), text), "item")
    return _cases(path, shown, _jsonl_records(path, shown), "")


def _jsonl_records(path: Path, shown: str) -> Iterator[tuple[int, object]]:
    """`_records` of a JSONL file read a line at a time (a million-case file is never held
    whole, as text or parsed), numbered as `str.splitlines` of the whole text numbers them."""

    def lines() -> Iterator[str]:
        try:
            with path.open("rb") as fh:
                for n, chunk in enumerate(fh, start=1):
                    body = chunk[:-1] if chunk.endswith(b"\n") else chunk
                    try:
                        text = body.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise DatasetError(
                            f"{shown}:{n}: not valid UTF-8: byte 0x{body[exc.start]:02x} at column {exc.start + 1} "
                            f"({exc.reason}); save the file as UTF-8"
                        ) from None
                    yield from text.splitlines() or [""]
        except OSError as exc:
            raise DatasetError(f"{shown}: cannot read: {exc}") from None

    return _jsonl_values(shown, lines())


def _cases(path: Path, shown: str, records: Iterator[tuple[int, object]], where: str) -> Dataset:
    buf, ends = bytearray(), array("q")  # each validated case's record, compact (see CaseList)
    digests = hashlib.sha256()  # Dataset.sha256, from the models validated here
    seen: dict[str, int] = {}
    group_split: dict[str, tuple[str | None, int]] = {}
    group_sampling: dict[str, tuple[Any, int]] = {}
    for lineno, record in records:
        pos = f"{shown}:{where}{lineno}" if not where else f"{shown}: item {lineno}"
        if not isinstance(record, dict):
            raise DatasetError(f"{pos}: a case must be a JSON object")
        try:
            case = Case.model_validate(record)
        except ValidationError as exc:
            raise DatasetError(f"{pos}: {_first_error(exc)}") from None
        if case.id in seen:
            raise DatasetError(f"{pos}: duplicate case id {case.id!r} (first at {where or 'line'} {seen[case.id]})")
        seen[case.id] = lineno
        group = case.metadata.group
        if group is not None:
            split = case.metadata.split
            if group in group_split and group_split[group][0] != split:
                first_split, first_line = group_split[group]
                raise DatasetError(
                    f"{pos}: group {group!r} crosses splits: {split!r} here, "
                    f"{first_split!r} at {where or 'line'} {first_line}"
                )
            group_split.setdefault(group, (split, lineno))
            sampling = getattr(case.metadata, "sampling", None)
            if group in group_sampling and group_sampling[group][0] != sampling:
                first_sampling, first_line = group_sampling[group]
                raise DatasetError(
                    f"{pos}: group {group!r} crosses sampling methods: {sampling!r} here, "
                    f"{first_sampling!r} at {where or 'line'} {first_line}"
                )
            group_sampling.setdefault(group, (sampling, lineno))
        buf += orjson.dumps(record)
        ends.append(len(buf))
        digests.update(case.digest.encode())
        digests.update(b"\n")
    if not ends:
        raise DatasetError(f"{shown}: dataset has no cases")
    # the buffer itself: no second copy
    return Dataset(path=path, cases=CaseList(buf, ends), known_sha256=digests.hexdigest())
