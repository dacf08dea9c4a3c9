"""`evalh report` and `evalh show` read a run's results one at a time (`run_results`): the
report of a streamed document must be the report of the same run in memory, whatever the
run holds, and a damaged document must stop it with the loader's own error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from stream_factory import KINDS, report_run

from evalh.errors import RunDocumentError
from evalh.models import CaseResult
from evalh.report import build_report, to_json
from evalh.report.build import suite_report
from evalh.run_results import RunResults, open_results
from evalh.store import RunStore


@pytest.mark.parametrize("kind", range(len(KINDS)))
def test_the_streamed_report_is_the_report_of_the_run_in_memory(tmp_path: Path, kind: int) -> None:
    store = RunStore(tmp_path)
    run = report_run("20260101T000000000Z-00000a", kind, **KINDS[kind])
    store.write(run)
    fields = ["complexity", "tags", "split", "missing"]
    streamed = open_results(store, run.run_id)
    assert streamed.path is not None and not isinstance(streamed.header, type(None))
    assert all(not s.cases for s in streamed.header.suites.values())  # the header alone is held
    in_memory = to_json(build_report([store.load(run.run_id)], fields))
    assert to_json(build_report([streamed], fields)) == in_memory
    assert to_json(build_report([run], fields)) == in_memory
    # one suite on its own, as the classification tests build it, is the same report's suite
    report = build_report([run], fields)
    assert suite_report(run.run_id, "s", run.suites["s"], fields).model_dump() == report.suites[0].model_dump()


def test_the_worst_cases_reasons_are_read_again_from_their_lines(tmp_path: Path) -> None:
    """A worst case's reason is the earliest attempt's that says why, read back by its offset."""
    store = RunStore(tmp_path)
    run = report_run("20260101T000000000Z-00000a", 3, repeats=3)
    store.write(run)
    worst = build_report([open_results(store, run.run_id)]).suites[0].arms[0].worst
    assert worst and any(w.why for w in worst)
    for w in worst:
        rs = sorted((r for r in run.suites["s"].cases if r.case_id == w.case_id), key=lambda r: r.attempt)
        whys = [r.error.type + ": " + r.error.message if r.error else
                next((s.error or s.rationale for s in r.scores if s.passed is False or s.error), None) for r in rs]
        assert w.why == next((x for x in whys if x), None)
        assert (w.failed, w.errored, w.attempts) == (sum(r.status == "failed" for r in rs),
                                                      sum(r.status == "errored" for r in rs), len(rs))


def test_visit_sees_every_result_once_in_document_order(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    run = report_run("20260101T000000000Z-00000a", 1, repeats=2)  # repeated: read twice, visited once
    store.write(run)
    seen: list[tuple[str, str, int]] = []

    def visit(at: int, run_id: str, suite: str, r: CaseResult) -> None:
        assert (at, run_id) == (0, run.run_id)
        seen.append((suite, r.case_id, r.attempt))

    build_report([open_results(store, run.run_id)], visit=visit)
    assert seen == [(n, r.case_id, r.attempt) for n, s in run.suites.items() for r in s.cases]


def _damage(path: Path, edit: Any) -> None:
    lines = path.read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b'{"case_id"'))
    lines[at + 5] = edit(lines[at + 5])
    path.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize("edit, says", [
    (lambda line: line.replace(b'"attempt":', b'"attempt":"x","was":', 1), "attempt"),
    (lambda line: line[:40], "not valid JSON"),
])
def test_a_damaged_result_stops_the_streamed_report_as_the_loader_stops(tmp_path: Path, edit: Any, says: str) -> None:
    store = RunStore(tmp_path)
    run = report_run("20260101T000000000Z-00000a", 2)
    store.write(run)
    _damage(store.path_for(run.run_id), edit)
    with pytest.raises(RunDocumentError) as loaded:
        store.load(run.run_id)
    streamed = open_results(store, run.run_id)  # the header is sound
    with pytest.raises(RunDocumentError) as read:
        build_report([streamed])
    assert says in str(read.value)
    assert str(read.value) == str(loaded.value)


def test_a_run_in_memory_is_read_from_its_models() -> None:
    run = report_run("20260101T000000000Z-00000a", 4)
    results = RunResults(run)
    assert [r for _, _, r in results] == [r for s in run.suites.values() for r in s.cases]
    assert run.suites["s"].cases  # the run itself keeps its results
    assert results.fetch("s", 3) is run.suites["s"].cases[3]


def _cli(*args: str) -> Any:
    from typer.testing import CliRunner

    from evalh.cli.main import app

    return CliRunner().invoke(app, list(args))


def test_show_lists_the_first_failures_and_counts_the_rest_from_its_one_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalh.cli.runs_cmd as runs_cmd

    monkeypatch.setattr(runs_cmd, "SHOWN_FAILURES", 3)
    store = RunStore(tmp_path)
    run = report_run("20260101T000000000Z-00000a", 5, cases=30)
    run.suites["s"].aggregate.failed = 0  # a header that undercounts: the reading counts them
    run.suites["s"].aggregate.errored = run.suites["s"].aggregate.judge_error = 0
    store.write(run)
    bad = [r for r in run.suites["s"].cases if r.status in ("failed", "errored", "judge_error")]
    got = _cli("show", run.run_id, "--runs-dir", str(tmp_path))
    assert got.exit_code == 0, got.output
    assert f"s: {len(bad)} not passed" in got.output
    for r in bad[:3]:
        assert f"{r.status:<11} {r.case_id}" in got.output
    assert f"{bad[3].status:<11} {bad[3].case_id}  " not in got.output
    assert f"… and {len(bad) - 3} more" in got.output


@pytest.mark.parametrize("json_out", [False, True])
def test_show_of_a_damaged_result_prints_nothing_but_the_error(tmp_path: Path, json_out: bool) -> None:
    store = RunStore(tmp_path)
    run = report_run("20260101T000000000Z-00000a", 6)
    store.write(run)
    _damage(store.path_for(run.run_id), lambda line: line.replace(b'"attempt":', b'"attempt":[],"was":', 1))
    got = _cli("show", run.run_id, "--runs-dir", str(tmp_path), *(["--json"] if json_out else []))
    assert got.exit_code == 2
    lines = got.output.strip().splitlines()
    assert len(lines) == 1 and "attempt" in lines[0] and "invalid run document" in lines[0], got.output


def test_a_streamed_report_holds_numbers_per_case_not_the_results(tmp_path: Path) -> None:
    """What a report keeps while it reads (`read_suites`: every piece's state once the
    results are read) grows by a few numbers a case: per case added, a fraction of what the
    results take as models. Fixed costs (imports, the read buffer) cancel out between the
    two sizes."""
    import gc
    import tracemalloc

    from evalh.report.build import read_suites

    store = RunStore(tmp_path)
    ids = {n: f"20260101T00000000{k}Z-00000a" for k, n in enumerate((100, 800, 1600))}
    for n, run_id in ids.items():
        store.write(report_run(run_id, 8, cases=n, mess=0.0))
    gc.collect()

    def held(fn: Any) -> int:
        tracemalloc.start()
        try:
            kept = fn()
            return tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
            del kept

    def streamed(run_id: str) -> Any:
        return read_suites(open_results(store, run_id), ["complexity"])

    streamed(ids[100])  # imports done before anything is measured
    small, large = ids[800], ids[1600]
    per_case_loaded = (held(lambda: store.load(large)) - held(lambda: store.load(small))) / 800
    per_case_streamed = (held(lambda: streamed(large)) - held(lambda: streamed(small))) / 800
    assert per_case_streamed < 500 and per_case_streamed < per_case_loaded / 6, (per_case_streamed, per_case_loaded)


def test_a_secret_a_result_quotes_is_in_no_report_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A product that echoes its key puts it in an error or a rationale; the document is
    scrubbed, a run in memory is not, and a report of it is output all the same."""
    from evalh.models import ErrorInfo, Score
    from evalh.report import render_terminal, to_html, to_markdown
    from evalh.report.render import terminal_text

    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv("DEMO_API_KEY", secret)
    run = report_run("20260101T000000000Z-00000a", 9)
    for i, r in enumerate(run.suites["s"].cases[:12]):
        if i % 2:
            r.status, r.error = "errored", ErrorInfo(type="AuthError", message=f"bad key {secret}")
        else:
            r.status = "failed"
            r.scores = [Score(scorer="exact", value=0.0, passed=False, rationale=f"the answer quoted {secret}")]
        r.metadata["complexity"] = f"k={secret}"
    report = build_report([run], ["complexity"])
    assert any(w.why and "[REDACTED]" in w.why for a in report.suites[0].arms for w in a.worst)
    from io import StringIO

    from rich.console import Console

    console = Console(file=StringIO(), width=120)
    render_terminal(report, console)
    for text in (to_json(report), to_markdown(report), to_html(report), terminal_text(report),
                 console.file.getvalue()):  # type: ignore[attr-defined]
        assert secret not in text
    monkeypatch.delenv("DEMO_API_KEY")
    assert secret in to_json(build_report([run], ["complexity"]))  # what was scrubbed: only the secret


def test_a_split_that_is_a_list_or_a_table_is_not_held_out(tmp_path: Path) -> None:
    run = report_run("20260101T000000000Z-00000a", 10, mess=0.0)
    for i, r in enumerate(run.suites["s"].cases):
        r.metadata["split"] = ["test"] if i % 2 else {"name": "test"}
    interval = build_report([run]).suites[0].arms[0].interval
    assert interval.low is None and "not every case is from a held-out split" in (interval.reason or "")


def test_scores_near_the_largest_float_are_figures_not_a_crash() -> None:
    run = report_run("20260101T000000000Z-00000a", 11, repeats=2, mess=0.0)
    for r in run.suites["s"].cases:
        if r.status in ("passed", "failed"):
            r.score = 1e308
            r.scores[0].value = -1e308 if r.attempt else 1e308
    arm = build_report([run]).suites[0].arms[0]
    assert arm.repeats is not None and arm.runs is not None
    assert any(row.score_variance == float("inf") for row in arm.repeats.raw)
