"""`evalh runs` reads a bounded header per run document, not the whole document."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.core.results.aggregate import aggregate
from evalh.core.results.outcome import summarize
from evalh.errors import RunDocumentError
from evalh.models import CaseResult, DatasetInfo, EnvironmentInfo, GitInfo, Run, SuiteResult
from evalh.run_header import read_run_header
from evalh.store import RunStore

FIXTURE = Path(__file__).parent / "fixtures" / "runs" / "run-v0.1.0.json"


def _run(i: int, cases: int = 50) -> Run:
    results = [
        CaseResult(case_id=f"c{k}", status="passed" if (k + i) % 3 else "failed",
                   input={"q": "x" * 400, "k": k}, output={"a": "y" * 400}, expected="z")
        for k in range(cases)
    ]
    suite = SuiteResult(dataset=DatasetInfo(path="d.jsonl", sha256="0" * 64, cases=cases),
                        aggregate=aggregate(results), arms={"default": aggregate(results)},
                        cases=results)
    run = Run(run_id=f"20260101T0000{i:02d}000Z-abcdef", label=f"run {i}", status="complete",
              started_at="2026-01-01T00:00:00.000Z", git=GitInfo(sha="ab" * 20, dirty=True),
              environment=EnvironmentInfo(evalh="0", python="3", platform="p"),
              suites={"gate": suite, "other": suite.model_copy()})
    run.summary = summarize(run)
    return run


def _old_order(run: Run) -> bytes:
    """The document as versions before the header order wrote it: `suites`, then `summary`."""
    raw = run.model_dump(mode="json", by_alias=True)
    summary = raw.pop("summary")
    suites = raw.pop("suites")
    return orjson.dumps({**raw, "suites": suites, "summary": summary}, option=orjson.OPT_INDENT_2)


def test_the_summary_is_written_before_the_suites(tmp_path: Path) -> None:
    path = RunStore(tmp_path).write(_run(1))
    keys = list(json.loads(path.read_bytes()))
    assert keys.index("summary") < keys.index("suites") and keys[-1] == "suites"


def test_a_new_document_is_listed_without_reading_its_suites(tmp_path: Path) -> None:
    """Everything after the `suites` key is replaced by bytes that are not JSON: the header
    still reads, so the reader never went there."""
    path = RunStore(tmp_path).write(_run(1, cases=2000))
    data = path.read_bytes()
    head = data[: data.index(b'\n"suites":{\n') + 1]  # the header line (evalh.document)
    path.write_bytes(head + b"\xff not json" * 1000)
    header = read_run_header(path)
    assert header.run_id == "20260101T000001000Z-abcdef" and header.label == "run 1"
    assert header.git_sha == "ab" * 20 and header.git_dirty is True
    assert header.pass_rates == {"gate": pytest.approx(2 / 3, abs=0.01), "other": pytest.approx(2 / 3, abs=0.01)}


@pytest.mark.parametrize("order", ["new", "old"])
def test_the_header_matches_a_full_load(tmp_path: Path, order: str) -> None:
    store = RunStore(tmp_path)
    for i in range(3):
        run = _run(i)
        if order == "new":
            store.write(run)
        else:
            store.path_for(run.run_id).write_bytes(_old_order(run))
    for ref in store.list_ids():
        full, header = store.load(ref), read_run_header(store.path_for(ref))
        assert (header.run_id, header.label, header.status, header.started_at) == (
            full.run_id, full.label, full.status, full.started_at)
        assert header.pass_rates == {n: s.aggregate.pass_rate for n, s in full.suites.items()}


def test_an_old_document_larger_than_the_read_chunks_is_stepped_over_by_its_closing_line(tmp_path: Path) -> None:
    """The fast path, not the item-by-item fallback: its search must survive the buffer
    being cut between chunks (it once lost its place and fell back on every large file)."""
    from evalh.run_header import CHUNK, _read

    run = _run(1, cases=2000)
    path = tmp_path / "r.json"
    path.write_bytes(_old_order(run))
    assert path.stat().st_size > 20 * CHUNK
    with path.open("rb") as fh:
        raw = _read(fh, str(path), fast=True)  # raised "ends early" when it lost its place
    assert raw is not None and raw["run_id"] == run.run_id
    assert read_run_header(path).pass_rates == {n: s.aggregate.pass_rate for n, s in run.suites.items()}


@pytest.mark.parametrize("layout", ["compact", "misleading"])
def test_an_old_document_not_indented_as_evalh_writes_lists(tmp_path: Path, layout: str) -> None:
    """Compact JSON has no closing lines to find; a hand-edited document can have a line of
    six spaces and `]` inside a case: the cases are then stepped over item by item."""
    run = _run(1)
    raw = orjson.loads(_old_order(run))
    if layout == "compact":
        data = orjson.dumps(raw)
    else:
        raw["suites"]["gate"]["cases"][0]["output"] = {"a": ["MARK"]}
        data = _old_order(Run.model_validate(raw)).replace(
            b'"MARK"\n', b'"MARK"\n      ],"x": [\n', 1)
        orjson.loads(data)  # still valid JSON
    path = tmp_path / "r.json"
    path.write_bytes(data)
    header = read_run_header(path)
    assert header.label == "run 1"
    assert header.pass_rates == {n: s.aggregate.pass_rate for n, s in run.suites.items()}


def test_a_document_of_an_older_evalh_lists() -> None:
    header = read_run_header(FIXTURE)
    assert header.label == "fixture" and header.pass_rates == {"smoke": pytest.approx(2 / 3)}


@pytest.mark.parametrize("data, says", [
    (b"", "ends early"),
    (b"[1, 2]", "not an evalh run document"),
    (b'{"schema": "evalh.run/1", "run_id": "x", "started_at": 5', "ends early"),
    (b'{"schema": "evalh.run/1", "run_id": 3}', "invalid run document at run_id"),
    (b'{"schema": "other/1"}', "not an evalh run document"),
    (b'{"schema": "evalh.run/9"}', "not supported"),
    (b'{"schema": "evalh.run/1", "run_id": "\xff"}', "not valid UTF-8"),
])
def test_a_bad_header_is_one_named_error(tmp_path: Path, data: bytes, says: str) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(data)
    with pytest.raises(RunDocumentError, match=says) as err:
        read_run_header(path)
    assert str(path) in err.value.message and "\n" not in err.value.message


def _list_peak(runs: Path, *args: str) -> tuple[object, int]:
    CliRunner().invoke(app, ["runs", "--runs-dir", str(runs / "none"), "--json"])  # imports done
    tracemalloc.start()
    try:
        result = CliRunner().invoke(app, ["runs", "--runs-dir", str(runs), "--json", *args])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


@pytest.mark.parametrize("order", ["new", "old"])
def test_listing_memory_does_not_grow_with_the_directory(tmp_path: Path, order: str) -> None:
    """Before, `evalh runs` kept every loaded run: peak memory was several times the sum of
    the documents. Now it is about one case (old documents) or one header (new ones)."""
    store = RunStore(tmp_path / "runs")
    store.runs_dir.mkdir()
    sizes = 0
    for i in range(8):
        run = _run(i, cases=600)
        if order == "new":
            sizes += store.write(run).stat().st_size
        else:
            sizes += store.path_for(run.run_id).write_bytes(_old_order(run))
    result, peak = _list_peak(store.runs_dir)
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert [r["run_id"] for r in listed] == store.list_ids()
    assert listed[0]["suites"]["gate"] == pytest.approx(_run(0, cases=600).suites["gate"].aggregate.pass_rate)
    one_document = sizes / 8
    assert peak < one_document, (peak, one_document)


def test_limit_opens_only_the_newest_runs(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    for i in range(4):
        store.write(_run(i))
    oldest = store.path_for(store.list_ids()[0])
    oldest.write_bytes(b"not json")  # never opened with -n 3: no warning about it
    result = CliRunner().invoke(app, ["runs", "--runs-dir", str(store.runs_dir), "--json", "-n", "3"])
    assert result.exit_code == 0 and "left out" not in result.output
    assert [r["run_id"] for r in json.loads(result.stdout)] == store.list_ids()[1:]
    everything = CliRunner().invoke(app, ["runs", "--runs-dir", str(store.runs_dir), "--json"])
    assert everything.exit_code == 0 and "left out" in everything.stderr
    assert len(json.loads(everything.stdout)) == 3
