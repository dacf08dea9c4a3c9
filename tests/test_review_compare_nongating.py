"""Review of issue 10: a row with ``gating: false`` (the blended mean score when the suite
names ``gate_scores``) is outside the Holm family and "does not move the verdict"
(docs/methodology.md), yet it still gets an unadjusted ``regressed`` verdict that the
JUnit output reports as a <failure> and the gate line quotes as the suite's regression."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from compare_factory import make_run, suite

from evalh.core.compare.decide import compare_runs
from evalh.models import CaseResult, Score
from evalh.report.compare_render import to_junit_xml, to_markdown

CFG = {"suites": {"s": {"gate_scores": ["rubric"]}}}


def _scored(cid: str, rubric: float, style: float) -> CaseResult:
    return CaseResult(
        case_id=cid, case_digest=f"d-{cid}", status="passed" if rubric >= 0.5 else "failed",
        score=(rubric + style) / 2,
        scores=[Score(scorer="rubric", value=rubric, passed=rubric >= 0.5),
                Score(scorer="style", value=style, passed=True)],
    )


def _cmp(rubric_drop: float):
    base = [_scored(f"c{i}", 0.8 + (i % 5) * 0.01, 0.9) for i in range(200)]
    cand = [_scored(f"c{i}", 0.8 + (i % 5) * 0.01 - rubric_drop * (i % 2) * 2, 0.5) for i in range(200)]
    return compare_runs(make_run("b", {"s": suite(base, "stochastic")}, config=CFG),
                        make_run("c", {"s": suite(cand, "stochastic")}, config=CFG))


def test_a_non_gating_row_is_not_a_junit_failure_when_the_gate_passes() -> None:
    cmp = _cmp(0.0)  # the gated rubric is unchanged; only the blend (style) dropped
    assert not cmp.fails_gate and cmp.suites["s"].verdict == "flat"
    root = ET.fromstring(to_junit_xml(cmp))
    failed = [tc.get("name") for tc in root.iter("testcase") if tc.find("failure") is not None]
    assert failed == [], failed


def test_the_gate_line_names_the_gating_row_that_regressed() -> None:
    cmp = _cmp(0.1)  # the rubric drops 0.1 on every other case: the gating row regresses
    rubric = next(m for m in cmp.suites["s"].metrics if m.name == "score")
    assert rubric.verdict == "regressed" and cmp.fails_gate
    assert "score[rubric] regressed" in cmp.gate_reasons[0], cmp.gate_reasons
    assert "mean_score regressed" not in to_markdown(cmp)  # a non-gating row, not a verdict
