"""Review of compare's facts reader (compare_facts, document.iter_case_chunks): documents a
user can hold, read by `evalh compare` as `evalh show` reads them — the same verdict when
the model loader accepts the document, its one-line error when it refuses it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_compare_facts import CASES, _run

from evalh.core.compare import load as compare_load
from evalh.core.compare.decide import compare_runs
from evalh.core.compare.load import load_compared
from evalh.errors import RunDocumentError
from evalh.store import RunStore

BASE, CAND = "20260101T000000000Z-00000a", "20260101T000001000Z-00000b"
LINE = 5  # the fourth result of suite s (lines: header, suites, opener, results...)


def _store(tmp_path: Path) -> RunStore:
    store = RunStore(tmp_path)
    store.write(_run(BASE, 5, shift=0.0, **CASES[2]))
    store.write(_run(CAND, 6, shift=0.3, **CASES[2]))
    return store


def _edit_line(path: Path, edit: Any) -> None:
    """Replace the JSON text of result line `LINE` by `edit(text)`, its comma kept."""
    lines = path.read_bytes().split(b"\n")
    body = lines[LINE]
    comma = body.endswith(b",")
    lines[LINE] = edit(body[:-1] if comma else body) + (b"," if comma else b"")
    path.write_bytes(b"\n".join(lines))


def _nested_output(depth: int) -> Any:
    def edit(text: bytes) -> bytes:
        obj = json.loads(text)
        obj.pop("output", None)
        return text[:-1] + b',"output":' + b"[" * depth + b"]" * depth + b"}"
    return edit


def _refused_alike(store: RunStore) -> str:
    """The candidate refused by compare with the loader's own message; that message."""
    with pytest.raises(RunDocumentError) as loader:
        store.load(CAND)
    with pytest.raises(RunDocumentError) as compared:
        load_compared(store, BASE, CAND)
    assert str(compared.value) == str(loader.value)
    return str(compared.value)


def test_a_deeply_nested_output_the_loader_reads_gives_the_loaders_verdict(tmp_path: Path) -> None:
    # orjson reads up to 1023 levels; the chunk decoder recursed deeper than Python allows
    # on fields it only skips (a RecursionError, a traceback in `evalh compare`)
    store = _store(tmp_path)
    _edit_line(store.path_for(CAND), _nested_output(1000))
    whole = compare_runs(store.load(BASE), store.load(CAND))
    assert load_compared(store, BASE, CAND).compare().to_dict() == whole.to_dict()


def test_a_nesting_the_loader_refuses_is_refused_as_the_loader_refuses_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    path = store.path_for(CAND)
    _edit_line(path, _nested_output(3000))
    assert _refused_alike(store).startswith(f"{path}: not valid JSON")


def test_an_attempt_beyond_64_bits_is_refused_naming_its_field(tmp_path: Path) -> None:
    # msgspec read 2**70 exactly, where the loader's JSON parser and model refuse it; the
    # comparison then failed writing its JSON (orjson: "Integer exceeds 64-bit range")
    store = _store(tmp_path)
    path = store.path_for(CAND)
    _edit_line(path, lambda text: re.sub(rb'"attempt":\d+', b'"attempt":%d' % 2**70, text, count=1))
    assert _refused_alike(store).startswith(f"{path}: invalid run document at suites.s.cases.2.attempt:")


@pytest.mark.parametrize("side", ["base", "candidate"])
def test_a_damaged_document_read_in_the_forked_worker_is_the_same_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, side: str
) -> None:
    store = _store(tmp_path)
    ref = BASE if side == "base" else CAND
    path = store.path_for(ref)
    _edit_line(path, lambda text: text.replace(b'"status":', b'"stat":', 1))
    with pytest.raises(RunDocumentError) as serial:
        load_compared(store, BASE, CAND)
    monkeypatch.setattr(compare_load, "PARALLEL_BYTES", 0)  # the worker for any size
    monkeypatch.setattr(compare_load, "_second_core", lambda: True)
    with pytest.raises(RunDocumentError) as forked:
        load_compared(store, BASE, CAND, parallel=True)
    assert str(forked.value) == str(serial.value)
    assert str(forked.value).startswith(f"{path}: invalid run document at suites.s.cases.2.status:")
