"""`build_report` and its renderers, against run documents built here; `evalh report` via
CliRunner. Every rate is checked with its denominator, and null where that is zero."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.core.stats.intervals import wilson_interval
from evalh.models import Score
from evalh.report import build_report, to_html, to_json, to_markdown
from evalh.report.html import json_for_script
from tests.report_factory import HOSTILE_IMG, HOSTILE_SCRIPT, make_run, res, suite, write_runs


def one(report, suite_name: str | None = None, arm: str = "default"):  # type: ignore[no-untyped-def]
    s = next(s for s in report.suites if suite_name in (None, s.suite))
    return next(a for a in s.arms if a.arm == arm)


# --------------------------------------------------------------------------- counts


def test_errored_and_judge_error_are_counted_apart_and_never_enter_the_pass_rate() -> None:
    run = make_run("r1", {"s": suite([
        # the judge failed but the exact scorer passed: its 1.0 is not the case's score
        res("a"), res("b"), res("c", "failed"), res("d", "errored"), res("e", "judge_error", score=1.0),
    ])})
    c = one(build_report([run])).counts
    assert (c.n, c.passed, c.failed, c.errored, c.judge_error) == (5, 2, 1, 1, 1)
    assert c.pass_rate == pytest.approx(2 / 3) and c.pass_rate_denominator == 3
    assert c.error_rate == pytest.approx(1 / 5) and c.error_rate_denominator == 5
    assert c.mean_score == pytest.approx(2 / 3) and c.mean_score_denominator == 3


def test_skipped_cases_stay_out_of_the_error_rate() -> None:
    from evalh.core.results.aggregate import aggregate

    rows = [res("a"), res("d", "errored"), res("f", "skipped")]
    assert aggregate(rows).error_rate == pytest.approx(1 / 2)  # the run document's figure
    c = one(build_report([make_run("r1", {"s": suite(rows)})])).counts
    assert (c.n, c.skipped, c.errored) == (3, 1, 1)
    assert c.error_rate == pytest.approx(1 / 2) and c.error_rate_denominator == 2


def test_rates_over_zero_are_null_and_unknown_economics_are_null_not_zero() -> None:
    run = make_run("r1", {"s": suite([res("a", "errored", latency_ms=None), res("b", "errored", latency_ms=None)])})
    rep = build_report([run])
    arm = one(rep)
    assert arm.counts.pass_rate is None and arm.counts.pass_rate_denominator == 0
    assert arm.counts.mean_score is None and arm.counts.mean_score_denominator == 0
    e = arm.economics
    assert (e.tokens_in, e.tokens_out, e.cost_usd, e.latency_ms_p50) == (None, None, None, None)
    doc = orjson.loads(to_json(rep))
    got = doc["suites"][0]["arms"][0]
    assert got["counts"]["pass_rate"] is None and got["economics"]["tokens_in"] is None
    assert got["economics"]["cost_usd"] is None
    md = to_markdown(rep)
    assert "n/a (0/0)" in md and "unknown" in md
    assert "0.0%" not in md


def test_tokens_and_cost_sum_what_was_reported_and_count_the_unpriced() -> None:
    run = make_run("r1", {"s": suite([
        res("a", tokens=(100, 20), cost_usd=0.01, latency_ms=100),
        res("b", tokens=(50, 10), cost_usd=None, latency_ms=300),
        res("c", latency_ms=200),
    ])})
    e = one(build_report([run])).economics
    assert (e.tokens_in, e.tokens_out, e.tokens_reported) == (150, 30, 2)
    assert e.cost_usd == pytest.approx(0.01) and e.cost_unknown == 1 and e.cost_reported == 1
    assert e.latency_ms_p50 == pytest.approx(200) and e.latency_denominator == 3
    assert e.latency_ms_p95 == pytest.approx(290)


def test_each_suite_and_arm_is_reported_on_its_own_with_no_blended_headline() -> None:
    run = make_run("r1", {
        "big": suite([res(f"b{i}") for i in range(50)]),
        "small": suite([res("s1", "failed", arm="A"), res("s1", "passed", arm="B")], baseline_arm="A"),
    })
    rep = build_report([run])
    doc = rep.to_dict()
    assert [s["suite"] for s in doc["suites"]] == ["big", "small"]
    small = [(a["arm"], a["baseline"], a["counts"]["pass_rate"]) for a in doc["suites"][1]["arms"]]
    assert small == [("A", True, 0.0), ("B", False, 1.0)]
    assert set(doc) == {"schema", "by", "runs", "suites", "summary", "baseline", "figures"}  # no run-wide pass rate
    assert [(h["suite"], h["arm"], h["pass_rate"]) for h in doc["summary"]] == [
        ("big", "default", 1.0), ("small", "A", 0.0), ("small", "B", 1.0)]  # the summary: one line per arm


# --------------------------------------------------------------------------- breakdowns


def test_by_groups_on_any_metadata_field_and_lists_count_under_each_value() -> None:
    run = make_run("r1", {"s": suite([
        res("a", metadata={"complexity": "low", "tags": ["x", "y"]}),
        res("b", "failed", metadata={"complexity": "high", "tags": ["x"]}),
        res("c", "errored", metadata={"complexity": "high"}),
        res("d", metadata={}),
    ])})
    arm = one(build_report([run], ["complexity", "tags", "nope"]))
    by = {b.field: b for b in arm.breakdowns}
    rows = {r.value: r for r in by["complexity"].rows}
    assert list(rows) == ["high", "low", "(none)"]
    assert (rows["high"].counts.failed, rows["high"].counts.errored, rows["high"].counts.pass_rate) == (1, 1, 0.0)
    assert rows["high"].counts.pass_rate_denominator == 1
    assert rows["low"].cases == 1 and rows["low"].counts.pass_rate == 1.0
    tags = {r.value: r.cases for r in by["tags"].rows}
    assert tags == {"x": 2, "y": 1, "(none)": 2}
    assert by["tags"].note and "once under each" in by["tags"].note
    assert by["nope"].note == "no case carries metadata `nope`"


def test_tool_usage_counts_cases_and_the_share_of_them_that_went_bad() -> None:
    run = make_run("r1", {"s": suite([
        res("a", trace=[{"name": "search"}, {"name": "search"}, {"name": "fetch"}]),
        res("a", attempt=1, trace=[{"name": "search"}]),
        res("b", "failed", trace=[{"name": "search"}]),
        res("b", attempt=1, trace=[{"name": "search"}]),  # b went bad once: the case went bad
        res("c", "errored", trace=[{"name": "fetch"}]),
        res("d", "judge_error", score=None, trace=[{"name": "search"}]),
        res("e", trace=[]),
        res("f"),
    ])})
    tools = one(build_report([run])).tools
    assert tools is not None
    rows = {t.tool: t for t in tools.rows}
    search = rows["search"]
    assert (search.cases, search.results, search.calls, search.bad, search.denominator) == (3, 5, 6, 1, 2)
    assert search.bad_share == pytest.approx(0.5)
    assert (rows["fetch"].cases, rows["fetch"].results, rows["fetch"].bad, rows["fetch"].bad_share) == (2, 2, 1, 0.5)
    assert (tools.results_with_trace, tools.results_without_trace) == (7, 1)


def test_no_trace_anywhere_means_no_tool_section() -> None:
    assert one(build_report([make_run("r", {"s": suite([res("a")])})])).tools is None


# --------------------------------------------------------------------------- verdicts, worst


def _judge(verdict: str, paragraphs: list[str] | None = None, passed: bool = True) -> Score:
    details = {"paragraphs": [{"verdict": v} for v in paragraphs]} if paragraphs else {}
    return Score(scorer="cite", value=1.0 if passed else 0.0, passed=passed, verdict=verdict,
                 details=details, rationale="judge says " + verdict)


def test_verdict_distributions_per_result_and_per_paragraph() -> None:
    run = make_run("r1", {"s": suite([
        res("a", scores=[_judge("supported", ["supported", "supported"])]),
        res("b", "failed", scores=[_judge("unsupported", ["supported", "wrong_speaker", "unsupported"], False)]),
        res("c", "failed", scores=[_judge("unsupported", ["wrong_speaker"], False)]),
    ])})
    arm = one(build_report([run]))
    levels = {(v.scorer, v.level): v for v in arm.verdicts}
    result = levels[("cite", "result")]
    assert [(v.verdict, v.count, v.denominator) for v in result.verdicts] == [("unsupported", 2, 3), ("supported", 1, 3)]
    para = levels[("cite", "paragraph")]
    assert {v.verdict: v.count for v in para.verdicts} == {"supported": 3, "wrong_speaker": 2, "unsupported": 1}
    assert para.total == 6
    worst = arm.worst
    assert [w.case_id for w in worst] == ["b", "c"]  # same failures: more bad paragraphs first
    assert (worst[0].bad_paragraphs, worst[0].paragraphs) == (2, 3)
    assert worst[0].why == "judge says unsupported"


def test_paragraph_rows_of_the_citation_judge_are_read_as_it_writes_them() -> None:
    rows = [{"index": 0, "verdict": "supported", "passed": True},
            {"index": 1, "verdict": "partial", "passed": False, "metadata_mismatch": "wrong party"},
            {"index": 2, "verdict": None, "error": "judge reply unparseable"}]
    score = Score(scorer="citations", value=0.5, passed=False, details={"paragraphs": rows})
    arm = one(build_report([make_run("r", {"s": suite([res("a", "failed", scores=[score])])})]))
    para = next(v for v in arm.verdicts if v.level == "paragraph")
    assert {v.verdict: v.count for v in para.verdicts} == {"supported": 1, "partial": 1, "(judge error)": 1}
    assert (arm.worst[0].bad_paragraphs, arm.worst[0].paragraphs) == (1, 3)


def test_worst_cases_rank_by_failed_attempts_and_name_the_error() -> None:
    rs = [res("flaky", "failed", attempt=0), res("flaky", "passed", attempt=1),
          res("bad", "failed", attempt=0), res("bad", "errored", attempt=1, error=("Timeout", "took 30 s")),
          res("fine", attempt=0), res("fine", attempt=1)]
    worst = one(build_report([make_run("r", {"s": suite(rs, "stochastic")})])).worst
    assert [(w.case_id, w.failed, w.errored, w.attempts) for w in worst] == [("bad", 1, 1, 2), ("flaky", 1, 0, 2)]
    assert worst[0].why == "Timeout: took 30 s"


# --------------------------------------------------------------------------- repeats


def _repeated() -> list:  # type: ignore[type-arg]
    attempts = {"always": ("passed", "passed", "passed"), "sometimes": ("passed", "failed", "failed"),
                "never": ("failed", "failed", "errored")}
    return [res(cid, st, attempt=a) for a in range(3) for cid, sts in attempts.items() for st in [sts[a]]]


def test_repeated_runs_get_flakiness_classes_pass_at_k_and_raw_attempts() -> None:
    run = make_run("r1", {"s": suite(_repeated(), "stochastic")})
    rep = one(build_report([run])).repeats
    assert rep is not None
    assert (rep.stable_pass, rep.flaky, rep.stable_fail, rep.unknown) == (1, 1, 1, 0)
    raw = {r.case_id: r for r in rep.raw}
    assert [a.status for a in raw["never"].attempts] == ["failed", "failed", "errored"]
    assert [raw[c].flakiness for c in ("always", "sometimes", "never")] == ["stable_pass", "flaky", "stable_fail"]
    assert raw["never"].decisive == 3 and raw["never"].passes == 0
    # per-case mean and variance are computed from the raw scores shown (1, 0, 0)
    assert raw["sometimes"].mean_score == pytest.approx(1 / 3)
    assert raw["sometimes"].score_variance == pytest.approx(((2 / 3) ** 2 + 2 * (1 / 3) ** 2) / 2)
    assert raw["never"].scores_used == 2  # the errored attempt has no score to average
    pk = {p.k: p for p in rep.pass_at_k}
    assert sorted(pk) == [1, 2, 3]
    assert pk[1].pass_at_k == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert pk[3].pass_at_k == pytest.approx((1 + 1 + 0) / 3)
    assert pk[3].pass_hat_k == pytest.approx((1 + 0 + 0) / 3)
    assert pk[3].cases == 3


def test_raw_attempts_come_before_the_aggregates_in_every_text_format() -> None:
    rep = build_report([make_run("r1", {"s": suite(_repeated(), "stochastic")})])
    md = to_markdown(rep)
    assert md.index("raw attempts") < md.index("| suite / arm | cases × attempts | passed |")
    assert "failed 0.00" in md and "stable fail" in md and "pass^k" in md
    html = to_html(rep)
    assert html.index("Raw attempts") < html.index("<caption>Flakiness") < html.index("95% CI")


def test_single_attempt_runs_have_no_repeats_section() -> None:
    assert one(build_report([make_run("r", {"s": suite([res("a")])})])).repeats is None


# --------------------------------------------------------------------------- intervals


HELD = {"sampling": "random", "producer_model": "m", "prompt_sha256": "p"}
"""Attested random, producer known: what the one interval rule (evalh.labels.intervals) needs besides the split."""


def test_wilson_interval_only_for_a_held_out_stochastic_sample_with_complete_outcomes() -> None:
    held = {"split": "heldout", **HELD}
    ok = make_run("r", {"s": suite([res(f"c{i}", "passed" if i < 7 else "failed", metadata=held)
                                    for i in range(10)], "stochastic")})
    iv = one(build_report([ok])).interval
    assert (iv.successes, iv.n, iv.reason) == (7, 10, None)
    assert (iv.low, iv.high) == pytest.approx(wilson_interval(7, 10))

    det = make_run("r", {"s": suite([res("a", metadata=held)])})
    assert "deterministic" in (one(build_report([det])).interval.reason or "")

    dev = make_run("r", {"s": suite([res("a", metadata={"split": "dev", **HELD})], "stochastic")})
    assert "held-out" in (one(build_report([dev])).interval.reason or "")

    errored = make_run("r", {"s": suite([res("a", metadata=held), res("b", "errored", metadata=held)], "stochastic")})
    iv = one(build_report([errored])).interval
    assert iv.low is None and "incomplete" in (iv.reason or "")

    uneven = make_run("r", {"s": suite([res("a", metadata=held), res("a", attempt=1, metadata=held),
                                        res("b", metadata=held)], "stochastic")})
    assert "unequal attempts" in (one(build_report([uneven])).interval.reason or "")


def test_with_equal_repeats_the_interval_is_over_cases_passing_every_attempt() -> None:
    held = {"split": "test", **HELD}
    rs = [res(c, st, attempt=a, metadata=held)
          for c, sts in {"a": ("passed", "passed"), "b": ("passed", "failed"), "c": ("passed", "passed")}.items()
          for a, st in enumerate(sts)]
    iv = one(build_report([make_run("r", {"s": suite(rs, "stochastic")})])).interval
    assert (iv.successes, iv.n, iv.of) == (2, 3, "cases passing every attempt")


# --------------------------------------------------------------------------- calibration


def test_judge_calibration_accuracy_comes_with_its_denominator() -> None:
    details = {"cite": {"calibration": {"dataset": "cal.jsonl", "n": 8, "correct": 6, "accuracy": 0.75,
                                        "per_judge": [{"model": "m1", "correct": 6, "accuracy": 0.75},
                                                      {"model": "m2", "correct": 4, "accuracy": 0.5}]}},
               "other": {"usage": 3}}
    rep = build_report([make_run("r", {"s": suite([res("a")], details=details)})])
    cal = rep.suites[0].calibration
    assert [(c["name"], c["correct"], c["n"], c["accuracy"]) for c in cal] == [
        ("cite", 6, 8, 0.75), ("cite · m1", 6, 8, 0.75), ("cite · m2", 4, 8, 0.5)]
    assert "judge calibration cite: accuracy 75.0% (6/8)" in to_markdown(rep)


# --------------------------------------------------------------------------- renderers


def _hostile_run():  # type: ignore[no-untyped-def]
    return make_run("r-hostile", {"s<x>": suite([
        res("<b>id|x</b>", "failed", output=HOSTILE_IMG + HOSTILE_SCRIPT,
            scores=[Score(scorer="exact", value=0.0, passed=False, rationale=HOSTILE_SCRIPT)],
            metadata={"complexity": HOSTILE_IMG}, trace=[{"name": "</script><script>alert(1)</script>"}]),
    ])}, label=HOSTILE_SCRIPT)


def test_markdown_escapes_untrusted_text() -> None:
    md = to_markdown(build_report([_hostile_run()], ["complexity"]))
    assert "<script>" not in md and "<img" not in md and "<b>" not in md
    assert "&lt;b&gt;id\\|x&lt;/b&gt;" in md
    lines = md.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| case | attempts"))
    cells = [re.sub(r"\\\|", "", line).count("|") for line in lines[head:head + 3]]
    assert cells[0] == cells[1] == cells[2]  # an escaped pipe does not split a cell


def test_html_report_is_self_contained_and_escapes_hostile_output() -> None:
    html = to_html(build_report([_hostile_run()], ["complexity"]))
    assert html.count("<script") == 2  # the JSON data block and evalh's own script, nothing else
    assert "<img" not in html and "<b>id" not in html
    assert "&lt;img src=x onerror=" in html and "&lt;b&gt;id|x&lt;/b&gt;" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)  # nothing fetched from anywhere
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert csp is not None and "default-src 'none'" in unescape(csp.group(1))
    data = re.search(r'<script type="application/json" id="evalh-report-data">(.*?)</script>', html, re.S)
    assert data is not None
    assert "<" not in data.group(1) and ">" not in data.group(1)
    doc = json.loads(data.group(1))
    assert doc["runs"][0]["label"] == HOSTILE_SCRIPT  # the data survives intact
    assert doc["suites"][0]["arms"][0]["tools"]["rows"][0]["tool"] == "</script><script>alert(1)</script>"


def test_json_for_script_cannot_close_the_script_element() -> None:
    text = str(json_for_script({"x": "</script><!-- & \u2028"}))
    assert "</" not in text and "<!--" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"x": "</script><!-- & \u2028"}


def test_json_keys_are_stable() -> None:
    doc = orjson.loads(to_json(build_report([make_run("r", {"s": suite([res("a")])})], ["split"])))
    assert list(doc) == ["schema", "by", "runs", "suites", "summary", "baseline", "figures"] and doc["schema"] == "evalh.report/1"
    arm = doc["suites"][0]["arms"][0]
    assert list(arm) == ["arm", "baseline", "cases", "counts", "interval", "economics", "verdicts",
                         "worst", "breakdowns", "tools", "repeats", "runs"]
    assert list(arm["counts"]) == ["n", "passed", "failed", "errored", "judge_error", "skipped", "pass_rate",
                                   "pass_rate_denominator", "error_rate", "error_rate_denominator",
                                   "mean_score", "mean_score_denominator"]


def test_terminal_renderer_prints_untrusted_text_literally() -> None:
    from io import StringIO

    from rich.console import Console

    from evalh.report import render_terminal

    buf = StringIO()
    run = make_run("r", {"s": suite([res("[bold]x[/bold]", "failed")])}, label="[red]label[/red]")
    render_terminal(build_report([run]), Console(file=buf, width=200, no_color=True))
    assert "[bold]x[/bold]" in buf.getvalue() and "[red]label[/red]" in buf.getvalue()


# --------------------------------------------------------------------------- CLI

runner = CliRunner()


def _runs(tmp_path: Path) -> Path:
    runs_dir = tmp_path / "runs"
    write_runs(runs_dir, [
        make_run("20260101T000000000Z-aaaaaa", {"s": suite([res("a"), res("b", "failed")])}, label="old"),
        make_run("20260102T000000000Z-bbbbbb", {"s": suite([
            res("a", metadata={"complexity": "low"}), res("b", "errored", metadata={"complexity": "high"})])},
            label="new"),
    ])
    return runs_dir


def test_cli_reports_the_newest_run_by_default(tmp_path: Path) -> None:
    runs_dir = _runs(tmp_path)
    result = runner.invoke(app, ["report", "--runs-dir", str(runs_dir), "--by", "complexity"])
    assert result.exit_code == 0, result.output
    assert "20260102T000000000Z-bbbbbb" in result.stdout and "aaaaaa" not in result.stdout
    assert "100.0% (1/1)" in result.stdout and "by complexity" in result.stdout


def test_cli_writes_json_md_and_html_files(tmp_path: Path) -> None:
    runs_dir = _runs(tmp_path)
    for fmt, name in (("json", "r.json"), ("md", "r.md"), ("html", "r.html")):
        out = tmp_path / name
        result = runner.invoke(app, ["report", "20260101T000000000Z-aaaaaa", "20260102T000000000Z-bbbbbb",
                                     "--runs-dir", str(runs_dir), "-f", fmt, "-o", str(out)])
        assert result.exit_code == 0, result.output
        assert result.stdout == "" and f"wrote {out}" in result.stderr
        assert out.stat().st_size > 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [r["label"] for r in doc["runs"]] == ["old", "new"]
    assert "# evalh report" in (tmp_path / "r.md").read_text()
    assert (tmp_path / "r.html").read_text().startswith("<!doctype html>")


def test_cli_json_to_stdout_is_data_only(tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", "--runs-dir", str(_runs(tmp_path)), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["suites"][0]["arms"][0]["counts"]["errored"] == 1


@pytest.mark.parametrize("args", [["../etc/passwd"], ["nope-run"], ["--format", "pdf"]])
def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path: Path, args: list[str]) -> None:
    runs_dir = _runs(tmp_path)
    out = tmp_path / "never.html"
    result = runner.invoke(app, ["report", *args, "--runs-dir", str(runs_dir), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert not out.exists()


def test_cli_without_runs_says_so(tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", "--runs-dir", str(tmp_path / "empty")])
    assert result.exit_code == 2
    assert "no runs in" in result.stderr and "evalh run" in result.stderr


# --------------------------------------------------------------------------- summary first


def _repeated_runs(tmp_path: Path) -> Path:
    runs_dir = tmp_path / "runs"
    rs = [res(f"case{i:02d}", "passed" if (i + a) % 4 else "failed", attempt=a) for i in range(60) for a in range(2)]
    write_runs(runs_dir, [
        make_run("20260101T000000000Z-aaaaaa", {"s": suite([res("a"), res("b")]), "r": suite(rs, "stochastic")}),
        make_run("20260102T000000000Z-bbbbbb", {"s": suite([res("a"), res("b", "failed")]), "r": suite(rs, "stochastic")}),
    ])
    return runs_dir


def test_terminal_report_opens_with_the_summary_before_any_raw_table(tmp_path: Path) -> None:
    runs_dir = _repeated_runs(tmp_path)
    result = runner.invoke(app, ["report", "--runs-dir", str(runs_dir)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.index("Summary") < out.index("pass rate") < out.index("suite s (")
    r = out[out.index("suite r (stochastic)"):]
    assert r.index("raw attempts") < r.index("p50 ms")  # the raw table still before its aggregates
    head = out[:out.index("raw attempts")]
    assert "50.0% (1/2)" in head and "75.0% (90/120)" in head  # every suite's headline, with denominators
    assert "60 × 2" in head and "30 flaky cases" in head
    assert "case00" not in head  # no attempt before the summary


def test_no_raw_folds_the_raw_tables_and_keeps_the_aggregates(tmp_path: Path) -> None:
    runs_dir = _repeated_runs(tmp_path)
    shown = runner.invoke(app, ["report", "--runs-dir", str(runs_dir), "--raw"], env={"COLUMNS": "200"}).stdout
    folded = runner.invoke(app, ["report", "--runs-dir", str(runs_dir), "--no-raw"], env={"COLUMNS": "200"})
    assert folded.exit_code == 0, folded.output
    assert "raw attempts (every aggregate" in shown and "raw attempts (every aggregate" not in folded.stdout
    assert "r: raw attempts of 60 cases folded (--raw shows them" in folded.stdout
    assert "pass@k" in folded.stdout and "flakiness over 60 cases" in folded.stdout
    assert "case49" in shown and "case49" not in folded.stdout


def test_summary_gives_each_runs_verdict_against_the_baseline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalh.baseline import write_baseline
    from evalh.core.compare.decide import ComparePolicy, compare_runs
    from evalh.store import RunStore

    runs_dir = _repeated_runs(tmp_path)
    monkeypatch.chdir(tmp_path)
    write_baseline(tmp_path, "20260101T000000000Z-aaaaaa")
    result = runner.invoke(app, ["report", "--runs-dir", str(runs_dir), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    store = RunStore(runs_dir)
    cmp = compare_runs(store.load("20260101T000000000Z-aaaaaa"), store.load("20260102T000000000Z-bbbbbb"), ComparePolicy())
    [b] = doc["baseline"]
    assert (b["base"], b["verdict"], b["fails_gate"]) == ("20260101T000000000Z-aaaaaa", cmp.verdict, cmp.fails_gate)
    assert {h["suite"]: h["versus"] for h in doc["summary"]} == {n: s.verdict for n, s in cmp.suites.items()}
    assert cmp.suites["s"].verdict == "regressed"
    text = runner.invoke(app, ["report", "--runs-dir", str(runs_dir), "--no-raw"], env={"COLUMNS": "200"}).stdout
    assert "run 20260102T000000000Z-bbbbbb vs baseline 20260101T000000000Z-aaaaaa: regressed; gate FAIL" in text
    assert text.index("vs baseline") < text.index("suite s (deterministic)")
    # the baseline run itself is not compared with itself, and a broken marker breaks nothing
    same = json.loads(runner.invoke(app, ["report", "20260101T000000000Z-aaaaaa", "--runs-dir", str(runs_dir), "-f", "json"]).stdout)
    assert same["baseline"][0]["note"] == "this run is the baseline" and same["summary"][0]["versus"] is None
    (tmp_path / "BASELINE").write_text("../../etc\n")
    broken = runner.invoke(app, ["report", "--runs-dir", str(runs_dir), "-f", "json"])
    assert broken.exit_code == 0 and "cannot read BASELINE" in json.loads(broken.stdout)["baseline"][0]["note"]


def test_html_report_opens_with_the_summary(tmp_path: Path) -> None:
    runs_dir = _repeated_runs(tmp_path)
    from evalh.store import RunStore

    store = RunStore(runs_dir)
    html = to_html(build_report([store.load(i) for i in store.list_ids()]))
    assert html.index('id="summary"') < html.index('<section class="run">') < html.index("Raw attempts")
    summary = html[html.index('id="summary"'):html.index("</section>", html.index('id="summary"'))]
    assert summary.count("<tr>") == 1 + 4  # header, 2 runs × 2 suites
    assert "75.0% (90/120)" in summary and "60 × 2" in summary


def test_cli_html_of_two_runs_lays_their_changed_cases_side_by_side(tmp_path: Path) -> None:
    runs_dir = _runs(tmp_path)
    two, one = tmp_path / "two.html", tmp_path / "one.html"
    ok = runner.invoke(app, ["report", "20260101T000000000Z-aaaaaa", "20260102T000000000Z-bbbbbb",
                             "--runs-dir", str(runs_dir), "-f", "html", "-o", str(two)])
    assert ok.exit_code == 0, ok.output
    page = two.read_text()
    assert 'id="pairs"' in page and 'data-case="b"' in page and 'data-case="a"' not in page  # only b changed
    pair = page[page.index('data-case="b"'):page.index("</details>", page.index('data-case="b"'))]
    assert "failed → errored" in pair and "errored new" in pair and "TargetError: b fell over" in pair
    runner.invoke(app, ["report", "20260101T000000000Z-aaaaaa", "--runs-dir", str(runs_dir), "-f", "html", "-o", str(one)])
    assert 'id="pairs"' not in one.read_text()
