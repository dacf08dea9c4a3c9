"""`evalh compare` and `evalh baseline` through Typer's CliRunner: exit codes 0/1/2/3,
stdout vs stderr, the markdown and JSON forms, JUnit XML read back, BASELINE on disk."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from compare_factory import binary_runs, det_suite, make_run
from typer.testing import CliRunner, Result

from evalh.cli.main import app
from evalh.models import Run
from evalh.store import RunStore

BASE = "20260101T000000000Z-aaaaaa"
SAME = "20260101T000100000Z-bbbbbb"
WORSE = "20260101T000200000Z-cccccc"
FEW = "20260101T000300000Z-dddddd"
FEW_BASE = "20260101T000030000Z-eeeeee"


def _with_id(run: Run, run_id: str) -> Run:
    run.run_id = run_id
    return run


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """A runs directory: a base, an equal run, a run with one regression, and a pair of
    stochastic runs too small to tell (inconclusive)."""
    store = RunStore(tmp_path / "runs")
    gate = {"a": "passed", "b": "passed", "c": "failed"}
    store.write(make_run(BASE, {"gate": det_suite(gate)}, label="main"))
    store.write(make_run(SAME, {"gate": det_suite(gate)}))
    store.write(make_run(WORSE, {"gate": det_suite(dict(gate, b="failed"))}, label="pr <42>"))
    small_base, small_cand = binary_runs(30, 0.8, 0.75, seed=4)
    store.write(_with_id(small_base, FEW_BASE))
    store.write(_with_id(small_cand, FEW))
    return tmp_path / "runs"


def invoke(runs: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--runs-dir", str(runs)])


def one_error_line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def test_no_regression_exits_0_with_a_table(runs: Path) -> None:
    result = invoke(runs, "compare", BASE, SAME, "--fail-on-regression")
    assert result.exit_code == 0, result.output
    assert "gate (deterministic): flat" in result.stdout
    assert "overall: flat" in result.stdout


def test_regression_exits_1_only_with_fail_on_regression(runs: Path) -> None:
    result = invoke(runs, "compare", BASE, WORSE)
    assert result.exit_code == 0, result.output
    assert "regressed" in result.stdout and "b: passed → failed" in result.stdout
    result = invoke(runs, "compare", BASE, WORSE, "--fail-on-regression")
    assert result.exit_code == 1, result.output


def test_inconclusive_exits_3_only_with_fail_on_inconclusive(runs: Path) -> None:
    result = invoke(runs, "compare", FEW_BASE, FEW, "--fail-on-regression")
    assert result.exit_code == 0, result.output
    assert "inconclusive" in result.stdout and "cases would settle a change of" in result.stdout
    # This pair's estimate is +10 points, inconclusive on the better side: no reason to fail.
    assert "estimate on the better side" in result.stdout
    result = invoke(runs, "compare", FEW_BASE, FEW, "--fail-on-regression", "--fail-on-inconclusive")
    assert result.exit_code == 0, result.output
    # The same runs the other way round: inconclusive on the worse side, exit 3.
    result = invoke(runs, "compare", FEW, FEW_BASE, "--fail-on-regression", "--fail-on-inconclusive")
    assert result.exit_code == 3 and "estimate on the worse side" in result.stdout, result.output


def test_regression_wins_over_inconclusive(runs: Path, tmp_path: Path) -> None:
    store = RunStore(runs)
    b, c = store.load(FEW_BASE), store.load(FEW)
    b.suites["gate"] = det_suite({"x": "passed"})
    c.suites["gate"] = det_suite({"x": "failed"})
    store.write(_with_id(b, "20260102T000000000Z-aaaaaa"))
    store.write(_with_id(c, "20260102T000100000Z-aaaaaa"))
    result = invoke(runs, "compare", "20260102T000000000Z-aaaaaa", "20260102T000100000Z-aaaaaa",
                    "--fail-on-regression", "--fail-on-inconclusive")
    assert result.exit_code == 1, result.output


def test_missing_run_is_exit_2_in_one_line(runs: Path) -> None:
    result = invoke(runs, "compare", BASE, "20990101T000000000Z-ffffff")
    assert result.exit_code == 2
    assert "no run '20990101T000000000Z-ffffff'" in one_error_line(result)
    assert result.stdout == ""


def test_invalid_document_and_invalid_id_are_exit_2_in_one_line(runs: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "evalh.run/1", "run_id": 3}')
    result = invoke(runs, "compare", BASE, str(bad))
    assert result.exit_code == 2
    assert "invalid run document" in one_error_line(result)
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    result = invoke(runs, "compare", str(garbage), BASE)
    assert result.exit_code == 2 and "not valid JSON" in one_error_line(result)
    result = invoke(runs, "compare", "../../etc/passwd", BASE)
    assert result.exit_code == 2 and "invalid run id" in one_error_line(result)


def test_bad_flag_value_is_a_usage_error(runs: Path) -> None:
    result = invoke(runs, "compare", BASE, SAME, "--pass-rate-drop", "2")
    assert result.exit_code == 2
    result = invoke(runs, "compare", BASE, SAME, "--format", "yaml")
    assert result.exit_code == 2


def test_runs_can_be_named_by_path(runs: Path) -> None:
    result = invoke(runs, "compare", str(runs / f"{BASE}.json"), str(runs / f"{WORSE}.json"),
                    "--fail-on-regression")
    assert result.exit_code == 1, result.output


def test_json_format_is_the_stable_document(runs: Path) -> None:
    result = invoke(runs, "compare", BASE, WORSE, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "evalh.compare/2" and doc["regressed"] is True
    assert doc["base"]["run_id"] == BASE and doc["candidate"]["label"] == "pr <42>"
    assert [c["case_id"] for c in doc["suites"]["gate"]["cases"]["regressed"]] == ["b"]
    assert "evalh compare: regressed" in result.stderr  # talk on stderr, data on stdout


def test_markdown_format_fits_a_job_summary(runs: Path) -> None:
    result = invoke(runs, "compare", BASE, WORSE, "--format", "markdown", "--fail-on-regression")
    assert result.exit_code == 1
    md = result.stdout
    assert md.startswith("## evalh compare: **REGRESSED**")
    assert "| gate | deterministic | **regressed** |" in md
    assert "- b: passed → failed" in md
    assert "pr &lt;42&gt;" in md  # labels are escaped


def test_junit_xml_is_written_and_parses_back(runs: Path, tmp_path: Path) -> None:
    path = tmp_path / "reports" / "compare.xml"
    result = invoke(runs, "compare", BASE, WORSE, "--junit-xml", str(path))
    assert result.exit_code == 0, result.output
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites" and root.get("failures") == "1" and root.get("tests") == "3"
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "gate"
    failing = [tc.get("name") for tc in suite.iter("testcase") if tc.find("failure") is not None]
    assert failing == ["b"]


def test_junit_xml_for_stochastic_suites_reports_metric_rows(runs: Path, tmp_path: Path) -> None:
    path = tmp_path / "stoch.xml"
    result = invoke(runs, "compare", FEW_BASE, FEW, "--junit-xml", str(path))
    assert result.exit_code == 0, result.output
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    metric = next(tc for tc in suite.iter("testcase") if tc.get("name") == "metric: pass rate")
    assert metric.find("skipped") is not None  # inconclusive
    assert int(suite.get("tests", "0")) == 31


def test_junit_xml_unwritable_path_is_exit_2(runs: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = invoke(runs, "compare", BASE, SAME, "--junit-xml", str(blocker / "x.xml"))
    assert result.exit_code == 2 and "cannot write" in one_error_line(result)


def test_flags_override_the_allowances(runs: Path) -> None:
    # without the flag this comparison is inconclusive and exits 3: the flag must move the
    # gate's exit code too, not only the JSON
    result = invoke(runs, "compare", FEW_BASE, FEW, "--format", "json", "--pass-rate-drop", "0.5",
                    "--fail-on-regression", "--fail-on-inconclusive")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    row = doc["suites"]["s"]["metrics"][0]
    assert row["allowance"] == 0.5 and row["verdict"] == "flat"
    assert "command-line" in doc["suites"]["s"]["thresholds_source"]


# --------------------------------------------------------------------------- baseline


def test_compare_without_baseline_says_what_to_do(runs: Path) -> None:
    result = invoke(runs, "compare")
    assert result.exit_code == 2
    assert "evalh baseline set RUN_ID" in one_error_line(result)


def test_baseline_set_show_and_default_compare(runs: Path) -> None:
    assert invoke(runs, "baseline", "show").exit_code == 2
    result = invoke(runs, "baseline", "set", BASE)
    assert result.exit_code == 0, result.output
    assert Path("BASELINE").read_text() == BASE + "\n"  # the project root: here, the cwd
    result = invoke(runs, "baseline", "show")
    assert result.exit_code == 0 and result.stdout == BASE + "\n"
    shown = json.loads(invoke(runs, "baseline", "show", "--json").stdout)
    assert shown["run_id"] == BASE and shown["run_exists"] is True
    # BASELINE vs the newest run (FEW, a stochastic-only run: gate is `removed`).
    result = invoke(runs, "compare", "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["base"]["run_id"] == BASE and doc["candidate"]["run_id"] == FEW
    # One run named: it is the base, the newest run the candidate.
    doc = json.loads(invoke(runs, "compare", WORSE, "--format", "json").stdout)
    assert doc["base"]["run_id"] == WORSE and doc["candidate"]["run_id"] == FEW


def test_baseline_set_refuses_a_missing_run_or_bad_id(runs: Path) -> None:
    result = invoke(runs, "baseline", "set", "20990101T000000000Z-ffffff")
    assert result.exit_code == 2 and "no run" in one_error_line(result)
    result = invoke(runs, "baseline", "set", "a/../../b")
    assert result.exit_code == 2 and "invalid run id" in one_error_line(result)
    assert not Path("BASELINE").exists()


def test_a_corrupt_baseline_file_is_exit_2(runs: Path) -> None:
    Path("BASELINE").write_text("../../etc/passwd\n")
    result = invoke(runs, "compare")
    assert result.exit_code == 2 and "BASELINE" in one_error_line(result)


def test_run_then_compare_with_baseline_end_to_end(project: Path) -> None:
    """The CI story on a real project: run, set the baseline, break the product, run again,
    compare: exit 1 with the broken case named."""
    cfg, runs = str(project / "evalh.toml"), str(project / "runs")
    runner = CliRunner()
    assert runner.invoke(app, ["run", "--config", cfg, "--runs-dir", runs, "-q"]).exit_code == 0
    first = RunStore(Path(runs)).list_ids()[-1]
    result = runner.invoke(app, ["baseline", "set", first, "--config", cfg, "--runs-dir", runs])
    assert result.exit_code == 0, result.output
    assert (project / "BASELINE").read_text().strip() == first
    toml = project / "evalh.toml"
    toml.write_text(toml.read_text().replace(":answer", ":always_accept"))
    assert runner.invoke(app, ["run", "--config", cfg, "--runs-dir", runs, "-q"]).exit_code == 1
    result = runner.invoke(app, ["compare", "--config", cfg, "--runs-dir", runs,
                                 "--fail-on-regression", "--format", "markdown"])
    assert result.exit_code == 1, result.output
    assert "smoke.no: passed → failed" in result.stdout
    assert "target.callable" in result.stdout  # the config difference, stated at the top
