"""The streamed layout of a run document (`evalh.document`): one JSON document, a header
line, one result per line; readers that stop at the header or jump to one result; and
documents of the earlier, indented layout that still load."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.core.results.aggregate import aggregate
from evalh.core.results.outcome import summarize
from evalh.document import HEADS, read_head
from evalh.errors import EvalhError, RunDocumentError
from evalh.models import CaseResult, DatasetInfo, EnvironmentInfo, GitInfo, Run, Score, SuiteResult
from evalh.store import RunStore, serialize_run
from evalh.ui.index import RunIndex

FIXTURE = Path(__file__).parent / "fixtures" / "runs" / "run-v0.1.0.json"


def _run(i: int, cases: int = 30, broken: frozenset[int] = frozenset()) -> Run:
    def suite(prefix: str) -> SuiteResult:
        results = [
            CaseResult(
                case_id=f"{prefix}{k}", status="failed" if k in broken else "passed",
                score=0.0 if k in broken else 1.0,
                scores=[Score(scorer="exact", value=0.0 if k in broken else 1.0, passed=k not in broken)],
                input={"q": f"question {k}\nwith a newline, \"quotes\" and ]}} brackets"},
                output={"a": f"answer {k}" if k not in broken else "wrong"}, expected={"a": f"answer {k}"},
                output_sha256=f"{k:064x}", latency_ms=1.0 + k, trace=[{"step": k}],
            )
            for k in range(cases)
        ]
        return SuiteResult(dataset=DatasetInfo(path="d.jsonl", sha256="0" * 64, cases=cases),
                           aggregate=aggregate(results), arms={"default": aggregate(results)},
                           details={"exact": {"note": "x"}}, cases=results)

    run = Run(run_id=f"20260101T0000{i:02d}000Z-abcdef", label=f"run {i}", status="complete",
              started_at="2026-01-01T00:00:00.000Z", git=GitInfo(sha="ab" * 20, dirty=False),
              environment=EnvironmentInfo(evalh="0", python="3", platform="p"),
              config={"suites": {"gate": {}, "guards": {}}},
              suites={"gate": suite("g"), "guards": suite("s"), "empty": suite("e").model_copy(update={"cases": []})})
    run.summary = summarize(run)
    return run


def _indented(run: Run) -> bytes:
    """The document as evalh wrote it before the streamed layout."""
    return orjson.dumps(run.model_dump(mode="json", by_alias=True), option=orjson.OPT_INDENT_2)


def test_the_document_is_one_json_value_with_a_header_line_and_a_line_per_result(tmp_path: Path) -> None:
    run = _run(1)
    path = RunStore(tmp_path).write(run)
    data = path.read_bytes()
    assert Run.model_validate(json.loads(data)).model_dump() == run.model_dump()  # any JSON parser
    lines = data.split(b"\n")
    header = json.loads(lines[0][:-1] + b"}")  # the first line alone, closed
    assert header["run_id"] == run.run_id and header["summary"] == run.summary and "suites" not in header
    assert header[HEADS]["gate"]["aggregate"] == run.suites["gate"].aggregate.model_dump(mode="json")
    assert header[HEADS]["guards"]["results"] == 30 and header[HEADS]["empty"]["results"] == 0
    assert "cases" not in header[HEADS]["gate"]
    results = [json.loads(x.rstrip(b",")) for x in lines if x.startswith(b"{") and x is not lines[0]]
    assert len(results) == 60 and results[0]["case_id"] == "g0"
    assert b"\n  " not in data  # no indentation
    assert len(data) < 0.7 * len(_indented(run))


def test_a_corrupted_results_part_still_lists_and_opens_the_header(tmp_path: Path) -> None:
    """Only the header line is read: bytes that are not JSON after it change nothing."""
    store = RunStore(tmp_path / "runs")
    path = store.write(_run(1))
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"\n") + 1] + b"\xff\x00 not json at all {{{" * 500)
    listed = CliRunner().invoke(app, ["runs", "--runs-dir", str(store.runs_dir), "--json"])
    assert listed.exit_code == 0, listed.output
    row = json.loads(listed.stdout)[0]
    assert row["run_id"] == "20260101T000001000Z-abcdef" and row["suites"]["gate"] == 1.0
    header = store.load_header(row["run_id"])
    assert header.suites["guards"].aggregate.n == 30 and header.suites["guards"].cases == []
    assert header.suites["gate"].details == {"exact": {"note": "x"}}
    history = RunIndex(store.runs_dir).summaries()
    assert [h["run_id"] for h in history] == [row["run_id"]]
    assert history[0]["suites"]["gate"]["aggregate"]["n"] == 30
    with pytest.raises(RunDocumentError, match=str(path)) as err:  # a full load says where
        store.load(row["run_id"])
    assert "\n" not in err.value.message


def test_a_damaged_result_line_is_one_named_error(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    path = store.write(_run(1))
    lines = path.read_bytes().split(b"\n")
    lines[5] = lines[5].replace(b'"status":"passed"', b'"status":"nope"')
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(RunDocumentError, match=r"invalid run document at suites\.gate\.cases\.2\.status"):
        store.load(path.stem)


def test_the_header_only_read_equals_the_full_load_without_cases(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    run = _run(2)
    store.write(run)
    full, header = store.load(run.run_id), store.load_header(run.run_id)
    assert full.model_dump() == run.model_dump()
    assert header.model_dump() == run.model_copy(update={
        "suites": {n: s.model_copy(update={"cases": []}) for n, s in run.suites.items()}}).model_dump()


def test_an_old_indented_document_loads_lists_and_compares(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    base, cand = _run(1), _run(2, broken=frozenset({3, 7}))
    store.runs_dir.mkdir()
    store.path_for(base.run_id).write_bytes(_indented(base))  # the earlier layout
    store.write(cand)  # the streamed one
    with store.path_for(base.run_id).open("rb") as fh:
        assert read_head(fh) is None
    assert store.load(base.run_id).model_dump() == base.model_dump()
    assert store.load_header(base.run_id).suites["gate"].aggregate == base.suites["gate"].aggregate
    assert store.load_facts(base.run_id).suites["gate"].cases[0].output is None
    listed = CliRunner().invoke(app, ["runs", "--runs-dir", str(store.runs_dir), "--json"])
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [base.run_id, cand.run_id]
    cmp = CliRunner().invoke(app, ["compare", base.run_id, cand.run_id, "--runs-dir", str(store.runs_dir),
                                   "--format", "json"])
    assert cmp.exit_code == 0, cmp.output
    regressed = {c["case_id"] for c in json.loads(cmp.stdout)["suites"]["gate"]["cases"]["regressed"]}
    assert regressed == {"g3", "g7"}
    # the other way round: a streamed base, an old candidate
    store.path_for(cand.run_id).write_bytes(_indented(cand))
    store.write(base)
    again = CliRunner().invoke(app, ["compare", base.run_id, cand.run_id, "--runs-dir", str(store.runs_dir),
                                     "--format", "json"])
    assert json.loads(again.stdout)["suites"] == json.loads(cmp.stdout)["suites"]


def test_a_document_of_an_older_evalh_still_loads(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    run = store.load(str(FIXTURE))
    assert run.label == "fixture" and store.load_header(str(FIXTURE)).suites["smoke"].cases == []
    # written again, it is in the streamed layout and holds the same run
    store.write(run)
    assert store.load(run.run_id).model_dump() == run.model_dump()


def test_the_facts_load_keeps_what_a_comparison_pairs(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    run = _run(3)
    store.write(run)
    facts = store.load_facts(run.run_id)
    for got, want in zip(facts.suites["gate"].cases, run.suites["gate"].cases, strict=True):
        assert (got.input, got.output, got.expected, got.trace) == (None, None, None, None)
        assert got.model_dump(exclude={"input", "output", "expected", "trace"}) == \
            want.model_dump(exclude={"input", "output", "expected", "trace"})


@pytest.mark.parametrize("layout", ["streamed", "indented"])
def test_a_case_opened_by_its_offset_equals_the_full_load(tmp_path: Path, layout: str) -> None:
    store = RunStore(tmp_path)
    run = _run(4)
    if layout == "streamed":
        store.write(run)
    else:
        store.path_for(run.run_id).write_bytes(_indented(run))
    loaded = RunIndex(tmp_path).load(run.run_id)
    assert loaded.streamed == (layout == "streamed")
    assert loaded.raw_cases == ({} if layout == "streamed" else loaded.raw_cases)
    for suite in ("gate", "guards"):
        assert [r["case_id"] for r in loaded.rows[suite]] == [c.case_id for c in run.suites[suite].cases]
        for i in (0, 17, 29):
            assert loaded.case(suite, i).model_dump() == run.suites[suite].cases[i].model_dump()
    assert "answer 5" in loaded.outputs("guards")[5] and len(loaded.outputs("guards")) == 30
    assert loaded.run().model_dump() == run.model_dump()


def test_a_document_replaced_while_open_is_read_again(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    run = _run(5)
    store.write(run)
    index = RunIndex(tmp_path)
    assert index.load(run.run_id).case("gate", 3).case_id == "g3"
    changed = _run(5, cases=10)
    changed.suites["gate"].cases[3].case_id = "renamed"
    import os
    import time

    time.sleep(0.01)
    store.write(changed)
    os.utime(store.path_for(run.run_id))
    assert index.load(run.run_id).case("gate", 3).case_id == "renamed"


def test_serialize_run_is_what_the_store_writes(tmp_path: Path) -> None:
    run = _run(6)
    assert RunStore(tmp_path).write(run).read_bytes() == serialize_run(run)


def test_a_case_opened_before_any_listing_reads_no_row(tmp_path: Path) -> None:
    """The case view of a streamed run finds the offsets by its newlines alone (no line
    parsed): the same offsets the parsing pass finds, the same case as a full load."""
    import os

    from evalh.document import case_offsets, line_offsets
    from evalh.ui.api import DashboardApi

    store = RunStore(tmp_path / "eval_runs")
    run = _run(7)
    path = store.write(run)
    api = DashboardApi(RunIndex(store.runs_dir), tmp_path)
    got = api.case(run.run_id, {"suite": "guards", "i": "12"})
    assert got["result"] == run.suites["guards"].cases[12].model_dump(mode="json")
    loaded = api.index.load(run.run_id)
    assert loaded._rows is None and loaded.offsets is None  # the header's line index found it
    with path.open("rb") as fh:
        head = read_head(fh)
        assert head is not None
        parsed = case_offsets(fh, head, str(path))
    fd = os.open(path, os.O_RDONLY)
    try:
        assert line_offsets(fd, head, str(path)) == parsed
    finally:
        os.close(fd)
    index = head["line_index"]
    assert index["offsets"]["guards"] == parsed["guards"][::index["every"]].tolist()
    # printed as it is made (evalh show --json), the index is not filled in: found by scanning
    from evalh.store import run_chunks

    path.write_bytes(b"".join(run_chunks(run)))
    json.loads(path.read_bytes())
    api = DashboardApi(RunIndex(store.runs_dir), tmp_path)
    assert api.case(run.run_id, {"suite": "guards", "i": "29"})["result"]["case_id"] == "s29"
    assert api.index.load(run.run_id).offsets is not None
    with pytest.raises(EvalhError, match="no suite"):
        api.case(run.run_id, {"suite": "nope", "i": "0"})


def test_a_truncated_results_part_is_one_named_error_in_the_case_view(tmp_path: Path) -> None:
    from evalh.ui.api import DashboardApi

    store = RunStore(tmp_path / "eval_runs")
    run = _run(8)
    path = store.write(run)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # cut in the middle of the results
    api = DashboardApi(RunIndex(store.runs_dir), tmp_path)
    with pytest.raises(RunDocumentError, match=str(path)) as err:
        api.case(run.run_id, {"suite": "guards", "i": "3"})
    assert "\n" not in err.value.message


@pytest.mark.parametrize("layout", ["streamed", "indented"])
def test_loaded_results_share_one_complete_field_set(tmp_path: Path, layout: str) -> None:
    """Pydantic's per-instance set of given fields was most of a loaded result's memory;
    loaded results share one complete set per class, and setting a field still works."""
    import tracemalloc

    store = RunStore(tmp_path)
    run = _run(9, cases=2000)
    if layout == "streamed":
        store.write(run)
    else:
        store.path_for(run.run_id).write_bytes(_indented(run))
    tracemalloc.start()
    try:
        facts = store.load_facts(run.run_id)
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    a, b = facts.suites["gate"].cases[:2]
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__ == set(CaseResult.model_fields)
    assert a.scores[0].__pydantic_fields_set__ is b.scores[0].__pydantic_fields_set__
    assert used / 4000 < 3000, used / 4000  # bytes per result: 1,800 here, 4,800 with a set each
    a.status = "errored"
    a.scores[0].rationale = "changed"
    assert b.status == "passed" and b.scores[0].rationale is None
    assert a.model_dump()["status"] == "errored" and a.model_dump()["scores"][0]["rationale"] == "changed"
    assert b.model_dump() == run.suites["gate"].cases[1].model_dump(exclude={"input", "output", "expected", "trace"}) | {
        "input": None, "output": None, "expected": None, "trace": None}


def test_the_line_index_finds_results_past_its_step(tmp_path: Path) -> None:
    """`line_index` keeps every EVERYth offset: a result between two is reached by stepping
    over lines from the one before; the header stays small whatever the number of results."""
    from evalh.document import EVERY
    from evalh.ui.api import DashboardApi

    store = RunStore(tmp_path / "eval_runs")
    run = _run(10, cases=2 * EVERY + 5)
    path = store.write(run)
    header = json.loads(path.read_bytes().split(b"\n")[0][:-1] + b"}")
    assert len(header["line_index"]["offsets"]["gate"]) == 3
    api = DashboardApi(RunIndex(store.runs_dir), tmp_path)
    for i in (0, EVERY - 1, EVERY, EVERY + 1, 2 * EVERY + 4):
        got = api.case(run.run_id, {"suite": "gate", "i": str(i)})["result"]
        assert got == run.suites["gate"].cases[i].model_dump(mode="json")


def test_a_journaled_result_shares_the_field_set_and_reads_back_the_same(tmp_path: Path) -> None:
    """The runner keeps every journaled result until the document is written: journaling
    gives it the shared set of field names (3 KB less each), and changes nothing else."""
    from evalh.journal import Journal

    journal = Journal(tmp_path / "r.journal.jsonl")
    journal.open({"run_id": "r"})
    made = [CaseResult(case_id=f"c{k}", status="passed", scores=[Score(scorer="exact", passed=True)])
            for k in range(3)]
    for r in made:
        assert r.model_fields_set != set(CaseResult.model_fields)  # only what was given
        journal.append("gate", r)
    journal.close()
    assert made[0].__pydantic_fields_set__ is made[2].__pydantic_fields_set__
    assert made[0].scores[0].__pydantic_fields_set__ is made[1].scores[0].__pydantic_fields_set__
    _, back = Journal.read(journal.path)
    assert [r.model_dump() for _, r in back] == [r.model_dump() for r in made]


@pytest.mark.parametrize("edit", ["a result dropped", "the last result dropped", "a result twice",
                                  "bytes after the end"])
def test_a_results_part_that_disagrees_with_its_header_is_one_named_error(tmp_path: Path, edit: str) -> None:
    """A document whose results are not the ones its header counts, or that is not one JSON
    value, is refused (exit 2), never read as a complete run with a case missing: a failing
    case cut out of the results part must not make the run pass."""
    store = RunStore(tmp_path / "runs")
    run = _run(1, cases=5, broken=frozenset({2, 4}))
    path = store.write(run)
    lines = path.read_bytes().split(b"\n")
    gate = [i for i, x in enumerate(lines) if x.startswith(b'{"case_id":"g')]
    if edit == "a result dropped":
        del lines[gate[2]]
    elif edit == "the last result dropped":
        del lines[gate[-1]]
    elif edit == "a result twice":
        lines.insert(gate[0], lines[gate[0]])
    else:
        lines[-1] = b'{"case_id":"g9"}'
    path.write_bytes(b"\n".join(lines))
    for load in (store.load, store.load_facts):
        with pytest.raises(RunDocumentError, match=str(path)):
            load(run.run_id)
    shown = CliRunner().invoke(app, ["compare", str(path), str(path), "--runs-dir", str(store.runs_dir)])
    assert shown.exit_code == 2, shown.output


def test_a_suite_whose_opening_line_disagrees_with_the_header_is_one_named_error(tmp_path: Path) -> None:
    """evalh reads a suite's aggregates from the header's `suite_heads`, any other JSON
    parser from `suites.S`: a document where the two differ (say, a pass rate edited in one
    place) is refused, so no two readers of one document see two different runs."""
    store = RunStore(tmp_path / "runs")
    run = _run(1, cases=5, broken=frozenset({2, 4}))
    path = store.write(run)
    lines = path.read_bytes().split(b"\n")
    (at,) = [i for i, x in enumerate(lines) if x.startswith(b'"gate":{')]
    opened = json.loads(lines[at][len(b'"gate":'):-len(b',"cases":[')] + b"}")
    assert opened["aggregate"]["failed"] == 2
    edited = lines[at].replace(b'"failed":2', b'"failed":0', 1)
    assert edited != lines[at]
    lines[at] = edited
    path.write_bytes(b"\n".join(lines))
    for load in (store.load, store.load_facts):
        with pytest.raises(RunDocumentError, match=r"suite 'gate' .*header"):
            load(run.run_id)
    shown = CliRunner().invoke(app, ["compare", str(path), str(path), "--runs-dir", str(store.runs_dir)])
    assert shown.exit_code == 2, shown.output
