"""Persisted models: case digests, JSON round trips, and old run documents that keep loading."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from evalh import migrations
from evalh.errors import RunDocumentError
from evalh.models import (
    RUN_SCHEMA,
    Case,
    CaseResult,
    DatasetInfo,
    EnvironmentInfo,
    ErrorInfo,
    Run,
    Score,
    SuiteResult,
    canonical_json,
)
from evalh.store import RunStore, parse_run

FIXTURE_RUNS = Path(__file__).parent / "fixtures" / "runs"


def _case(**over: Any) -> Case:
    raw: dict[str, Any] = {
        "id": "c1",
        "input": {"question": "q", "n": 1},
        "expected": "accept",
        "metadata": {"split": "dev", "group": "g", "tags": ["a"], "source": "free-form"},
    }
    raw.update(over)
    return Case.model_validate(raw)


# ----------------------------------------------------------------------------- Case digest


def test_canonical_json_sorts_keys_without_whitespace() -> None:
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == b'{"a":[1,{"c":3,"d":2}],"b":1}'
    assert canonical_json({"é": "ü"}) == '{"é":"ü"}'.encode()


def test_case_digest_is_stable_hex_sha256() -> None:
    a, b = _case(), _case()
    assert a.digest == b.digest
    assert len(a.digest) == 64 and int(a.digest, 16) >= 0


def test_case_digest_ignores_key_order() -> None:
    a = Case.model_validate({"id": "c", "input": {"x": 1, "y": 2}, "expected": None})
    b = Case.model_validate({"expected": None, "input": {"y": 2, "x": 1}, "id": "c"})
    assert a.digest == b.digest


@pytest.mark.parametrize(
    "change",
    [
        {"id": "c2"},
        {"input": {"question": "q", "n": 2}},
        {"expected": "reject"},
        {"expected": None},
        {"metadata": {"split": "test", "group": "g", "tags": ["a"], "source": "free-form"}},
        {"metadata": {"split": "dev", "group": "g", "tags": ["a"], "source": "other"}},
    ],
)
def test_case_digest_changes_with_content(change: dict[str, Any]) -> None:
    assert _case(**change).digest != _case().digest


def test_case_digest_is_pinned() -> None:
    """The digest is part of the persisted contract (labels bind to it): pin one value."""
    case = Case.model_validate({"id": "x", "input": "hello", "expected": "world"})
    assert case.digest == "903777ec761fd33a27c41de617ed6c09c2ba65369357eb55ee1f10a2c06a6d1c"


def test_case_refuses_unknown_top_level_keys_and_keeps_free_form_metadata() -> None:
    with pytest.raises(ValueError):
        Case.model_validate({"id": "x", "input": 1, "expeced": 2})
    case = _case()
    assert case.metadata.model_dump()["source"] == "free-form"


# ----------------------------------------------------------------------------- round trips


def _run() -> Run:
    scores = [
        Score(scorer="exact", value=1.0, passed=True, rationale="a == a"),
        Score(scorer="quote", abstained=True, verdict="abstain", details={"k": [1, 2]}),
    ]
    results = [
        CaseResult(case_id="c1", case_digest=_case().digest, status="passed", score=1.0,
                   scores=scores, input={"q": "é"}, expected="a", output={"verdict": "a"},
                   latency_ms=1.5, tokens_in=3, tokens_out=4, cost_usd=0.001),
        CaseResult(case_id="c2", attempt=1, arm="b", status="errored",
                   error=ErrorInfo(type="RuntimeError", message="boom")),
    ]
    return Run(
        run_id="20260101T000000000Z-abcdef",
        label="l",
        status="complete",
        started_at="2026-01-01T00:00:00.000Z",
        environment=EnvironmentInfo(evalh="0", python="3.11", platform="linux"),
        config={"suites": {"s": {"dataset": "d.jsonl"}}},
        seed=3,
        suites={"s": SuiteResult(dataset=DatasetInfo(path="d.jsonl", sha256="0" * 64, cases=2),
                                 cases=results)},
        summary={"cases": 2},
    )


def test_score_roundtrips_through_json() -> None:
    s = Score(scorer="j", value=0.5, passed=None, abstained=True, details={"votes": [1, 0]},
              judge_model="m", rubric_sha256="f" * 64)
    assert Score.model_validate_json(s.model_dump_json()) == s


def test_case_result_roundtrips_through_json() -> None:
    r = _run().suites["s"].cases[0]
    again = CaseResult.model_validate(orjson.loads(orjson.dumps(r.model_dump(mode="json"))))
    assert again == r


def test_run_roundtrips_through_its_document_bytes() -> None:
    run = _run()
    data = run.to_json_bytes()
    raw = orjson.loads(data)
    assert raw["schema"] == RUN_SCHEMA and "schema_" not in raw
    again = parse_run(data, "mem")
    assert again == run
    assert again.to_json_bytes() == data


# ----------------------------------------------------------------------------- old documents


def test_fixture_run_documents_keep_loading() -> None:
    """Run documents written by earlier versions of evalh must load with this one.

    `run-v0.1.0.json` was written by `evalh run` of evalh 0.1.0 (4 cases: 2 passed, 1 failed,
    1 errored). When the schema changes, add a migration and keep this file as it is.
    """
    docs = sorted(FIXTURE_RUNS.glob("*.json"))
    assert docs, "no fixture run documents"
    for path in docs:
        run = RunStore(FIXTURE_RUNS).load(path.name)
        assert run.run_id and run.suites


def test_fixture_run_v0_1_0_content() -> None:
    run = RunStore(FIXTURE_RUNS).load("run-v0.1.0.json")
    assert run.schema_ == RUN_SCHEMA
    assert run.status == "complete" and run.label == "fixture" and run.seed == 7
    smoke = run.suites["smoke"]
    assert smoke.aggregate.n == 4
    assert (smoke.aggregate.passed, smoke.aggregate.failed, smoke.aggregate.errored) == (2, 1, 1)
    by_id = {r.case_id: r for r in smoke.cases}
    assert by_id["smoke.crash"].status == "errored"
    assert by_id["smoke.crash"].error == ErrorInfo(type="RuntimeError", message="the product fell over")
    assert by_id["smoke.wrong"].status == "failed"
    assert [s.scorer for s in by_id["smoke.yes"].scores] == ["exact", "noted"]
    assert run.summary["deterministic_ok"] is False


def test_migrations_chain_old_schemas_up_to_current(monkeypatch: pytest.MonkeyPatch) -> None:
    def v0_to_v05(raw: dict[str, Any]) -> dict[str, Any]:
        return {**raw, "schema": "evalh.run/0.5", "run_id": raw.pop("id")}

    def v05_to_v1(raw: dict[str, Any]) -> dict[str, Any]:
        return {**raw, "schema": RUN_SCHEMA}

    monkeypatch.setitem(migrations.MIGRATIONS, "evalh.run/0", v0_to_v05)
    monkeypatch.setitem(migrations.MIGRATIONS, "evalh.run/0.5", v05_to_v1)
    doc = orjson.loads((FIXTURE_RUNS / "run-v0.1.0.json").read_bytes())
    doc["schema"] = "evalh.run/0"
    doc["id"] = doc.pop("run_id")
    run = parse_run(orjson.dumps(doc), "old.json")
    assert run.run_id and run.schema_ == RUN_SCHEMA


def test_unknown_schema_is_refused_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = orjson.loads((FIXTURE_RUNS / "run-v0.1.0.json").read_bytes())
    doc["schema"] = "evalh.run/99"
    with pytest.raises(RunDocumentError) as info:
        parse_run(orjson.dumps(doc), "future.json")
    assert "future.json" in info.value.message and "evalh.run/99" in info.value.message
    assert "\n" not in info.value.message
    assert info.value.exit_code == 2


def test_a_migration_cycle_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(migrations.MIGRATIONS, "evalh.run/a", lambda r: {**r, "schema": "evalh.run/b"})
    monkeypatch.setitem(migrations.MIGRATIONS, "evalh.run/b", lambda r: {**r, "schema": "evalh.run/a"})
    with pytest.raises(RunDocumentError):
        migrations.migrate({"schema": "evalh.run/a"}, "loop.json")


@pytest.mark.parametrize("data", [b"{not json", b"[]", b'{"schema": "other/1"}'])
def test_not_a_run_document_is_refused(data: bytes) -> None:
    with pytest.raises(RunDocumentError) as info:
        parse_run(data, "x.json")
    assert info.value.message.startswith("x.json: ")
