"""`evalh rejudge`: stored outputs judged again through the runner core, a new document
derived from the old one (which is never touched), and the judge drift between them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app
from evalh.core.rejudge.drift import judgment_units, measure
from evalh.models import CaseResult, Score

TARGET = '''\
calls = []

def answer(inp):
    calls.append(inp["q"])
    if inp["q"] == "boom":
        raise RuntimeError("the product fell over")
    return {"text": inp["q"].upper()}
'''
JUDGE = 'provider = "anthropic", model = "judge-1", base_url = "mock:judge.json", max_retries = 0'
QUESTIONS = ["alpha", "beta", "gamma", "delta", "boom"]


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "response-cache"))


def verdict(match: str, v: str, why: str = "because", model: str | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"match": f"<output>\n{match}", "json": {"verdict": v, "rationale": why}}
    return {**rule, "model": model} if model else rule


FIRST = [  # the judge of the original run: two judgments fail
    verdict("ALPHA", "pass", "fine"), verdict("BETA", "fail", "wrong"),
    {"match": "<output>\nGAMMA", "fault": "overloaded"}, {"match": "<output>\nDELTA", "json": {"verdict": "pass"}},
]
SECOND = [  # the judge today: it changed its mind on ALPHA, and answers GAMMA and DELTA
    verdict("ALPHA", "fail", "changed"), verdict("BETA", "fail", "wrong"),
    verdict("GAMMA", "pass", "fine now"), verdict("DELTA", "pass", "fine now"),
    verdict("ALPHA", "pass", "j2 likes it", model="judge-2"), verdict("BETA", "pass", "j2 likes it", model="judge-2"),
]


def script(root: Path, rules: list[dict[str, Any]]) -> None:
    # judge-2 rules first: the model filter must win over judge-1's prompt matches
    ordered = sorted(rules, key=lambda r: "model" not in r)
    (root / "judge.json").write_text(json.dumps({"rules": ordered}), encoding="utf-8")


def project(root: Path, scorers: str | None = None) -> Path:
    scorers = scorers or (f'{{ type = "exact", field = "text", expected_field = "text" }},\n'
                          f'{{ type = "judge", {JUDGE}, rubric = "r", output_field = "text", reply_retries = 1 }}')
    (root / "evalh.toml").write_text(
        f'[suites.s]\ndataset = "d.jsonl"\ntarget = "rtgt:answer"\nregime = "stochastic"\nscorers = [\n{scorers}\n]\n',
        encoding="utf-8")
    (root / "d.jsonl").write_text("".join(
        json.dumps({"id": q, "input": {"q": q}, "expected": {"text": q.upper()}}) + "\n" for q in QUESTIONS),
        encoding="utf-8")
    (root / "rtgt.py").write_text(TARGET, encoding="utf-8")
    script(root, FIRST)
    return root / "evalh.toml"


def cli(cfg: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--config", str(cfg), "--runs-dir", str(cfg.parent / "runs")])


def original(tmp_path: Path) -> tuple[Path, str, bytes]:
    cfg = project(tmp_path)
    result = cli(cfg, "run", "--json", "--max-error-rate", "1")  # errors on purpose: the material of a rejudge
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    script(tmp_path, SECOND)
    return cfg, run_id, (tmp_path / "runs" / f"{run_id}.json").read_bytes()


def rejudge(cfg: Path, run_id: str, *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    result = cli(cfg, "rejudge", run_id, "--json", *args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    return out, json.loads(Path(out["path"]).read_bytes())


def by_case(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["case_id"]: c for c in doc["suites"]["s"]["cases"]}


def judge_of(case: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in case["scores"] if s["scorer"] == "judge")


def test_rejudge_touches_only_missing_or_failed_judgments(tmp_path: Path) -> None:
    cfg, run_id, before = original(tmp_path)
    old = by_case(json.loads(before))
    assert [old[q]["status"] for q in QUESTIONS] == ["passed", "failed", "judge_error", "judge_error", "errored"]
    out, doc = rejudge(cfg, run_id, "--missing")  # the default, said explicitly
    assert doc["derived_from"] == {"run_id": run_id, "how": "rejudge"} and out["derived_from"]["run_id"] == run_id
    assert doc["run_id"] != run_id and doc["label"] == f"rejudge of {run_id}" and doc["status"] == "complete"
    new = by_case(doc)
    # ALPHA would be judged "fail" today: it kept its stored "pass", so it was not judged again
    assert judge_of(new["alpha"]) == judge_of(old["alpha"])
    assert judge_of(new["beta"]) == judge_of(old["beta"])
    assert [new[q]["status"] for q in QUESTIONS] == ["passed", "failed", "passed", "passed", "errored"]
    assert judge_of(new["gamma"])["rationale"] == "fine now"
    assert new["gamma"]["scores"][0] == old["gamma"]["scores"][0]  # the exact score is replayed
    assert (new["delta"]["output"], new["delta"]["latency_ms"]) == (old["delta"]["output"], old["delta"]["latency_ms"])
    assert new["boom"] == old["boom"]  # a target failure is never rescored
    suite = out["suites"]["s"]
    assert (suite["rescored"], suite["carried_over"]) == (2, 3)
    assert (suite["judge_error_before"], suite["judge_error_after"]) == (2, 0)
    drift = suite["drift"]["judge"]
    assert (drift["judged_again"], drift["newly_judged"], drift["n"], drift["agreement"]) == (2, 2, 0, None)
    assert doc["suites"]["s"]["details"]["judge"]["rejudge_drift"] == drift
    assert doc["suites"]["s"]["dataset"] == json.loads(before)["suites"]["s"]["dataset"]
    assert doc["suites"]["s"]["target"] == {"kind": "python", "callable": "rtgt:answer"}
    assert doc["config"]["rejudge"] == {"from": run_id, "all": False, "judge_model": None, "suites": ["s"]}
    assert (tmp_path / "runs" / f"{run_id}.json").read_bytes() == before


def test_rejudge_all_measures_drift(tmp_path: Path) -> None:
    cfg, run_id, before = original(tmp_path)
    out, doc = rejudge(cfg, run_id, "--all", "--label", "judge=today")
    assert doc["label"] == "judge=today"
    new = by_case(doc)
    assert judge_of(new["alpha"])["verdict"] == "fail" and new["alpha"]["status"] == "failed"
    drift = out["suites"]["s"]["drift"]["judge"]
    # compared where both runs judged: ALPHA pass→fail, BETA fail→fail
    assert (drift["judged_again"], drift["newly_judged"], drift["still_failed"], drift["n"]) == (4, 2, 0, 2)
    assert drift["agreement"] == 0.5 and drift["kappa"] == 0.0
    assert drift["confusion"] == {"fail": {"fail": 1}, "pass": {"fail": 1}}
    assert drift["changed"] == [{"case_id": "alpha", "arm": "default", "attempt": 0, "unit": "case",
                                 "old": "pass", "new": "fail"}]
    assert out["suites"]["s"]["rescored"] == 4 and new["boom"]["status"] == "errored"
    assert (tmp_path / "runs" / f"{run_id}.json").read_bytes() == before
    # evalh compare reads the derived run like any other: it names what the new judge changed
    result = cli(cfg, "compare", run_id, out["run_id"], "--format", "json")
    assert result.exit_code == 0, result.output
    named = json.loads(result.stdout)["suites"]["s"]["cases"]
    assert [(c["case_id"], c["base"], c["candidate"]) for c in named["regressed"]] == [("alpha", "passed", "failed")]
    assert {c["case_id"] for c in named["judge_error"]} == {"gamma", "delta"}


def test_rejudge_with_another_judge_model_is_recorded(tmp_path: Path) -> None:
    cfg, run_id, _ = original(tmp_path)
    out, doc = rejudge(cfg, run_id, "--all", "--judge-model", "judge-2")
    new = by_case(doc)
    assert judge_of(new["beta"])["judge_model"] == "judge-2" and judge_of(new["beta"])["verdict"] == "pass"
    scorer = doc["config"]["suites"]["s"]["scorers"][1]
    assert [j["model"] for j in scorer["judges"]] == ["judge-2"]
    assert doc["config"]["rejudge"]["judge_model"] == "judge-2"
    drift = out["suites"]["s"]["drift"]["judge"]
    assert drift["confusion"] == {"fail": {"pass": 1}, "pass": {"pass": 1}} and drift["agreement"] == 0.5


def test_rejudge_human_report(tmp_path: Path) -> None:
    cfg, run_id, _ = original(tmp_path)
    result = cli(cfg, "rejudge", run_id, "--all", "--quiet")
    assert result.exit_code == 0 and result.stdout == ""
    result = cli(cfg, "rejudge", run_id, "--all")
    assert result.exit_code == 0, result.output
    assert "drift over 2 judgments: agreement 0.500, Cohen's kappa 0.000" in result.stdout
    assert "s · judge: old verdicts (rows) vs new (columns)" in result.stdout
    result = cli(cfg, "rejudge", run_id)
    assert "no judgment to compare" in result.stdout


def test_rejudge_refusals_write_nothing(tmp_path: Path) -> None:
    cfg, run_id, before = original(tmp_path)
    runs = tmp_path / "runs"
    partial = json.loads(before)
    partial["run_id"] = run_id + "p"
    partial["status"] = "partial"
    (runs / f"{run_id}p.json").write_text(json.dumps(partial), encoding="utf-8")
    count = len(list(runs.glob("*.json")))
    for args, message in [
        ((run_id + "p",), "is partial: finish it first"),
        (("nope",), "no run 'nope'"),
        (("../etc/passwd",), "invalid run id"),
        ((run_id, "--suite", "other"), "has no suite 'other'"),
    ]:
        result = cli(cfg, "rejudge", *args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output
    project(tmp_path, '{ type = "exact", field = "text", expected_field = "text" }')
    result = cli(cfg, "rejudge", run_id)
    assert result.exit_code == 2 and "nothing to judge again" in result.output
    assert len(list(runs.glob("*.json"))) == count


CITED = '''\
def answer(inp):
    return "Intro.\\n\\nParis is the capital [1].\\n\\nLyon is the capital [1]."
'''


def test_rejudge_drift_of_paragraph_judgments(tmp_path: Path) -> None:
    (tmp_path / "evalh.toml").write_text(
        '[suites.s]\ndataset = "d.jsonl"\ntarget = "ctgt:answer"\nregime = "stochastic"\n'
        f'scorers = [{{ type = "citation_judge", {JUDGE} }}]\n', encoding="utf-8")
    (tmp_path / "d.jsonl").write_text(json.dumps({"id": "c", "input": {"sources": ["Paris is the capital."]}}) + "\n",
                                      encoding="utf-8")
    (tmp_path / "ctgt.py").write_text(CITED, encoding="utf-8")

    def rules(lyon: str) -> None:
        script(tmp_path, [
            {"match": "<paragraph>\nParis", "json": {"verdict": "supported", "rationale": "yes"}},
            {"match": "<paragraph>\nLyon", "json": {"verdict": lyon, "rationale": "judged"}},
        ])

    rules("supported")
    cfg = tmp_path / "evalh.toml"
    result = cli(cfg, "run", "--json")
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    rules("unsupported")
    out, doc = rejudge(cfg, run_id, "--all")
    drift = out["suites"]["s"]["drift"]["citation_judge"]
    assert (drift["n"], drift["agreement"]) == (2, 0.5)
    assert drift["confusion"] == {"supported": {"supported": 1, "unsupported": 1}}
    assert drift["changed"][0]["unit"] == "paragraph 2"


# --------------------------------------------------------------------------- pure parts


def _result(score: Score | None, case: str = "c") -> CaseResult:
    return CaseResult(case_id=case, status="passed", scores=[score] if score else [])


def test_judgment_units() -> None:
    assert judgment_units(Score(scorer="j", verdict="supported", passed=True)) == {"case": "supported"}
    assert judgment_units(Score(scorer="j", passed=False, value=0.0)) == {"case": "fail"}
    assert judgment_units(Score(scorer="j", value=0.7)) == {}  # a bare number is not a verdict
    assert judgment_units(Score(scorer="j", verdict="no_majority", error="no_majority: split")) == {}
    paragraphs = [{"index": 1, "verdict": "supported"}, {"index": 3, "verdict": "partial"},
                  {"index": 4, "error": "judge call failed"}]
    assert judgment_units(Score(scorer="j", details={"paragraphs": paragraphs})) == {
        "paragraph 1": "supported", "paragraph 3": "partial"}
    assert judgment_units(None) == {}


def test_measure_counts_only_units_judged_twice() -> None:
    old = {("a", "default", 0): _result(Score(scorer="j", verdict="pass")),
           ("b", "default", 0): _result(Score(scorer="j", error="down")),
           ("c", "default", 0): _result(Score(scorer="j", verdict="fail"))}
    new = {("a", "default", 0): _result(Score(scorer="j", verdict="pass")),
           ("b", "default", 0): _result(Score(scorer="j", verdict="pass")),
           ("c", "default", 0): _result(Score(scorer="j", error="down again"))}
    d = measure("s", "j", set(old), old, new)
    assert (d.judged_again, d.newly_judged, d.still_failed, d.n) == (3, 1, 1, 1)
    assert d.agreement == 1.0 and d.kappa is None  # one label throughout: kappa is undefined
    assert d.confusion == {"pass": {"pass": 1}}


def test_rejudge_one_suite_keeps_the_others_as_they_were(tmp_path: Path) -> None:
    cfg = project(tmp_path)
    text = cfg.read_text(encoding="utf-8")
    cfg.write_text(text + text.replace("[suites.s]", "[suites.t]"), encoding="utf-8")
    result = cli(cfg, "run", "--json", "--max-error-rate", "1")  # errors on purpose: the material of a rejudge
    assert result.exit_code == 0, result.output
    run_id = json.loads(result.stdout)["run_id"]
    script(tmp_path, SECOND)
    out, doc = rejudge(cfg, run_id, "--suite", "s")
    assert set(doc["suites"]) == {"s", "t"}
    assert doc["suites"]["s"]["aggregate"]["judge_error"] == 0
    old = json.loads((tmp_path / "runs" / f"{run_id}.json").read_bytes())
    assert doc["suites"]["t"]["cases"] == old["suites"]["t"]["cases"]
    assert out["suites"]["t"]["note"] == "not chosen with --suite: carried over as it was"
    assert out["suites"]["t"]["rescored"] == 0 and doc["config"]["rejudge"]["suites"] == ["s"]


def test_drift_note_does_not_suggest_all_when_all_was_given(tmp_path: Path) -> None:
    """Every stored judgment failed, so even `--all` has none to compare with: the note must
    not tell the user to pass the `--all` they passed."""
    cfg = project(tmp_path)
    script(tmp_path, [{"match": "<output>", "fault": "overloaded"}])
    ran = cli(cfg, "run", "--json")
    assert ran.exit_code == 1, ran.output  # a suite where every result failed fails the run
    run_id = json.loads(ran.stdout)["run_id"]
    script(tmp_path, SECOND)
    everything = cli(cfg, "rejudge", run_id, "--all")
    assert everything.exit_code == 0, everything.output
    assert "no judgment to compare" in everything.stdout and "--all" not in everything.stdout
    missing = cli(cfg, "rejudge", run_id)
    assert missing.exit_code == 0, missing.output
    assert "no judgment to compare" in missing.stdout


def test_rejudge_returns_typed_suites_and_its_json_keeps_their_keys(tmp_path: Path) -> None:
    """`rejudge` returns a `SuiteRejudged` per suite with each judge's `Drift`; `--json`
    writes them with the keys (and key order) it always had, new keys after them."""
    from dataclasses import asdict

    from evalh.config import load_config
    from evalh.core.rejudge.drift import Drift
    from evalh.core.rejudge.rejudge import RejudgeOptions, SuiteRejudged
    from evalh.core.rejudge.rejudge import rejudge as core_rejudge
    from evalh.store import RunStore

    cfg, run_id, _ = original(tmp_path)
    result = core_rejudge(load_config(cfg, check_datasets=False), RunStore(tmp_path / "runs"),
                          RejudgeOptions(run=run_id, everything=True))
    suite = result.suites["s"]
    assert isinstance(suite, SuiteRejudged) and isinstance(suite.drift["judge"], Drift)
    assert (suite.rescored, suite.carried_over, suite.judge_error_before, suite.judge_error_after) == (4, 1, 2, 0)
    assert suite.drift["judge"].judged_again == 4 and suite.drift["judge"].agreement == 0.5
    out, _ = rejudge(cfg, run_id, "--all")
    shown = out["suites"]["s"]
    assert list(shown) == ["rescored", "carried_over", "judge_error_before", "judge_error_after", "note", "drift",
                           "judge_error_now"]  # a key added last, as the contract allows
    assert shown["judge_error_now"] == suite.judge_error_now == 0
    assert shown["drift"]["judge"] == asdict(suite.drift["judge"])


def test_a_rejudge_charges_its_budget_with_its_judges_only(tmp_path: Path) -> None:
    """Stored outputs were paid for by the original run: their tokens and cost come back as
    recorded and are not charged to the rejudge's budget again (only its judge calls are),
    so a budget far below what the stored outputs used does not stop it."""
    from evalh.config import load_config
    from evalh.core.rejudge.rejudge import RejudgeOptions, prepare_rejudge
    from evalh.core.run.entry import run_plan
    from evalh.services import Budget
    from evalh.store import RunStore

    cfg, run_id, _ = original(tmp_path)
    path = tmp_path / "runs" / f"{run_id}.json"
    doc = json.loads(path.read_bytes())
    for case in doc["suites"]["s"]["cases"]:
        case.update(tokens_in=100_000, tokens_out=5, cost_usd=2.5, latency_ms=123.0)
    path.write_text(json.dumps(doc), encoding="utf-8")
    store = RunStore(tmp_path / "runs")
    plan, _, _ = prepare_rejudge(load_config(cfg, check_datasets=False), store, RejudgeOptions(run=run_id, everything=True))
    plan.services.budget = Budget(max_tokens=50_000)  # a tenth of one stored output's tokens
    run = run_plan(plan, store)
    assert run.status == "complete", run.status_reason
    cases = run.suites["s"].cases
    assert [(c.tokens_in, c.tokens_out, c.cost_usd, c.latency_ms) for c in cases] == [(100_000, 5, 2.5, 123.0)] * 5
    assert plan.services.budget.tokens < 50_000  # the judges' own tokens, nothing stored
