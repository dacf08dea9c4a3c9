"""Datasets: JSONL and JSON arrays load; every bad input is one line naming file:line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalh.datasets import load_dataset
from evalh.errors import DatasetError


def _case(i: int, **over: Any) -> dict[str, Any]:
    return {"id": f"c{i}", "input": {"n": i}, "expected": i % 2 == 0, **over}


def _jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n",
                    encoding="utf-8")
    return path


def _refused(path: Path) -> str:
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    err = info.value
    assert err.exit_code == 2
    assert "\n" not in err.message, err.message
    return err.message


# ----------------------------------------------------------------------------- loading


def test_jsonl_loads_cases_in_file_order(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "d.jsonl", [
        _case(1, metadata={"split": "dev", "group": "a", "stratum": "s", "tags": ["t"], "src": "x"}),
        "",
        "   ",
        _case(2),
    ])
    ds = load_dataset(path)
    assert [c.id for c in ds.cases] == ["c1", "c2"]
    first = ds.cases[0]
    assert first.input == {"n": 1} and first.expected is False
    assert (first.metadata.split, first.metadata.group, first.metadata.stratum) == ("dev", "a", "s")
    assert first.metadata.tags == ["t"]
    assert first.metadata.model_dump()["src"] == "x"  # free-form metadata is kept
    assert ds.cases[1].expected is True


def test_expected_is_optional(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "d.jsonl", [{"id": "a", "input": "x"}])
    assert load_dataset(path).cases[0].expected is None


def test_json_array_loads_and_has_the_same_digest_as_jsonl(tmp_path: Path) -> None:
    records = [_case(1), _case(2), _case(3)]
    array = tmp_path / "d.json"
    array.write_text(json.dumps(records, indent=2), encoding="utf-8")
    from_array = load_dataset(array)
    from_jsonl = load_dataset(_jsonl(tmp_path / "d.jsonl", records))
    assert [c.id for c in from_array.cases] == ["c1", "c2", "c3"]
    assert from_array.sha256 == from_jsonl.sha256


def test_dataset_digest_is_stable_and_order_sensitive(tmp_path: Path) -> None:
    records = [_case(1), _case(2)]
    a = load_dataset(_jsonl(tmp_path / "a.jsonl", records))
    b = load_dataset(_jsonl(tmp_path / "b.jsonl", records))
    swapped = load_dataset(_jsonl(tmp_path / "c.jsonl", list(reversed(records))))
    edited = load_dataset(_jsonl(tmp_path / "d.jsonl", [_case(1), _case(2, expected="x")]))
    assert a.sha256 == b.sha256 and len(a.sha256) == 64
    assert swapped.sha256 != a.sha256
    assert edited.sha256 != a.sha256


# ----------------------------------------------------------------------------- bad input


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "d.jsonl", [_case(1), _case(2), '{"id": "c3", "input": ', _case(4)])
    msg = _refused(path)
    assert msg.startswith(f"{path}:3: "), msg
    assert "malformed" in msg


def test_case_missing_id_names_file_line_and_key(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "d.jsonl", [_case(1), {"input": "no id"}])
    msg = _refused(path)
    assert msg.startswith(f"{path}:2: "), msg
    assert "id" in msg


def test_empty_id_is_refused(tmp_path: Path) -> None:
    msg = _refused(_jsonl(tmp_path / "d.jsonl", [{"id": "", "input": 1}]))
    assert ":1: id" in msg


def test_unknown_top_level_key_is_named(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "d.jsonl", [_case(1), _case(2), {"id": "c3", "input": 1, "expeced": 2}])
    msg = _refused(path)
    assert msg.startswith(f"{path}:3: "), msg
    assert "expeced" in msg


def test_a_line_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    msg = _refused(_jsonl(tmp_path / "d.jsonl", [_case(1), "[1, 2]"]))
    assert ":2: " in msg and "object" in msg


def test_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "d.jsonl", [_case(1), _case(2), _case(3), _case(2, input="again")])
    msg = _refused(path)
    assert msg.startswith(f"{path}:4: "), msg
    assert "'c2'" in msg and "line 2" in msg


def test_group_crossing_splits_names_both_lines(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "d.jsonl", [
        _case(1, metadata={"split": "dev", "group": "doc-7"}),
        _case(2, metadata={"split": "dev", "group": "doc-8"}),
        _case(3, metadata={"split": "test", "group": "doc-7"}),
    ])
    msg = _refused(path)
    assert msg.startswith(f"{path}:3: "), msg
    assert "doc-7" in msg and "line 1" in msg and "'test'" in msg and "'dev'" in msg


def test_group_within_one_split_is_fine(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "d.jsonl", [
        _case(1, metadata={"split": "dev", "group": "g"}),
        _case(2, metadata={"split": "dev", "group": "g"}),
    ])
    assert len(load_dataset(path).cases) == 2


def test_json_array_errors_name_the_item(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps([_case(1), {"id": "c2"}]), encoding="utf-8")  # no `input`
    msg = _refused(path)
    assert msg.startswith(f"{path}: item 2: "), msg
    assert "input" in msg


def test_malformed_json_array_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text('[{"id": "c1", "input": 1},\n {"id": ]', encoding="utf-8")
    assert _refused(path).startswith(f"{path}: ")


def test_missing_and_empty_datasets_are_refused(tmp_path: Path) -> None:
    assert "not found" in _refused(tmp_path / "nope.jsonl")
    assert "no cases" in _refused(_jsonl(tmp_path / "empty.jsonl", [""]))


def test_errors_use_the_display_path(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "d.jsonl", ["{oops"])
    with pytest.raises(DatasetError) as info:
        load_dataset(path, display="datasets/d.jsonl")
    assert info.value.message.startswith("datasets/d.jsonl:1: ")


def test_json_array_duplicates_name_items_on_both_sides(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(json.dumps([_case(1), _case(2), _case(1)], indent=1), encoding="utf-8")
    msg = _refused(path)
    assert msg.startswith(f"{path}: item 3: duplicate case id"), msg
    assert msg.endswith("(first at item 1)"), msg
