"""Per-lens confusion scoring: the pure counts, the scorer, its suite-level report, and the
shipped panel example (whose deliberate mistakes are pinned here so they cannot drift)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from evalh.core.analysis.classify import (
    ERRORED,
    ClassificationConfig,
    ClassificationScorer,
    LensCounts,
    confusion_report,
    lens_outcome,
    suite_confusion,
    verdict_of,
)
from evalh.models import Case, CaseResult, ErrorInfo


def config(**kw: Any) -> ClassificationConfig:
    return ClassificationConfig(type="classification", positive="refuted", **kw)


def case(expected: Any, cid: str = "c") -> Case:
    return Case(id=cid, input={}, expected=expected)


# ----------------------------------------------------------------------------- pure counts


def test_outcome_cells() -> None:
    assert lens_outcome("refuted", "refuted", "refuted") == "tp"
    assert lens_outcome("refuted", "survived", "refuted") == "fn"
    assert lens_outcome("survived", "refuted", "refuted") == "fp"
    assert lens_outcome("survived", "survived", "refuted") == "tn"
    assert lens_outcome("refuted", ERRORED, "refuted") == "errored"
    # a boolean class matches its text spelling either way round
    assert lens_outcome(True, "true", True) == "tp" and lens_outcome(False, True, "true") == "fp"


def test_verdict_of_treats_missing_null_and_error_as_errored() -> None:
    assert verdict_of("refuted") == ("refuted", None)
    assert verdict_of({"verdict": "survived", "why": "x"}) == ("survived", None)
    assert verdict_of(None)[0] is ERRORED
    v, why = verdict_of({"error": "timeout"})
    assert v is ERRORED and why == "timeout"
    assert verdict_of({"reason": "no verdict key"})[0] is ERRORED


def test_rates_carry_denominators_and_are_null_over_zero() -> None:
    counts = LensCounts(tp=0, fp=0, tn=4, fn=0)
    r = counts.report()
    assert r["precision"] is None and r["precision_denominator"] == 0
    assert r["recall"] is None and r["recall_denominator"] == 0
    assert r["fp_rate"] == 0.0 and r["fp_rate_denominator"] == 4


def test_errored_is_kept_apart_and_effective_recall_counts_it_as_a_miss() -> None:
    c = LensCounts()
    for outcome, pos in [("tp", True), ("tp", True), ("fn", True), ("errored", True),
                         ("errored", False), ("tn", False)]:
        c.add(outcome, pos)  # type: ignore[arg-type]
    r = c.report()
    assert (r["tp"], r["fn"], r["errored"], r["errored_positive"], r["n"]) == (2, 1, 2, 1, 6)
    assert r["recall"] == pytest.approx(2 / 3) and r["recall_denominator"] == 3
    assert r["effective_recall"] == pytest.approx(2 / 4) and r["effective_recall_denominator"] == 4
    assert r["precision"] == 1.0 and r["precision_denominator"] == 2


def test_rollup_is_macro_and_names_the_worst_lens_never_volume_blended() -> None:
    # `big` has many positives and perfect recall; `small` has one positive and misses it.
    obs = [("big", "tp", True)] * 99 + [("small", "fn", True), ("quiet", "tn", False)]
    rep = confusion_report(obs)
    assert rep["macro"]["recall"]["value"] == pytest.approx(0.5)  # (1.0 + 0.0) / 2, not 99/100
    assert rep["macro"]["recall"]["lenses"] == 2 and rep["macro"]["recall"]["undefined"] == ["quiet"]
    assert rep["worst"]["lens"] == "small" and rep["worst"]["recall"] == 0.0
    assert rep["no_recall"] == ["quiet"]
    assert "precision" not in rep and "recall" not in rep  # no blended headline


def test_worst_lists_every_tied_lens() -> None:
    rep = confusion_report([("b", "fn", True), ("a", "fn", True), ("c", "tp", True)])
    assert rep["worst"]["lens"] == "a" and rep["worst"]["tied"] == ["a", "b"]


# ----------------------------------------------------------------------------- the scorer


def test_scorer_per_lens_details_and_pass() -> None:
    s = ClassificationScorer(config(field="lenses", expected_field="lenses"))
    expected = {"lenses": {"prov": "refuted", "dup": "survived", "scope": "refuted", "skip": None}}
    output = {"lenses": {"prov": "refuted", "dup": "refuted", "scope": {"error": "timeout"}}}
    score = s.check(case(expected), output)
    lenses = score.details["lenses"]
    assert {k: v["outcome"] for k, v in lenses.items()} == {"prov": "tp", "dup": "fp", "scope": "errored"}
    assert lenses["scope"]["predicted"] is None and lenses["scope"]["error"] == "timeout"
    assert score.passed is False and score.value == pytest.approx(1 / 3)
    assert "fp: dup" in (score.rationale or "") and "errored: scope" in (score.rationale or "")


def test_scorer_single_label_and_abstention() -> None:
    s = ClassificationScorer(config(field="verdict"))
    ok = s.check(case("refuted"), {"verdict": "refuted"})
    assert ok.passed is True and ok.verdict == "refuted" and ok.details["lenses"]["label"]["outcome"] == "tp"
    none = s.check(case(None), {"verdict": "refuted"})
    assert none.abstained and none.passed is None


def test_scorer_missing_output_field_errors_every_lens() -> None:
    s = ClassificationScorer(config(field="lenses", expected_field="lenses"))
    score = s.check(case({"lenses": {"a": "refuted", "b": "survived"}}), {"other": 1})
    assert {v["outcome"] for v in score.details["lenses"].values()} == {"errored"}
    assert score.passed is False


def _result(cid: str, arm: str, score: Any = None, status: str = "passed", expected: Any = None) -> CaseResult:
    return CaseResult(case_id=cid, arm=arm, status=status, scores=[score] if score else [],  # type: ignore[arg-type]
                      expected=expected, error=ErrorInfo(type="X", message="m") if status == "errored" else None)


def test_suite_report_counts_a_failed_target_as_errored_per_lens_and_splits_arms() -> None:
    cfg = config(field="lenses", expected_field="lenses")
    s = ClassificationScorer(cfg)
    exp = {"lenses": {"a": "refuted", "b": "survived"}}
    good = s.check(case(exp), {"lenses": {"a": "refuted", "b": "survived"}})
    results = [
        _result("c1", "x", good, expected=exp),
        _result("c2", "x", status="errored", expected=exp),
        _result("c1", "y", good, expected=exp),
    ]
    rep = asyncio.run(s.finalize(None, results, None))  # type: ignore[arg-type]
    assert rep == suite_confusion(cfg, results)
    x = rep["arms"]["x"]["lenses"]
    assert (x["a"]["tp"], x["a"]["errored"], x["a"]["errored_positive"]) == (1, 1, 1)
    assert (x["b"]["tn"], x["b"]["errored"], x["b"]["errored_positive"]) == (1, 1, 0)
    assert x["a"]["recall"] == 1.0 and x["a"]["effective_recall"] == 0.5
    assert rep["arms"]["y"]["lenses"]["a"]["errored"] == 0


# ----------------------------------------------------------------------------- the panel example


def test_panel_example_makes_exactly_its_planned_mistakes(repo_root: Path) -> None:
    from examples.panel import review

    s = ClassificationScorer(config(field="lenses", expected_field="lenses"))
    wrong: dict[str, dict[str, str]] = {}
    for line in (repo_root / "datasets" / "panel.jsonl").read_text().splitlines():
        c = Case.model_validate(json.loads(line))
        out = review(c.input)
        assert out["refutations"] == sum(v == "refuted" for v in out["lenses"].values())
        details = s.check(c, out).details["lenses"]
        assert set(details) == {"provenance", "contradiction", "duplication", "scope", "evidence"}
        bad = {k: v["outcome"] for k, v in details.items() if v["outcome"] not in ("tp", "tn")}
        if bad:
            wrong[c.id] = bad
    assert wrong == {
        "panel.clean_invariant": {"scope": "fp"},
        "panel.clean_scheduler": {"contradiction": "fp"},
        "panel.false_twin": {"duplication": "fp"},
        "panel.hearsay_source": {"provenance": "fn"},
        "panel.overreach_all": {"contradiction": "fn"},
        "panel.stale_number": {"contradiction": "fn"},
        "panel.evidence_unavailable": {"evidence": "errored"},
        "panel.reworded_twin": {"duplication": "fn"},
    }
