"""JUnit XML from `evalh run --junit-xml` and `evalh compare --junit-xml`: a testcase per
case (per arm and attempt where there are several), `time`, failures that name the scorer
and say why, errored cases as <error>; both valid against tests/data/junit.xsd."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from typer.testing import CliRunner, Result

from evalh.cli.main import app

XSD = Path(__file__).resolve().parent / "data" / "junit.xsd"

SUITES = """
[suites.arms]
dataset = "data/smoke.jsonl"
repeats = 2
scorers = [{ type = "exact", field = "verdict" }]
target = "evalh_fixture_target:answer"
arms = [
  { name = "real", target = "evalh_fixture_target:answer" },
  { name = "yes_man", target = "evalh_fixture_target:always_accept" },
]

[suites.crashy]
dataset = "data/smoke.jsonl"
target = "evalh_fixture_target:crash_on_no"
scorers = [{ type = "exact", field = "verdict" }]
"""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def validate(path: Path) -> None:
    from lxml import etree  # the dev extra's XSD validator

    schema = etree.XMLSchema(etree.parse(str(XSD)))
    doc = etree.parse(str(path))
    assert schema.validate(doc), schema.error_log


def cases(root: ET.Element, suite: str) -> dict[str, ET.Element]:
    el = root.find(f"testsuite[@name='{suite}']")
    assert el is not None
    return {tc.get("name", ""): tc for tc in el.findall("testcase")}


def test_run_junit_names_each_case_arm_and_attempt(project: Path) -> None:
    with (project / "evalh.toml").open("a") as fh:
        fh.write(SUITES)
    config, runs, xml = str(project / "evalh.toml"), str(project / "runs"), project / "reports" / "run.xml"
    result = invoke("run", "--config", config, "--runs-dir", runs, "-q", "--junit-xml", str(xml))
    assert result.exit_code == 1, result.output  # the yes-man arm fails smoke.no; crashy errors
    validate(xml)
    root = ET.parse(xml).getroot()
    assert root.get("tests") == str(3 * 2 * 2 + 3 + 3)

    arms = cases(root, "arms")
    assert len(arms) == 12 and "smoke.no [arm yes_man] #1" in arms and "smoke.yes [arm real] #0" in arms
    failure = arms["smoke.no [arm yes_man] #0"].find("failure")
    assert failure is not None and failure.get("type") == "failed"
    assert failure.get("message", "").startswith("exact: ")
    assert "accept" in failure.get("message", "") and "reject" in failure.get("message", "")
    assert "exact: failed" in (failure.text or "") and 'output: {"verdict":"accept"}' in (failure.text or "")
    assert arms["smoke.no [arm real] #0"].find("failure") is None
    assert all(float(tc.get("time", "-1")) >= 0 for tc in arms.values())

    crashy = cases(root, "crashy")
    assert set(crashy) == {"smoke.yes", "smoke.no", "smoke.maybe"}  # one arm, one attempt: bare ids
    error = crashy["smoke.no"].find("error")
    assert error is not None and "cannot handle a refusal" in error.get("message", "")
    suite_el = root.find("testsuite[@name='crashy']")
    assert suite_el is not None and suite_el.get("errors") == "1" and suite_el.get("failures") == "0"


def test_compare_junit_is_valid_too(project: Path) -> None:
    config, runs = str(project / "evalh.toml"), str(project / "runs")
    assert invoke("run", "--config", config, "--runs-dir", runs, "-q").exit_code == 0
    toml = project / "evalh.toml"
    toml.write_text(toml.read_text().replace("evalh_fixture_target:answer", "evalh_fixture_target:always_accept"))
    assert invoke("run", "--config", config, "--runs-dir", runs, "-q").exit_code == 1
    base, cand = sorted(p.stem for p in (project / "runs").glob("*.json"))
    xml = project / "compare.xml"
    result = invoke("compare", base, cand, "--config", config, "--runs-dir", runs, "--junit-xml", str(xml))
    assert result.exit_code == 0, result.output
    validate(xml)
    smoke = cases(ET.parse(xml).getroot(), "smoke")
    regressed = smoke["smoke.no"].find("failure")
    assert regressed is not None and regressed.get("type") == "regression"
    # what regressed, in the message and the body: both sides' status, score and scorers
    assert regressed.get("message") == "regressed: passed → failed (exact)"
    body = (regressed.text or "").splitlines()
    assert body[0] == "base: passed, score 1"
    assert body[1].startswith("  exact: passed (1)")
    assert body[2] == "candidate: failed, score 0"
    assert body[3].startswith("  exact: failed (0): ") and "accept" in body[3] and "reject" in body[3]
    assert body[4] == 'candidate output: {"verdict":"accept"}'
    assert smoke["smoke.yes"].find("failure") is None
    for tc in smoke.values():  # the candidate's latency of each case
        assert float(tc.get("time", "-1")) >= 0
    suite_el = ET.parse(xml).getroot().find("testsuite[@name='smoke']")
    assert suite_el is not None and float(suite_el.get("time", "-1")) >= 0


def test_compare_junit_bodies_are_escaped_and_cut(project: Path) -> None:
    """A rationale with markup and XML-forbidden characters, and a long one: the body
    escapes the first, drops the second, and cuts the third."""
    from evalh.core.compare.decide import compare_runs
    from evalh.models import Run
    from evalh.report.junit import MAX_RATIONALE, compare_to_junit_xml

    config, runs = str(project / "evalh.toml"), str(project / "runs")
    assert invoke("run", "--config", config, "--runs-dir", runs, "-q").exit_code == 0
    toml = project / "evalh.toml"
    toml.write_text(toml.read_text().replace("evalh_fixture_target:answer", "evalh_fixture_target:always_accept"))
    assert invoke("run", "--config", config, "--runs-dir", runs, "-q").exit_code == 1
    base, cand = (Run.model_validate_json(p.read_bytes()) for p in sorted((project / "runs").glob("*.json")))
    (result,) = [r for r in cand.suites["smoke"].cases if r.case_id == "smoke.no"]
    result.scores[0].rationale = "</failure><x a='1'>&\x01" + "z" * 5000
    result.latency_ms = 1500.0
    xml = project / "hostile.xml"
    xml.write_text(compare_to_junit_xml(compare_runs(base, cand), (base, cand)), encoding="utf-8")
    validate(xml)
    tc = cases(ET.parse(xml).getroot(), "smoke")["smoke.no"]
    assert tc.get("time") == "1.500"
    text = (tc.find("failure").text or "")  # type: ignore[union-attr]
    line = next(ln for ln in text.splitlines() if ln.startswith("  exact: failed"))
    assert "</failure><x a='1'>&\ufffd" in line and line.endswith("…")
    assert len(line) < MAX_RATIONALE + 40


def test_compare_junit_names_suites_absent_from_one_side(project: Path) -> None:
    """A suite only in the base and one only in the candidate are each a testcase saying which
    side lacks it, not left out of the report: skipped, or a failure for a suite the base
    ran and the candidate did not (unless --allow-removed-suite names it)."""
    config, runs = str(project / "evalh.toml"), str(project / "runs")
    assert invoke("run", "--config", config, "--runs-dir", runs, "-q").exit_code == 0
    toml = project / "evalh.toml"
    toml.write_text(toml.read_text().replace("[suites.smoke]", "[suites.other]"))
    assert invoke("run", "--config", config, "--runs-dir", runs, "-q").exit_code == 0
    base, cand = sorted(p.stem for p in (project / "runs").glob("*.json"))
    xml = project / "compare.xml"
    # the base ran smoke and the candidate did not: a failure, until the operator says so
    result = invoke("compare", base, cand, "--config", config, "--runs-dir", runs, "--junit-xml", str(xml),
                    "--fail-on-regression")
    assert result.exit_code == 1, result.output
    validate(xml)
    (removed,) = cases(ET.parse(xml).getroot(), "smoke").values()
    failure = removed.find("failure")
    assert failure is not None and failure.get("type") == "cannot-pass"
    assert "removed from the candidate's config" in (failure.get("message") or "")
    result = invoke("compare", base, cand, "--config", config, "--runs-dir", runs, "--junit-xml", str(xml),
                    "--fail-on-regression", "--allow-removed-suite", "smoke")
    assert result.exit_code == 0, result.output
    validate(xml)
    root = ET.parse(xml).getroot()
    (removed,) = cases(root, "smoke").values()
    (added,) = cases(root, "other").values()
    assert removed.get("name") == "suite removed" and added.get("name") == "suite added"
    assert "the candidate run has no suite smoke" in (removed.find("skipped").get("message") or "")  # type: ignore[union-attr]
    assert "the base run has no suite other" in (added.find("skipped").get("message") or "")  # type: ignore[union-attr]
