"""Unit tests of compare_runs: every verdict in each regime, and the JSON contract."""

from __future__ import annotations

import pytest
from compare_factory import binary_runs, det_suite, graded_runs, make_run, result, suite

from evalh.core.compare.decide import ComparePolicy, compare_runs
from evalh.models import Score

# --------------------------------------------------------------------------- deterministic


def _det(base: dict[str, str], cand: dict[str, str], **kw: object):
    b = make_run("b", {"gate": det_suite(base)})
    c = make_run("c", {"gate": det_suite(cand)}, **kw)  # type: ignore[arg-type]
    return compare_runs(b, c)


def _ids(refs: list) -> list[str]:
    return [r.case_id for r in refs]


def test_deterministic_identical_runs_are_flat() -> None:
    cmp = _det({"a": "passed", "b": "failed"}, {"a": "passed", "b": "failed"})
    s = cmp.suites["gate"]
    assert s.verdict == "flat" and cmp.verdict == "flat"
    assert not cmp.regressed and not cmp.inconclusive
    assert s.counts.compared == 2 and s.metrics[0].delta == 0


def test_deterministic_pass_to_fail_or_error_is_a_named_regression() -> None:
    cmp = _det(
        {"a": "passed", "b": "passed", "c": "passed"},
        {"a": "failed", "b": "errored", "c": "passed"},
    )
    s = cmp.suites["gate"]
    assert s.verdict == "regressed" and cmp.regressed and cmp.verdict == "regressed"
    assert _ids(s.cases.regressed) == ["a", "b"]
    assert _ids(s.cases.errored_new) == ["b"]
    assert s.cases.regressed[1].base == "passed" and s.cases.regressed[1].candidate == "errored"
    assert s.errors.errors_rose and any("errors rose" in r for r in s.reasons)


def test_deterministic_single_regression_among_many_is_not_tolerated() -> None:
    base = {f"c{i}": "passed" for i in range(1000)}
    cand = dict(base, c500="failed")
    s = _det(base, cand).suites["gate"]
    assert s.verdict == "regressed" and _ids(s.cases.regressed) == ["c500"]


def test_deterministic_fail_to_pass_is_a_named_improvement() -> None:
    cmp = _det({"a": "failed", "b": "errored", "c": "passed"}, {"a": "passed", "b": "passed", "c": "passed"})
    s = cmp.suites["gate"]
    assert s.verdict == "improved" and not cmp.regressed
    assert _ids(s.cases.improved) == ["a", "b"]
    assert _ids(s.cases.errored_fixed) == ["b"]


def test_deterministic_failed_to_errored_is_reported_not_a_regression() -> None:
    s = _det({"a": "failed", "b": "passed"}, {"a": "errored", "b": "passed"}).suites["gate"]
    assert s.verdict == "flat"
    assert _ids(s.cases.errored_new) == ["a"] and not s.cases.regressed
    assert s.errors.base_errored == 0 and s.errors.candidate_errored == 1 and s.errors.errors_rose


def test_deterministic_judge_error_is_not_a_product_failure() -> None:
    s = _det({"a": "passed", "b": "passed"}, {"a": "judge_error", "b": "passed"}).suites["gate"]
    assert s.verdict == "flat"
    assert _ids(s.cases.judge_error) == ["a"] and not s.cases.regressed
    assert s.errors.candidate_judge_error == 1 and s.errors.judge_errors_rose
    assert any("judge errors rose" in r for r in s.reasons)


def test_deterministic_judge_error_is_never_a_pass_either_way() -> None:
    """failed → judge_error is no improvement, judge_error → passed no fix: a judge that did
    not answer says nothing of the product; each such case is named, even one that stayed."""
    s = _det({"a": "failed", "b": "judge_error", "c": "judge_error", "d": "passed"},
             {"a": "judge_error", "b": "passed", "c": "judge_error", "d": "passed"}).suites["gate"]
    assert s.verdict == "flat" and not s.cases.improved and not s.cases.regressed
    assert _ids(s.cases.judge_error) == ["a", "b", "c"]


def test_changed_digest_is_reported_and_not_compared() -> None:
    b = make_run("b", {"gate": suite([result("a", "passed", digest="v1"), result("b", "passed")])})
    c = make_run("c", {"gate": suite([result("a", "failed", digest="v2"), result("b", "passed")])})
    s = compare_runs(b, c).suites["gate"]
    assert s.verdict == "flat"
    assert _ids(s.cases.changed) == ["a"] and not s.cases.regressed
    assert s.counts.changed == 1 and s.counts.compared == 1
    assert any("changed content" in r for r in s.reasons)


def test_all_cases_changed_is_incomparable() -> None:
    b = make_run("b", {"gate": suite([result("a", "passed", digest="v1")])})
    c = make_run("c", {"gate": suite([result("a", "passed", digest="v2")])})
    cmp = compare_runs(b, c)
    assert cmp.suites["gate"].verdict == "incomparable" and cmp.verdict == "incomparable"
    assert "no case could be compared" in cmp.suites["gate"].reasons[0]


def test_added_and_removed_cases_are_named() -> None:
    s = _det({"a": "passed", "gone": "passed"}, {"a": "passed", "new": "failed"}).suites["gate"]
    assert s.verdict == "flat"
    assert _ids(s.cases.added) == ["new"] and _ids(s.cases.removed) == ["gone"]
    assert s.counts.added == 1 and s.counts.removed == 1


def test_added_and_removed_suites() -> None:
    b = make_run("b", {"old": det_suite({"a": "passed"}), "both": det_suite({"a": "passed"})})
    c = make_run("c", {"new": det_suite({"a": "failed"}), "both": det_suite({"a": "passed"})})
    cmp = compare_runs(b, c)
    assert cmp.suites["new"].verdict == "added"
    assert cmp.suites["old"].verdict == "removed"
    assert cmp.verdict == "flat" and not cmp.regressed
    assert list(cmp.suites) == ["new", "both", "old"]


def test_only_added_or_removed_suites_is_incomparable_overall() -> None:
    cmp = compare_runs(make_run("b", {"x": det_suite({"a": "passed"})}), make_run("c", {}))
    assert cmp.verdict == "incomparable" and not cmp.regressed


def test_regime_change_is_incomparable() -> None:
    b = make_run("b", {"s": det_suite({"a": "passed"})})
    c = make_run("c", {"s": det_suite({"a": "passed"}, regime="stochastic")})
    s = compare_runs(b, c).suites["s"]
    assert s.verdict == "incomparable" and "regime changed" in s.reasons[0]


def test_partial_candidate_names_cases_not_run_and_says_so() -> None:
    cmp = _det(
        {"a": "passed", "b": "passed", "c": "passed"},
        {"a": "failed"},
        status="partial",
        status_reason="cost budget reached",
    )
    s = cmp.suites["gate"]
    assert s.verdict == "regressed" and s.partial
    assert _ids(s.cases.not_run) == ["b", "c"] and not s.cases.removed
    assert any("partial" in r for r in s.reasons)
    assert any("candidate run c is partial (cost budget reached)" in w for w in cmp.warnings)


def test_partial_candidate_missing_a_whole_suite() -> None:
    b = make_run("b", {"s1": det_suite({"a": "passed"}), "s2": det_suite({"a": "passed"})})
    c = make_run("c", {"s1": det_suite({"a": "passed"})}, status="partial")
    s2 = compare_runs(b, c).suites["s2"]
    assert s2.verdict == "removed" and s2.partial and s2.counts.not_run == 1


def test_skipped_cases_are_counted_not_compared() -> None:
    s = _det({"a": "passed", "b": "passed"}, {"a": "skipped", "b": "passed"}).suites["gate"]
    assert s.verdict == "flat" and s.counts.skipped == 1 and s.counts.compared == 1


def test_arms_are_compared_arm_by_arm() -> None:
    def run(rid: str, a_status: str, b_status: str):
        return make_run(rid, {"s": suite([
            result("x", a_status, arm="prompt-a"), result("x", b_status, arm="prompt-b"),
        ])})

    s = compare_runs(run("b", "passed", "passed"), run("c", "passed", "failed")).suites["s"]
    assert s.verdict == "regressed"
    assert s.arms == {"prompt-a": "flat", "prompt-b": "regressed"}
    assert [(r.case_id, r.arm) for r in s.cases.regressed] == [("x", "prompt-b")]
    assert {m.arm for m in s.metrics} == {"prompt-a", "prompt-b"}


def test_config_differences_are_stated_at_the_top() -> None:
    def run(rid: str, model: str, judge: str, sha: str):
        res = result("a", "passed")
        res.scores = [Score(scorer="judge", value=1.0, passed=True, judge_model=judge)]
        cfg = {"seed": 1, "suites": {"s": {"target": {"kind": "openai", "model": model}}}}
        return make_run(rid, {"s": suite([res], sha256=sha)}, config=cfg)

    cmp = compare_runs(run("b", "m-1", "j-1", "aaa"), run("c", "m-2", "j-2", "bbb"))
    diffs = {(d.suite, d.key): (d.base, d.candidate) for d in cmp.config_differences}
    assert diffs[("s", "target.model")] == ("m-1", "m-2")
    assert diffs[("s", "judge_models[0]")] == ("j-1", "j-2")
    assert diffs[("s", "dataset_sha256")] == ("aaa", "bbb")
    assert cmp.config_differences[0].key == "target.model"
    assert compare_runs(run("b", "m", "j", "x"), run("c", "m", "j", "x")).config_differences == []


# --------------------------------------------------------------------------- thresholds


def _with_thresholds(run, table: dict) -> None:
    run.config = {"suites": {"s": {"thresholds": table}}}


def test_thresholds_are_the_stricter_of_both_configs_then_defaults_then_flags() -> None:
    """A pull request cannot loosen its own gate: with a table on both sides each allowance
    is the smaller one (this test changes with that rule; it was candidate-first)."""
    b, c = binary_runs(200, 0.8, 0.8, seed=1)
    assert compare_runs(b, c).suites["s"].thresholds["pass_rate_drop"] == 0.05
    _with_thresholds(b, {"pass_rate_drop": 0.1})
    s = compare_runs(b, c).suites["s"]
    assert s.thresholds["pass_rate_drop"] == 0.1 and s.thresholds_source == "base config"
    _with_thresholds(c, {"pass_rate_drop": 0.5})  # the candidate loosens it: not honoured
    s = compare_runs(b, c).suites["s"]
    assert s.thresholds["pass_rate_drop"] == 0.1
    assert s.thresholds_source == "base and candidate config (the stricter of each)"
    _with_thresholds(c, {"pass_rate_drop": 0.02})  # the candidate tightens it: honoured
    assert compare_runs(b, c).suites["s"].thresholds["pass_rate_drop"] == 0.02
    s = compare_runs(b, c, ComparePolicy(pass_rate_drop=0.3)).suites["s"]
    assert s.thresholds["pass_rate_drop"] == 0.3 and "command-line" in s.thresholds_source
    assert s.metrics[0].allowance == 0.3


def test_invalid_thresholds_in_a_run_are_ignored_with_a_warning() -> None:
    b, c = binary_runs(50, 0.8, 0.8, seed=1)
    _with_thresholds(c, {"pass_rate_drop": 7})
    cmp = compare_runs(b, c)
    assert cmp.suites["s"].thresholds["pass_rate_drop"] == 0.05
    assert any("thresholds are invalid" in w for w in cmp.warnings)


# --------------------------------------------------------------------------- stochastic


def _row(cmp, name: str):
    return next(m for m in cmp.suites["s"].metrics if m.name == name)


def test_stochastic_same_distribution_is_flat() -> None:
    cmp = compare_runs(*binary_runs(2000, 0.8, 0.8, seed=11))
    row = _row(cmp, "pass_rate")
    assert cmp.suites["s"].verdict == "flat" and row.verdict == "flat"
    assert row.estimand == "fixed-suite" and row.method.startswith("fixed suite")
    assert row.interval[0] >= -0.05  # type: ignore[index]
    # The population estimand, asked for: Tango's interval and McNemar's p.
    cmp = compare_runs(*binary_runs(2000, 0.8, 0.8, seed=11), ComparePolicy(estimand="population"))
    row = _row(cmp, "pass_rate")
    assert cmp.suites["s"].verdict == "flat" and row.verdict == "flat"
    assert row.estimand == "population"
    assert row.method.startswith("Tango") and row.p_value is not None
    assert row.interval[0] >= -0.05  # type: ignore[index]
    # Binary scores: the mean score is the pass rate, compared once.
    assert [m.name for m in cmp.suites["s"].metrics] == ["pass_rate"]


def test_stochastic_drop_beyond_allowance_is_regressed_with_interval() -> None:
    cmp = compare_runs(*binary_runs(2000, 0.8, 0.65, seed=12))
    row = _row(cmp, "pass_rate")
    assert cmp.regressed and row.verdict == "regressed"
    assert row.change < -0.05 and row.interval[1] < 0  # type: ignore[index,operator]
    assert row.cases_needed is None
    assert any(r.startswith("pass_rate regressed") for r in cmp.suites["s"].reasons)
    assert cmp.suites["s"].cases.regressed  # the flips are named, for the record


def test_stochastic_gain_beyond_allowance_is_improved() -> None:
    cmp = compare_runs(*binary_runs(2000, 0.6, 0.8, seed=13))
    assert cmp.suites["s"].verdict == "improved" and not cmp.regressed


def test_stochastic_drop_inside_allowance_is_flat() -> None:
    cmp = compare_runs(*binary_runs(4000, 0.8, 0.79, seed=14))
    assert _row(cmp, "pass_rate").verdict == "flat"


def test_stochastic_too_few_cases_is_inconclusive_with_cases_needed() -> None:
    cmp = compare_runs(*binary_runs(30, 0.8, 0.7, seed=15))
    s = cmp.suites["s"]
    row = _row(cmp, "pass_rate")
    assert s.verdict == "inconclusive" and cmp.inconclusive and not cmp.regressed
    assert row.cases_needed is not None and row.cases_needed > 30
    assert s.cases_needed == row.cases_needed
    assert row.cases_needed_for == pytest.approx(-0.10)  # twice the 5-point allowance, worse side
    assert "cases would settle a change of -10 pp" in " ".join(s.reasons)


def test_stochastic_graded_scores_with_repeats_use_the_fixed_suite_interval() -> None:
    cmp = compare_runs(*graded_runs(300, 0.7, 0.6, seed=3))
    score = _row(cmp, "mean_score")
    assert score.estimand == "fixed-suite" and score.verdict == "regressed"
    assert score.method.startswith("fixed suite")
    assert score.interval is not None and score.interval[1] < -score.allowance


def test_stochastic_graded_scores_with_repeats_use_the_paired_t_interval() -> None:
    cmp = compare_runs(*graded_runs(300, 0.7, 0.6, seed=3), ComparePolicy(estimand="population"))
    score = _row(cmp, "mean_score")
    assert score.method == "paired t over cases" and score.verdict == "regressed"
    assert _row(cmp, "pass_rate").method == "paired t over cases"
    assert score.clusters == 300 and score.cluster_by is None
    assert score.interval is not None and score.interval[1] < -score.allowance


def _stoch(base_rows: list, cand_rows: list, **kw: object):
    b = make_run("b", {"s": suite(base_rows, "stochastic")})
    c = make_run("c", {"s": suite(cand_rows, "stochastic")}, **kw)  # type: ignore[arg-type]
    return compare_runs(b, c)


def test_stochastic_errors_counted_apart_and_a_clear_rise_regresses() -> None:
    base = [result(f"c{i}", "passed" if i % 5 else "failed") for i in range(400)]
    cand = [result(f"c{i}", "errored" if i % 4 == 0 else ("passed" if i % 5 else "failed"))
            for i in range(400)]
    cmp = _stoch(base, cand)
    s = cmp.suites["s"]
    err = _row(cmp, "error_rate")
    assert err.verdict == "regressed" and err.candidate == pytest.approx(0.25)
    assert s.verdict == "regressed" and s.errors.errors_rose
    assert _row(cmp, "pass_rate").n == 300  # errored cases never enter the pass rate
    assert len(s.cases.errored_new) == 100


def test_stochastic_small_error_rise_is_an_open_row_that_does_not_fail_the_gate() -> None:
    base = [result(f"c{i}", "passed" if i % 5 else "failed") for i in range(60)]
    cand = [result(f"c{i}", "errored" if i == 3 else ("passed" if i % 5 else "failed"))
            for i in range(60)]
    cmp = _stoch(base, cand)
    s = cmp.suites["s"]
    err = next(m for m in s.metrics if m.name == "error_rate")
    # 0 → 1 error in 60: a row like the others. It cannot rule out a rise beyond the
    # allowance, nor show one: inconclusive on the worse side, and no gate failure.
    assert err.verdict == "inconclusive" and err.direction == "worse"
    assert err.cases_needed is not None and err.cases_needed > 60
    assert s.verdict == "inconclusive" and not cmp.fails_gate and cmp.inconclusive_worse
    assert s.errors.errors_rose and any("errors rose" in r for r in s.reasons)


def test_stochastic_judge_errors_are_excluded_from_pass_rate_and_gate_as_errors() -> None:
    base = [result(f"c{i}", "passed" if i % 5 else "failed") for i in range(400)]
    cand = [result(f"c{i}", "judge_error" if i < 50 else ("passed" if i % 5 else "failed"))
            for i in range(400)]
    cmp = _stoch(base, cand)
    s = cmp.suites["s"]
    assert len(s.cases.judge_error) == 50 and s.errors.judge_errors_rose
    assert next(m for m in s.metrics if m.name == "pass_rate").n == 350
    # 50 of 400 results the judge could not score: 12.5 points beyond a 5-point allowance.
    err = next(m for m in s.metrics if m.name == "error_rate")
    assert err.verdict == "regressed" and s.verdict == "regressed" and cmp.fails_gate


def test_stochastic_cost_and_latency_rows() -> None:
    base = [result(f"c{i}", "passed", latency_ms=100 + i % 7, cost_usd=0.010) for i in range(300)]
    cand = [result(f"c{i}", "passed", latency_ms=260 + i % 7, cost_usd=0.0105) for i in range(300)]
    cmp = _stoch(base, cand)
    cost, lat = _row(cmp, "cost_usd"), _row(cmp, "latency_ms")
    assert cost.unit == "pct" and cost.change == pytest.approx(5.0) and cost.verdict == "flat"
    assert lat.verdict == "regressed" and lat.change > 50  # type: ignore[operator]
    # Geometric means of per-case latency (their ratio is the tested paired change).
    assert lat.base == pytest.approx(103, abs=0.1) and lat.candidate == pytest.approx(263, abs=0.1)
    assert lat.change == pytest.approx(100 * (lat.candidate / lat.base - 1))
    # Cost and latency are reported, not gated, unless the suite names them in `gate`.
    assert not lat.gating and not cost.gating and cmp.suites["s"].verdict == "flat"
    assert not cmp.fails_gate and "gating rows" in (lat.note or "")
    gated = {"suites": {"s": {"gate": ["pass_rate", "latency_ms"]}}}
    cmp = compare_runs(make_run("b", {"s": suite(base, "stochastic")}, config=gated),
                       make_run("c", {"s": suite(cand, "stochastic")}))
    assert _row(cmp, "latency_ms").gating and cmp.suites["s"].verdict == "regressed"
    assert cmp.fails_gate and not _row(cmp, "cost_usd").gating
    cmp = compare_runs(
        make_run("b", {"s": suite(base, "stochastic")}, config=gated),
        make_run("c", {"s": suite(cand, "stochastic")}),
        ComparePolicy(latency_p50_increase_pct=200),
    )
    assert _row(cmp, "latency_ms").verdict == "flat" and cmp.verdict == "flat"


def test_stochastic_partial_run_is_compared_and_says_so() -> None:
    b, c = binary_runs(2000, 0.8, 0.8, seed=21)
    c.suites["s"].cases = c.suites["s"].cases[:1500]
    c.status = "partial"
    s = compare_runs(b, c).suites["s"]
    assert s.verdict in ("flat", "inconclusive") and s.partial
    assert s.counts.not_run == 500 and s.counts.compared == 1500


def test_stochastic_row_without_an_interval_is_inconclusive_never_flat() -> None:
    """One graded case gives a change but no interval: nothing rules a regression out."""
    cmp = _stoch([result("a", "passed", score=0.6)], [result("a", "passed", score=0.6)])
    row = _row(cmp, "mean_score")
    assert row.interval is None and row.change == 0.0
    assert row.verdict == "inconclusive" and cmp.inconclusive


def test_stochastic_with_no_outcomes_is_incomparable() -> None:
    cmp = _stoch([result("a", "errored")], [result("a", "errored")])
    assert cmp.suites["s"].verdict == "incomparable"


# --------------------------------------------------------------------------- contract


def test_json_keys_are_the_documented_contract() -> None:
    cmp = compare_runs(*binary_runs(50, 0.8, 0.7, seed=2))
    doc = cmp.to_dict()
    assert set(doc) == {
        "schema", "base", "candidate", "config_differences", "warnings", "suites",
        "verdict", "regressed", "inconclusive", "policy", "fails_gate", "gate_reasons",
        "family", "inconclusive_worse",
    }
    assert set(doc["family"]) == {"size", "alpha", "method", "weights", "select"}
    assert doc["schema"] == "evalh.compare/2"
    assert set(doc["base"]) == {"run_id", "label", "status", "started_at", "git_sha", "git_dirty"}
    s = doc["suites"]["s"]
    assert set(s) == {
        "suite", "regime", "verdict", "reasons", "partial", "thresholds", "thresholds_source",
        "counts", "errors", "metrics", "arms", "cases", "cases_needed", "blocking", "advisory",
        "coverage",
    }
    assert set(s["coverage"]) == {
        "measured", "of", "share", "minimum", "absent", "changed", "untrusted", "below",
    }
    assert set(s["metrics"][0]) == {
        "arm", "name", "better", "base", "candidate", "delta", "change", "unit", "allowance",
        "interval", "method", "p_value", "n", "verdict", "cases_needed", "note", "scorer",
        "gating", "direction", "p_worse", "p_adjusted", "alpha_adjusted", "clusters",
        "cluster_by", "cases_needed_for", "repeats_needed", "estimand", "rounds", "weight", "detectable_change",
    }
    assert set(s["cases"]) == {
        "regressed", "improved", "changed", "added", "removed", "not_run", "errored_new",
        "errored_fixed", "judge_error",
    }
    assert set(s["counts"]) == {
        "base_cases", "candidate_cases", "compared", "changed", "added", "removed", "not_run",
        "skipped",
    }
    assert set(s["errors"]) == {
        "base_results", "candidate_results", "base_errored", "candidate_errored",
        "base_judge_error", "candidate_judge_error", "errors_rose", "judge_errors_rose",
    }


def test_compare_runs_is_deterministic() -> None:
    b, c = graded_runs(200, 0.7, 0.68, seed=9)
    assert compare_runs(b, c).to_dict() == compare_runs(b, c).to_dict()
