"""Review of issue 10, "fail closed": a suite present in both runs in which the candidate
produced nothing comparable must fail ``--fail-on-regression`` with its reason instead of
passing as `incomparable` (only suites absent from one side do not gate). These pass the
gate today."""

from __future__ import annotations

from compare_factory import det_suite, make_run, result, suite

from evalh.core.compare.decide import compare_runs

GOOD = [result(f"c{i}", "passed" if i % 4 else "failed") for i in range(40)]
SKIPPED = [result(f"c{i}", "skipped") for i in range(40)]


def test_a_stochastic_suite_whose_candidate_skipped_every_case_fails_the_gate() -> None:
    cmp = compare_runs(make_run("b", {"s": suite(GOOD, "stochastic")}),
                       make_run("c", {"s": suite(SKIPPED, "stochastic")}))
    assert cmp.fails_gate, (cmp.suites["s"].verdict, cmp.suites["s"].reasons)


def test_a_deterministic_suite_whose_candidate_skipped_every_case_fails_the_gate() -> None:
    cmp = compare_runs(make_run("b", {"d": suite(GOOD)}), make_run("c", {"d": suite(SKIPPED)}))
    assert cmp.fails_gate, (cmp.suites["d"].verdict, cmp.suites["d"].reasons)


def test_a_failed_candidate_run_with_an_empty_suite_fails_the_gate() -> None:
    cmp = compare_runs(
        make_run("b", {"s": suite(GOOD, "stochastic")}),
        make_run("c", {"s": suite([], "stochastic")}, status="failed", status_reason="target crashed"),
    )
    assert cmp.fails_gate, (cmp.suites["s"].verdict, cmp.suites["s"].reasons)


def test_a_deterministic_suite_nobody_could_judge_is_not_flat() -> None:
    # docs/methodology.md: a case with judge_error on a side is "not compared", and a suite
    # is `incomparable` "when no case could be compared". Here no case was judged at all.
    judged_nothing = {f"x{i}": "judge_error" for i in range(10)}
    base = {f"x{i}": "failed" for i in range(10)}
    cmp = compare_runs(make_run("b", {"d": det_suite(base)}), make_run("c", {"d": det_suite(judged_nothing)}))
    d = cmp.suites["d"]
    assert d.verdict != "flat", d.reasons
    assert cmp.fails_gate, d.reasons


def test_a_deterministic_suite_whose_candidate_errored_on_every_case_fails_the_gate() -> None:
    # The stochastic regime blocks this ("the candidate produced no scorable result"); the
    # deterministic one calls it `flat` because the cases failed before.
    base = {f"x{i}": "failed" for i in range(10)}
    cand = {f"x{i}": "errored" for i in range(10)}
    cmp = compare_runs(make_run("b", {"d": det_suite(base)}), make_run("c", {"d": det_suite(cand)}))
    assert cmp.fails_gate, (cmp.suites["d"].verdict, cmp.suites["d"].reasons)


def test_a_stochastic_candidate_that_errored_everywhere_fails_even_when_the_base_did_too() -> None:
    broken = [result(f"c{i}", "errored") for i in range(20)]
    cmp = compare_runs(make_run("b", {"s": suite(broken, "stochastic")}),
                       make_run("c", {"s": suite(broken, "stochastic")}))
    assert cmp.fails_gate, (cmp.suites["s"].verdict, cmp.suites["s"].reasons)
