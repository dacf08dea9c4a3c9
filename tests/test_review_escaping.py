"""Review findings: untrusted text, honest numbers and atomic writes at the edges."""

from __future__ import annotations

import io
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import report_factory as rf
from compare_factory import det_suite, make_run
from rich.console import Console
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.core.compare.decide import compare_runs
from evalh.models import Score
from evalh.report.compare_render import to_junit_xml
from evalh.store import RunStore

BASE_ID = "20260101T000000000Z-aaaaaa"
CAND_ID = "20260101T000100000Z-bbbbbb"


def _outcome(tc: ET.Element) -> str:
    for tag in ("failure", "error", "skipped"):
        if tc.find(tag) is not None:
            return tag
    return "pass"


def test_junit_never_shows_an_errored_or_judge_error_candidate_case_as_a_pass() -> None:
    base = make_run("base", {"gate": det_suite({"a": "errored", "b": "passed", "c": "failed", "d": "passed"})})
    cand = make_run("cand", {"gate": det_suite({"a": "errored", "b": "judge_error", "c": "errored", "d": "passed"})})
    root = ET.fromstring(to_junit_xml(compare_runs(base, cand)))
    suite = root.find("testsuite")
    assert suite is not None
    seen = {tc.get("name"): _outcome(tc) for tc in suite.iter("testcase")}
    assert seen["d"] == "pass"
    assert seen["a"] == "error" and seen["c"] == "error"  # errored in the candidate
    assert seen["b"] == "skipped"  # judge error: not a product verdict, not a pass
    assert suite.get("errors") == "2" and root.get("errors") == "2"
    assert suite.get("skipped") == "1"


def test_junit_file_is_replaced_atomically_never_rewritten_in_place(tmp_path: Path) -> None:
    # A file written in place is truncated first: a reader (or a crash) in between sees half
    # a document. A hard link to the old file shows which way it was written.
    store = RunStore(tmp_path / "runs")
    store.write(make_run(BASE_ID, {"gate": det_suite({"a": "passed"})}))
    store.write(make_run(CAND_ID, {"gate": det_suite({"a": "failed"})}))
    path = tmp_path / "compare.xml"
    path.write_text("<old/>\n")
    keep = tmp_path / "old.xml"
    os.link(path, keep)
    result = CliRunner().invoke(app, ["compare", BASE_ID, CAND_ID, "--junit-xml", str(path),
                                      "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    assert ET.parse(path).getroot().get("failures") == "1"
    assert keep.read_text() == "<old/>\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


# An OSC 8 hyperlink and a screen clear: a model's output or a case id that reaches the
# terminal raw can rewrite what a CI log or a developer's terminal shows.
ESCAPES = "\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07\x1b[2J\x9b31m"


def _plain_console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=False, no_color=True, width=200), buf


def test_terminal_run_summary_drops_control_sequences_from_untrusted_text() -> None:
    from evalh.report.terminal.run import render_run

    run = rf.make_run("r1", {"gate": rf.suite([
        rf.res("id" + ESCAPES, "errored", error=("TargetError", "boom" + ESCAPES)),
        rf.res("b", "failed", scores=[Score(scorer="judge", value=0.0, passed=False, rationale="no" + ESCAPES)]),
    ])}, label="lbl" + ESCAPES)
    console, buf = _plain_console()
    render_run(run, console)
    text = buf.getvalue()
    assert "boom" in text and "click" in text
    assert "\x1b" not in text and "\x9b" not in text and "\x07" not in text


def test_terminal_report_and_compare_drop_control_sequences() -> None:
    from evalh.report import build_report
    from evalh.report.compare_render import render_terminal as compare_terminal
    from evalh.report.render import render_terminal as report_terminal

    base = rf.make_run("r1", {"gate": rf.suite([rf.res("c" + ESCAPES, "passed")])}, label="x" + ESCAPES)
    cand = rf.make_run("r2", {"gate": rf.suite([
        rf.res("c" + ESCAPES, "errored", error=("TargetError", "bad" + ESCAPES))])}, label="y" + ESCAPES)
    console, buf = _plain_console()
    report_terminal(build_report([cand]), console)
    compare_terminal(compare_runs(base, cand), console)
    text = buf.getvalue()
    assert "click" in text
    assert "\x1b" not in text and "\x9b" not in text and "\x07" not in text


def test_error_and_warning_lines_drop_control_sequences(capsys: pytest.CaptureFixture[str]) -> None:
    from evalh.console import error_line

    error_line("cannot read" + ESCAPES)
    err = capsys.readouterr().err
    assert err.startswith("error: cannot read") and "\x1b" not in err and "\x07" not in err


def test_label_sidecar_is_scrubbed_of_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ratings now live in the content-bound ratings store (issue 15): it is scrubbed too
    from evalh.labels.store import RatingRecord, load_store

    secret = "sk-review-0123456789abcdef"
    monkeypatch.setenv("REVIEW_API_KEY", secret)
    store = load_store(tmp_path)
    path = store.append([RatingRecord(
        request_sha256="0" * 64, rubric_sha256="1" * 64, rater="ann", item="request", field="label",
        value="pass", note=f"the output quoted {secret}", source=f"labels/{secret}.jsonl:1")])
    assert path is not None
    assert secret not in path.read_text() and "[REDACTED]" in path.read_text()


def test_sweep_score_measure_of_a_judge_error_is_errored_not_the_other_scorers_mean() -> None:
    from evalh.core.analysis.sweep import ERRORED_MEASURE, measure_of
    from evalh.sweep_spec import SweepConfig

    spec = SweepConfig(positive="bad", measure="score")
    # the exact-match scorer passed, the judge failed: the stored score is the exact match's
    # alone, which is not the case's score
    r = rf.res("c", "judge_error", score=1.0, scores=[
        Score(scorer="exact", value=1.0, passed=True),
        Score(scorer="judge", value=None, passed=None, error="unparseable")])
    # a failed call: errored (excluded, or a miss, by the sweep's rule), never a number
    assert measure_of(spec, r) == ERRORED_MEASURE
    assert measure_of(SweepConfig(positive="bad", measure="scorer:exact"), r) == 1.0
