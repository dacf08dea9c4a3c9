"""Datasets: JSONL (one case a line) or a JSON array, validated case by case.

Every rejection names the file and the line (for a JSON array, the item index) and exits 2:
a malformed line, a case that does not validate, a duplicate id, a group that crosses splits.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import orjson
from pydantic import ValidationError

from evalh.errors import DatasetError, first_validation_error
from evalh.models import Case


@dataclass(frozen=True)
class Dataset:
    path: Path
    cases: list[Case]

    @property
    def sha256(self) -> str:
        """Digest of the dataset: SHA-256 over its cases' digests, in file order."""
        h = hashlib.sha256()
        for case in self.cases:
            h.update(case.digest.encode())
            h.update(b"\n")
        return h.hexdigest()


def _first_error(exc: ValidationError) -> str:
    loc, msg = first_validation_error(exc)
    return f"{loc or 'case'}: {msg}"


def _records(path: Path, text: str) -> list[tuple[int, object]]:
    """(line number, parsed value) pairs. A JSON array gives item positions as 'lines'."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise DatasetError(f"{path}: not valid JSON: {exc}") from None
        return [(i + 1, item) for i, item in enumerate(items)]
    out: list[tuple[int, object]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            out.append((lineno, orjson.loads(line)))
        except orjson.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{lineno}: malformed JSON line: {exc}") from None
    return out


def load_dataset(path: Path | str, *, display: str | None = None) -> Dataset:
    """Load and validate a dataset. `display` is how the path is named in errors."""
    path = Path(path)
    shown = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(f"{shown}: dataset not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{shown}: cannot read: {exc}") from None
    cases: list[Case] = []
    seen: dict[str, int] = {}
    group_split: dict[str, tuple[str | None, int]] = {}
    where = "item" if text.lstrip().startswith("[") else ""
    for lineno, record in _records(Path(shown), text):
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
        cases.append(case)
    if not cases:
        raise DatasetError(f"{shown}: dataset has no cases")
    return Dataset(path=path, cases=cases)
