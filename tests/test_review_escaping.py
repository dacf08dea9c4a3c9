"""Review findings: untrusted text, honest numbers and atomic writes at the edges."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from compare_factory import det_suite, make_run

from evalh.core.compare import compare_runs
from evalh.report.compare_render import to_junit_xml


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
