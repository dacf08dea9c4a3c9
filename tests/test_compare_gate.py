"""What fails the gate (issue 10): broken candidates fail closed, only the rows a suite
gates on gate, the family and clusters are as configured, and added/removed suites are
named everywhere without gating."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from compare_factory import det_suite, make_run, result, suite

from evalh.config import load_config
from evalh.core.compare.decide import ComparePolicy, compare_runs
from evalh.errors import ConfigError
from evalh.models import CaseResult, Score
from evalh.report.compare_render import to_junit_xml, to_markdown


def _stoch_runs(base: list[CaseResult], cand: list[CaseResult], config: dict | None = None):
    cfg = {"suites": {"s": config}} if config else {}
    return (make_run("b", {"s": suite(base, "stochastic")}, config=cfg),
            make_run("c", {"s": suite(cand, "stochastic")}, config=cfg))


def test_a_candidate_that_errored_everywhere_fails_the_gate() -> None:
    base = [result(f"c{i}", "passed" if i % 4 else "failed") for i in range(40)]
    cand = [result(f"c{i}", "errored") for i in range(40)]
    cmp = compare_runs(*_stoch_runs(base, cand))
    s = cmp.suites["s"]
    err = next(m for m in s.metrics if m.name == "error_rate")
    assert err.verdict == "regressed" and s.verdict == "regressed"
    assert cmp.fails_gate and "produced no scorable result" in " ".join(s.blocking)
    assert any(r.startswith("suite s regressed") for r in cmp.gate_reasons)


def test_a_candidate_whose_judge_failed_everywhere_fails_the_gate() -> None:
    base = [result(f"c{i}", "passed" if i % 4 else "failed") for i in range(40)]
    cand = [result(f"c{i}", "judge_error") for i in range(40)]
    cmp = compare_runs(*_stoch_runs(base, cand))
    s = cmp.suites["s"]
    assert s.blocking == ["the candidate produced no scorable result: of 40 results, "
                          "0 errored, 40 could not be judged, 0 skipped"]
    assert cmp.fails_gate and s.verdict == "regressed"  # the error-rate row, judge errors counted


def test_few_cases_all_errored_still_fail_the_gate_without_an_interval() -> None:
    base = [result("a", "passed")]
    cand = [result("a", "errored")]
    cmp = compare_runs(*_stoch_runs(base, cand))
    assert cmp.fails_gate and cmp.suites["s"].blocking


def test_a_deterministic_suite_whose_judge_failed_blocks() -> None:
    b = make_run("b", {"d": det_suite({"x": "passed", "y": "passed", "z": "failed"})})
    c = make_run("c", {"d": det_suite({"x": "judge_error", "y": "passed", "z": "judge_error"})})
    cmp = compare_runs(b, c)
    d = cmp.suites["d"]
    assert d.verdict == "flat" and not cmp.regressed
    assert cmp.fails_gate and d.blocking == [
        "1 case(s) passed in the base and could not be judged now (judge_error): zero "
        "tolerance cannot vouch for them",
        "coverage 1 of 3 base results measured (33.3 %), minimum 90 %: 2 without a trustworthy "
        "result (errored, judge_error, skipped or fewer attempts)"]


def test_added_and_removed_suites_do_not_gate_but_are_named_in_junit_and_markdown() -> None:
    b = make_run("b", {"old": det_suite({"x": "passed"}), "d": det_suite({"x": "passed"})})
    c = make_run("c", {"new": det_suite({"x": "failed"}), "d": det_suite({"x": "passed"})})
    # a suite the base measured and the candidate did not fails the gate unless the
    # operator says it was removed on purpose
    refused = compare_runs(b, c)
    assert refused.fails_gate and refused.gate_reasons == [
        "suite old cannot pass: suite old is in the base (1 case(s)) and was not run by the "
        "candidate: not in the candidate; --allow-removed-suite old accepts that"]
    cmp = compare_runs(b, c, ComparePolicy(allow_removed_suites=("old",)))
    assert not cmp.fails_gate and cmp.verdict == "flat"
    root = ET.fromstring(to_junit_xml(cmp))
    names = {el.get("name"): el for el in root.iter("testsuite")}
    assert set(names) == {"old", "new", "d"}
    assert names["new"].find("testcase/skipped") is not None
    md = to_markdown(cmp)
    assert "### new: added" in md and "### old: removed" in md and "**gate: pass**" in md


def _scored(cid: str, rubric: float, style: float) -> CaseResult:
    status = "passed" if rubric >= 0.5 else "failed"
    return CaseResult(
        case_id=cid, case_digest=f"d-{cid}", status=status, score=(rubric + style) / 2,
        scores=[Score(scorer="rubric", value=rubric, passed=rubric >= 0.5),
                Score(scorer="style", value=style, passed=True)],
    )


def test_gate_scores_gate_on_one_scorer_and_label_the_blend() -> None:
    # The rubric drops by 0.1 on every case; style rises by 0.1: the blend is unchanged.
    base = [_scored(f"c{i}", 0.6 + (i % 5) * 0.05, 0.5) for i in range(200)]
    cand = [_scored(f"c{i}", 0.5 + (i % 5) * 0.05, 0.6) for i in range(200)]
    blended_only = compare_runs(*_stoch_runs(base, cand, {"gate_scores": []}))
    blend = next(m for m in blended_only.suites["s"].metrics if m.name == "mean_score")
    assert blend.gating and blend.verdict == "flat"
    gated = compare_runs(*_stoch_runs(base, cand, {"gate_scores": ["rubric"]}))
    rows = {(m.name, m.scorer): m for m in gated.suites["s"].metrics}
    assert rows[("score", "rubric")].verdict == "regressed"
    assert rows[("score", "rubric")].change == pytest.approx(-0.1)
    assert not rows[("mean_score", None)].gating
    assert gated.suites["s"].verdict == "regressed" and gated.fails_gate
    assert "mean score (blended)" in to_markdown(gated)


def test_a_gated_scorer_without_values_in_the_candidate_blocks() -> None:
    base = [_scored(f"c{i}", 0.7, 0.5) for i in range(20)]
    cand = [CaseResult(case_id=f"c{i}", case_digest=f"d-c{i}", status="passed", score=1.0,
                       scores=[Score(scorer="style", value=1.0, passed=True)]) for i in range(20)]
    cmp = compare_runs(*_stoch_runs(base, cand, {"gate_scores": ["rubric"]}))
    assert cmp.fails_gate and "scorer rubric gave no value in the candidate" in cmp.suites["s"].blocking


def test_the_cluster_field_comes_from_the_config_and_case_turns_it_off() -> None:
    def runs(cluster: str | None) -> tuple:
        b, c = [], []
        for i in range(60):
            meta = {"group": f"g{i % 12}", "doc": f"d{i % 10}"}
            b.append(CaseResult(case_id=f"c{i}", case_digest="x", status="passed", score=0.7,
                                metadata=meta))
            c.append(CaseResult(case_id=f"c{i}", case_digest="x", status="passed",
                                score=0.7 - 0.01 * (i % 12), metadata=meta))
        return _stoch_runs(b, c, {"cluster": cluster} if cluster else None)

    def row(cluster: str | None):
        return next(m for m in compare_runs(*runs(cluster)).suites["s"].metrics if m.name == "mean_score")

    assert (row(None).cluster_by, row(None).clusters) == ("group", 12)
    assert (row("doc").cluster_by, row("doc").clusters) == ("doc", 10)
    assert (row("case").cluster_by, row("case").clusters) == (None, 60)


def test_family_size_counts_every_gating_row_of_every_suite() -> None:
    def cases(shift: float) -> list[CaseResult]:
        return [result(f"c{i}", "passed" if (i + shift) % 3 else "failed", latency_ms=100.0 + i,
                       cost_usd=0.01) for i in range(30)]

    gate = {"suites": {n: {"gate": ["pass_rate", "cost_usd", "latency_ms"]} for n in ("s1", "s2")}}
    b = make_run("b", {"s1": suite(cases(0), "stochastic"), "s2": suite(cases(0), "stochastic")},
                 config=gate)
    c = make_run("c", {"s1": suite(cases(0), "stochastic"), "s2": suite(cases(1), "stochastic")})
    cmp = compare_runs(b, c)
    tested = [m for s in cmp.suites.values() for m in s.metrics if m.p_adjusted is not None]
    assert cmp.family.size == len(tested) == 6  # pass rate, cost, latency in each suite
    # By default cost and latency are reported only: the family is the two pass rates.
    b.config = {}
    assert compare_runs(b, c).family.size == 2
    assert all(m.alpha_adjusted is not None and m.alpha_adjusted <= cmp.family.alpha for m in tested)


def test_gate_scores_must_name_a_configured_scorer(project: Path) -> None:
    cfg = project / "evalh.toml"
    cfg.write_text(cfg.read_text() + '\ngate_scores = ["rubrik"]\n')
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert "gate_scores[0]: no scorer named 'rubrik'" in info.value.message


# ----------------------------------------------------------------------------- through the CLI

_TOML = """\
[suites.live]
dataset = "d.jsonl"
target = {{ kind = "anthropic", model = "claude-haiku-4-5", base_url = "mock:provider.json", prompt = "{{{{ input.q }}}}", max_retries = 0 }}
regime = "stochastic"
scorers = [{scorer}]
"""
_JUDGE = ('{ type = "judge", provider = "anthropic", model = "judge-1", base_url = "mock:judge.json", '
          'max_retries = 0, rubric = "r" }')
_GOOD = {"rules": [{"match": "", "text": "the answer is x"}]}
_VERDICT = {"verdict": "pass", "rationale": "a long enough rationale " * 4}


def _project(root: Path, scorer: str) -> Path:
    import json

    (root / "evalh.toml").write_text(_TOML.format(scorer=scorer), encoding="utf-8")
    (root / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": f"q{i}"}, "expected": "x"}) + "\n"
        for i in range(12)), encoding="utf-8")
    (root / "provider.json").write_text(json.dumps(_GOOD), encoding="utf-8")
    (root / "judge.json").write_text(json.dumps({"rules": [{"match": "", "json": _VERDICT}]}),
                                     encoding="utf-8")
    return root / "evalh.toml"


def _cli(cfg: Path, *args: str):
    from typer.testing import CliRunner

    from evalh.cli.main import app

    return CliRunner().invoke(app, [*args, "--config", str(cfg), "--runs-dir", str(cfg.parent / "runs"),
                                    "--no-cache"] if args[0] == "run" else
                              [*args, "--config", str(cfg), "--runs-dir", str(cfg.parent / "runs")])


def _ids(cfg: Path) -> list[str]:
    return sorted(p.stem for p in (cfg.parent / "runs").glob("*.json"))


def test_compare_of_a_run_whose_provider_went_down_fails_the_gate(tmp_path: Path) -> None:
    import json

    cfg = _project(tmp_path, '{ type = "contains" }')
    assert _cli(cfg, "run", "-q").exit_code == 0
    (tmp_path / "provider.json").write_text(json.dumps({"rules": [{"match": "", "fault": "server_error"}]}))
    assert _cli(cfg, "run", "-q").exit_code == 1  # over max_error_rate: the run itself fails
    good, broken = _ids(cfg)
    result = _cli(cfg, "compare", good, broken, "--fail-on-regression")
    assert result.exit_code == 1, result.output
    assert "gate: FAIL" in result.stdout
    assert "suite live regressed: error_rate regressed: +100 pp" in result.stdout
    doc = json.loads(_cli(cfg, "compare", good, broken, "--format", "json").stdout)
    assert doc["fails_gate"] is True and doc["suites"]["live"]["blocking"]


def test_compare_of_a_run_whose_judge_truncates_every_reply_fails_the_gate(tmp_path: Path) -> None:
    import json

    cfg = _project(tmp_path, _JUDGE)
    assert _cli(cfg, "run", "-q").exit_code == 0
    (tmp_path / "judge.json").write_text(json.dumps(
        {"rules": [{"match": "", "json": _VERDICT, "fault": {"kind": "truncate", "tokens": 2}}]}))
    _cli(cfg, "run", "-q")
    good, broken = _ids(cfg)
    result = _cli(cfg, "compare", good, broken, "--fail-on-regression", "--format", "markdown")
    assert result.exit_code == 1, result.output
    assert "**gate: FAIL**" in result.stdout
    assert ("cannot pass: the candidate produced no scorable result: of 12 results, "
            "0 errored, 12 could not be judged, 0 skipped") in result.stdout


def test_a_candidate_cannot_loosen_its_own_gate_through_cluster_or_gate_scores() -> None:
    base = [_scored(f"c{i}", 0.6 + (i % 5) * 0.05, 0.5) for i in range(200)]
    cand = [_scored(f"c{i}", 0.5 + (i % 5) * 0.05, 0.6) for i in range(200)]
    b, c = _stoch_runs(base, cand, {"gate_scores": ["rubric"], "cluster": "group"})
    c.config = {"suites": {"s": {"gate_scores": [], "cluster": "case"}}}  # the change's own
    cmp = compare_runs(b, c)
    rows = {(m.name, m.scorer) for m in cmp.suites["s"].metrics}
    assert ("score", "rubric") in rows and cmp.fails_gate
