"""Per-case costs cut on the lean path (issue 33) without changing what is written: the time
stamp every result gets, and the dataset digest every run records, are what they were."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from evalh import store
from evalh.datasets import Dataset, load_dataset


def _reference(ns: int) -> str:
    """`now_iso` as it was written before: datetime's ISO text, to the millisecond."""
    when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000)  # exact, no float
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.mark.parametrize("ns", [
    1_796_000_000_000_000_000,  # a whole second
    1_796_000_000_123_456_789,
    1_796_000_059_999_000_000,  # the last millisecond of a minute
    1_796_000_060_000_000_000,  # and the next second: the cached text is replaced
    1_796_000_060_001_000_000,
    1_796_086_399_999_999_000,  # a day's last microsecond
    1_796_086_400_000_000_000,
])
def test_now_iso_writes_the_text_datetime_wrote(monkeypatch: pytest.MonkeyPatch, ns: int) -> None:
    monkeypatch.setattr(store.time, "time_ns", lambda: ns)
    assert store.now_iso() == _reference(ns)
    assert store.now_iso() == _reference(ns)  # from the cached second too


def test_seconds_in_turn_each_get_their_own_text(monkeypatch: pytest.MonkeyPatch) -> None:
    stamps = []
    for ns in (1_796_000_000_999_000_000, 1_796_000_001_000_000_000, 1_796_000_000_500_000_000):
        monkeypatch.setattr(store.time, "time_ns", lambda ns=ns: ns)
        stamps.append(store.now_iso())
    assert stamps == [_reference(1_796_000_000_999_000_000), _reference(1_796_000_001_000_000_000),
                      _reference(1_796_000_000_500_000_000)]


def test_the_digest_loading_computes_is_the_one_the_cases_give(tmp_path: Path) -> None:
    """A loaded dataset's digest comes from the models its loading validated: the SHA-256
    over every case's digest in file order, as it is computed from the cases themselves."""
    rows = [{"id": "a", "input": {"q": 1}, "expected": "x"},
            {"id": "b", "input": "two", "metadata": {"split": "dev", "tags": ["t"], "extra": 3}},
            {"id": "c", "input": [1, 2.5, None], "expected": {"k": "é"}}]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    loaded = load_dataset(path)
    expected = hashlib.sha256()
    for case in loaded.cases:
        expected.update(case.digest.encode() + b"\n")
    assert loaded.sha256 == expected.hexdigest()
    assert Dataset(loaded.path, loaded.cases).sha256 == loaded.sha256  # computed again, the same
