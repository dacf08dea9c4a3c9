"""Judge scorers through the CLI, the runner, the real provider client and the real
anthropic SDK, against evalh's loopback mock provider (`base_url = "mock:<script>"`)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app

TARGET = '''\
def answer(inp):
    return {"text": inp["q"].upper()}

def short(inp):
    return {"text": "brief answer about " + inp["q"]}

def detailed(inp):
    return {"text": "detailed answer about " + inp["q"]}
'''
JUDGE = 'provider = "anthropic", model = "judge-1", base_url = "mock:judge.json", max_retries = 1, backoff_base_s = 0.01'


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "response-cache"))


def project(root: Path, scorers: str, script: list[dict[str, Any]], *, n: int = 2, target: str = '"tgt:answer"',
            extra: str = "") -> Path:
    (root / "evalh.toml").write_text(
        f'[suites.s]\ndataset = "d.jsonl"\ntarget = {target}\nregime = "stochastic"\n{extra}scorers = [\n{scorers}\n]\n',
        encoding="utf-8")
    (root / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": f"question{i}"}, "expected": {"text": f"QUESTION{i}"}}) + "\n"
        for i in range(1, n + 1)), encoding="utf-8")
    (root / "tgt.py").write_text(TARGET, encoding="utf-8")
    (root / "judge.json").write_text(json.dumps({"rules": script}), encoding="utf-8")
    return root / "evalh.toml"


def run(cfg: Path, *args: str) -> tuple[Result, dict[str, Any] | None]:
    runs = cfg.parent / "runs"
    result = CliRunner().invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "--json", *args])
    docs = sorted(runs.glob("*.json")) if runs.is_dir() else []
    return result, (json.loads(docs[-1].read_bytes()) if docs else None)


def cases(doc: dict[str, Any], suite: str = "s") -> dict[str, dict[str, Any]]:
    return {f"{c['case_id']}/{c['arm']}": c for c in doc["suites"][suite]["cases"]}


def score(case: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in case["scores"] if s["scorer"] == name)


def verdict(v: str, why: str = "because") -> dict[str, Any]:
    return {"json": {"verdict": v, "rationale": why}}


def test_truncated_reply_is_named_salvaged_and_kept_apart(tmp_path: Path) -> None:
    items = [{"name": n, "verdict": "pass", "rationale": f"the {n} part is right and well argued"} for n in ("a", "b", "c")]
    cfg = project(tmp_path, f'{{ type = "judge", {JUDGE}, rubric = "r", criteria = ["a", "b", "c"], max_tokens = 16 }},'
                            '\n{ type = "exact", field = "text", expected_field = "text" }',
                  [{"match": "QUESTION1", "json": {"criteria": items}}], n=1)
    result, doc = run(cfg)
    # the only case lost its judgment: nothing was measured, so the run fails (max_error_rate)
    assert result.exit_code == 1, result.output
    assert "suite s: 1 of 1 results errored or judge_error (0 errored, 1 judge_error) (100 %)" in result.stderr
    assert doc is not None
    c = cases(doc)["c1/default"]
    assert c["status"] == "judge_error"
    s = score(c, "judge")
    assert "truncated: the judge's reply stopped at max_tokens=16" in s["error"] and "unparseable" not in s["error"]
    vote = s["details"]["judges"][0]
    assert vote["truncated"] is True and [i["name"] for i in vote["salvaged"]] == ["a", "b"]
    agg = doc["suites"]["s"]["aggregate"]
    assert (agg["judge_error"], agg["pass_rate_denominator"], agg["pass_rate"]) == (1, 0, None)


def test_missing_rationale_is_asked_again_then_judge_error(tmp_path: Path) -> None:
    script = [
        {"match": "regex:(?s)QUESTION1.*That reply cannot be used", **verdict("pass", "fixed")},
        {"match": "QUESTION1", "json": {"verdict": "pass"}},
        {"match": "QUESTION2", "json": {"verdict": "pass", "rationale": ""}},
    ]
    cfg = project(tmp_path, f'{{ type = "judge", {JUDGE}, rubric = "r", reply_retries = 2 }}', script)
    result, doc = run(cfg)
    assert result.exit_code == 1, result.output  # 1 of 2 unjudged: over the default max_error_rate
    assert "suite s: 1 of 2 results errored or judge_error" in result.stderr
    by = cases(doc)  # type: ignore[arg-type]
    one, two = score(by["c1/default"], "judge"), score(by["c2/default"], "judge")
    assert by["c1/default"]["status"] == "passed" and one["rationale"] == "fixed"
    assert one["details"]["usage"]["calls"] == 2
    assert by["c2/default"]["status"] == "judge_error"
    assert two["error"].endswith('invalid reply after 3 attempts: the reply has no rationale: every verdict needs a non-empty "rationale"')
    assert two["details"]["usage"]["calls"] == 3


def test_overloaded_judge_is_retried_then_judge_error(tmp_path: Path) -> None:
    script = [
        {"match": "QUESTION1", "sequence": [{"fault": "overloaded"}, verdict("pass")]},
        {"match": "QUESTION2", "fault": "overloaded"},
    ]
    cfg = project(tmp_path, f'{{ type = "judge", {JUDGE}, rubric = "r" }}', script)
    result, doc = run(cfg, "--max-error-rate", "0.5")  # one of the two is meant to stay unjudged
    assert result.exit_code == 0, result.output
    by = cases(doc)  # type: ignore[arg-type]
    assert by["c1/default"]["status"] == "passed"  # one 529, retried by the provider client
    assert by["c2/default"]["status"] == "judge_error"
    err = score(by["c2/default"], "judge")["error"]
    assert err.startswith("judge judge-1: judge call failed:") and "529" in err
    assert doc["suites"]["s"]["details"]["judge"]["judge_error"] == 1  # type: ignore[index]


MODEL_TARGET = '{ kind = "anthropic", model = "judge-1", base_url = "mock:judge.json", prompt = "{{ input.q }}", max_tokens = 20 }'


def test_self_judge_is_refused_and_the_override_recorded(tmp_path: Path) -> None:
    script = [{"match": "<output>", **verdict("pass")}, {"match": "question", "text": "an answer"}]
    cfg = project(tmp_path, f'{{ type = "judge", {JUDGE}, rubric = "r" }}', script, target=MODEL_TARGET)
    result, doc = run(cfg)
    assert result.exit_code == 2
    assert "judge model 'judge-1' is the model under test" in result.output and "--allow-self-judge" in result.output
    assert doc is None or doc["status"] == "failed"  # never written as a complete run
    result, doc = run(cfg, "--allow-self-judge")
    assert result.exit_code == 0, result.output
    assert doc is not None and doc["config"]["allow_self_judge"] is True
    assert doc["suites"]["s"]["details"]["judge"]["self_judge"]["allowed_by"] == "--allow-self-judge"
    assert all(score(c, "judge")["details"]["self_judge"] is True for c in doc["suites"]["s"]["cases"])


def test_majority_and_tie_across_two_models(tmp_path: Path) -> None:
    judges = ('judges = [{ provider = "anthropic", model = "j-a", base_url = "mock:judge.json" },'
              ' { provider = "anthropic", model = "j-b", base_url = "mock:judge.json" },'
              ' { provider = "anthropic", model = "j-c", base_url = "mock:judge.json" }]')
    script = [
        {"model": "j-c", "match": "QUESTION2", **verdict("fail", "c dissents")},
        {"model": "j-b", "match": "QUESTION2", **verdict("fail", "b dissents")},
        {"model": "j-c", "match": "QUESTION1", **verdict("fail", "c dissents")},
        {"match": "<output>", **verdict("pass", "fine")},
    ]
    cfg = project(tmp_path, f'{{ type = "judge", {judges}, rubric = "r" }}', script)
    result, doc = run(cfg)
    assert result.exit_code == 0, result.output
    by = cases(doc)  # type: ignore[arg-type]
    one, two = score(by["c1/default"], "judge"), score(by["c2/default"], "judge")
    assert (one["verdict"], one["passed"]) == ("pass", True)  # 2 of 3
    assert [v["verdict"] for v in one["details"]["judges"]] == ["pass", "pass", "fail"]
    assert (two["verdict"], two["passed"]) == ("fail", False)
    # two judges split one to one: no_majority, never a pass
    two_judges = ('judges = [{ provider = "anthropic", model = "j-a", base_url = "mock:judge.json" },'
                  ' { provider = "anthropic", model = "j-c", base_url = "mock:judge.json" }]')
    cfg = project(tmp_path, f'{{ type = "judge", {two_judges}, rubric = "r" }}', script)
    result, doc = run(cfg)
    tie = score(cases(doc)["c1/default"], "judge")  # type: ignore[arg-type]
    assert tie["verdict"] == "no_majority" and tie["passed"] is None and tie["error"].startswith("no_majority")
    assert cases(doc)["c1/default"]["status"] == "judge_error"  # type: ignore[arg-type]
    assert doc["suites"]["s"]["details"]["judge"]["no_majority"] == 2  # both cases split  # type: ignore[index]


def test_position_swap_inconsistency_is_reported(tmp_path: Path) -> None:
    arms = ('arms = [{ name = "brief", target = "tgt:short" }, { name = "detailed", target = "tgt:detailed" }]\n'
            'baseline_arm = "brief"\n')
    script = [
        # question1: the judge always prefers what it sees first (position bias)
        {"match": "<response_a>\nbrief answer about question1", "json": {"winner": "A", "rationale": "first is better"}},
        {"match": "<response_a>\ndetailed answer about question1", "json": {"winner": "A", "rationale": "first is better"}},
        # question2: the judge prefers the detailed answer wherever it stands
        {"match": "<response_a>\ndetailed answer about question2", "json": {"winner": "A", "rationale": "detailed"}},
        {"match": "<response_b>\ndetailed answer about question2", "json": {"winner": "B", "rationale": "detailed"}},
        {"match": "<output>", **verdict("pass")},
    ]
    scorers = (f'{{ type = "judge", {JUDGE}, rubric = "answers the question", output_field = "text" }},\n'
               f'{{ type = "pairwise_judge", name = "ab", {JUDGE}, rubric = "more helpful answer", output_field = "text" }}')
    cfg = project(tmp_path, scorers, script, extra=arms)
    result, doc = run(cfg)
    assert result.exit_code == 0, result.output
    details = doc["suites"]["s"]["details"]["ab"]  # type: ignore[index]
    assert details["consistency_under_order_swap"] == 0.5 and details["position_bias_flag"] is True
    assert details["arms"]["detailed"] == {"win": 1, "loss": 0, "tie": 0, "inconsistent": 1, "judge_error": 0,
                                           "win_rate": 1.0, "decided": 1}
    by = cases(doc)  # type: ignore[arg-type]
    flipped, held = score(by["c1/detailed"], "ab"), score(by["c2/detailed"], "ab")
    assert flipped["verdict"] == "inconsistent" and flipped["details"]["consistent"] is False
    assert flipped["details"]["baseline_first"]["verdict"] == "A" and flipped["details"]["baseline_second"]["verdict"] == "A"
    assert held["verdict"] == "win" and held["details"]["winner"] == "detailed"
    assert score(by["c1/brief"], "ab")["verdict"] == "baseline"
    assert all(c["status"] == "passed" for c in by.values())  # a pairwise outcome never changes a status


def test_pairwise_judge_alone_is_refused(tmp_path: Path) -> None:
    arms = 'arms = [{ name = "x", target = "tgt:short" }, { name = "y", target = "tgt:detailed" }]\n'
    cfg = project(tmp_path, f'{{ type = "pairwise_judge", {JUDGE}, rubric = "r" }}', [], extra=arms)
    result, _ = run(cfg)
    assert result.exit_code == 2 and "gives no pass/fail of its own" in result.output


def test_calibration_below_threshold_refuses_the_run(tmp_path: Path) -> None:
    (tmp_path / "cal.jsonl").write_text("".join(json.dumps(
        {"id": f"k{i}", "input": {"q": "capital?", "output": out}, "expected": label}) + "\n"
        for i, (out, label) in enumerate([("Paris", "pass"), ("Lyon", "fail"), ("Nice", "fail")])), encoding="utf-8")
    cal = 'calibration = { dataset = "cal.jsonl", min_accuracy = 0.9 }'
    cfg = project(tmp_path, f'{{ type = "judge", {JUDGE}, rubric = "r", {cal} }}', [{"match": "<output>", **verdict("pass")}])
    result, doc = run(cfg)
    assert result.exit_code == 2
    assert "judge calibration accuracy 0.33 (1 of 3 on cal.jsonl, 0 judge errors) is below min_accuracy 0.90" in result.output
    assert doc is None or doc["status"] == "failed"
    (tmp_path / "judge.json").write_text(json.dumps({"rules": [
        {"match": "<output>\nParis", **verdict("pass")}, {"match": "<output>", **verdict("fail")}]}), encoding="utf-8")
    result, doc = run(cfg)
    assert result.exit_code == 0, result.output
    calibration = doc["suites"]["s"]["details"]["judge"]["calibration"]  # type: ignore[index]
    assert (calibration["accuracy"], calibration["n"], calibration["min_accuracy"]) == (1.0, 3, 0.9)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_external_score_unreachable_is_null_never_zero(tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{_closed_port()}/v1/score"
    scorers = (f'{{ type = "external_score", name = "down", url = "{down}", model = "m", retries = 0 }},\n'
               '{ type = "external_score", name = "up", url = "mock:judge.json", model = "m", pass_at = 0.5 },\n'
               '{ type = "exact", field = "text", expected_field = "text" }')
    cfg = project(tmp_path, scorers, [{"endpoint": "score", "match": "QUESTION1", "score": 0.8},
                                      {"endpoint": "score", "score": 0.2}])
    result, doc = run(cfg)
    assert result.exit_code == 0, result.output
    by = cases(doc)  # type: ignore[arg-type]
    down_score = score(by["c1/default"], "down")
    assert down_score["value"] is None and down_score["passed"] is None and down_score["abstained"] is True
    assert "unreachable" in down_score["rationale"] and down_score["details"]["nulls"] == 1
    assert score(by["c1/default"], "up")["value"] == 0.8 and score(by["c2/default"], "up")["passed"] is False
    assert by["c1/default"]["status"] == "passed" and by["c1/default"]["score"] == pytest.approx(0.9)
    details = doc["suites"]["s"]["details"]  # type: ignore[index]
    assert details["down"]["nulls"] == 2 and details["down"]["values"] == 0 and details["down"]["mean"] is None
    assert details["up"]["nulls"] == 0 and details["up"]["values"] == 2


def test_shipped_citations_suite_end_to_end(repo_root: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--config", str(repo_root / "evalh.toml"), "--suite", "citations",
                                      "--runs-dir", str(tmp_path / "runs"), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(next((tmp_path / "runs").glob("*.json")).read_bytes())
    suite = doc["suites"]["citations"]
    seen: set[str] = set()
    for c in suite["cases"]:
        judged = score(c, "citation_judge")
        paragraphs = judged["details"].get("paragraphs", [])
        assert [p["verdict"] for p in paragraphs] == c["expected"]["paragraph_verdicts"], c["case_id"]
        assert [bool(p["metadata_mismatch"]) for p in paragraphs] == c["expected"]["metadata_mismatch"], c["case_id"]
        assert (c["status"] == "passed") == c["expected"]["passed"], c["case_id"]
        assert all(p.get("rationale") for p in paragraphs)
        seen.update(p["verdict"] for p in paragraphs)
    assert seen == {"supported", "partial", "unsupported", "wrong_speaker", "wrong_attribution"}
    details = suite["details"]["citation_judge"]
    assert details["precheck"] == {"metadata_mismatch": 2, "caught_by_precheck": 2, "only_by_judge": 5,
                                   "mismatch_judged_supported": 0}
    assert details["judge_error"] == 0 and details["usage"]["calls"] == 12  # 11 paragraphs + one re-ask
    assert suite["details"]["grounding"]["nulls"] == 0 and suite["details"]["grounding"]["values"] == 8
    wrong = cases(doc, "citations")["citations.wrong_speaker_linked/default"]
    mismatch = score(wrong, "citation_judge")["details"]["paragraphs"][0]["metadata_mismatch"]
    assert mismatch == ("the paragraph states speaker 'Erik Holm', party 'M', "
                        "but [1] has speaker 'Sara Berg', party 'L'")


def test_external_score_wire_shape_transform_and_bad_values(tmp_path: Path) -> None:
    import asyncio

    from evalh.mock import MockProvider
    from evalh.models import Case
    from evalh.providers.clients import close_providers
    from evalh.scorers.base import ScoreContext
    from evalh.scorers.external_score import ExternalScoreConfig, ExternalScorer
    from evalh.services import RunServices
    from evalh.targets.base import TargetOutput

    answer = "Intro.\n\nParis is the capital [1].\n\nLyon is big [2]."
    case = Case(id="c", input={"sources": ["Paris is the capital of France.", "Lyon is a large city."]})
    rules = [{"endpoint": "score", "match": "Paris is the capital [1]", "score": 2.0},
             {"endpoint": "score", "match": "Lyon is big", "score": -1.0}]

    async def score(mp: MockProvider, **cfg: Any) -> Any:
        services = RunServices(root=tmp_path)
        scorer = ExternalScorer(ExternalScoreConfig.model_validate(
            {"type": "external_score", "url": mp.base_url + "/v1/score", "model": "rr", **cfg}))
        ctx = ScoreContext(run_id="r", suite="s", arm="default", attempt=0,
                           target_output=TargetOutput(output=answer), services=services)
        try:
            return await scorer.score(case, answer, ctx)
        finally:
            await close_providers(services)

    with MockProvider(rules) as mp:
        s = asyncio.run(score(mp, mode="paragraphs", transform="sigmoid"))
        assert s.details["scores"] == pytest.approx([0.8807970779778823, 0.2689414213699951])
        assert s.value == pytest.approx((0.8807970779778823 + 0.2689414213699951) / 2) and s.passed is None
        sent = [r.body for r in mp.requests if r.path == "/v1/score"]
        assert len(sent) == 1 and sent[0]["text_1"] == ["Paris is the capital [1].", "Lyon is big [2]."]
        assert sent[0]["text_2"] == ["Paris is the capital of France.", "Lyon is a large city."]
        raw = asyncio.run(score(mp, mode="paragraphs"))  # logits without the sigmoid: not a 0–1 score
        assert raw.value is None and raw.abstained and "outside 0–1" in raw.rationale
        whole = asyncio.run(score(mp, mode="answer", transform="sigmoid"))
        assert whole.details["pairs"] == 1 and whole.value is not None
        mp.inject("server_error", times=5, endpoint="score")
        down = asyncio.run(score(mp, retries=1))
        assert down.value is None and down.details["null_reason"].endswith("HTTP 500")


def test_judge_tokens_count_against_the_run_budget(tmp_path: Path) -> None:
    cfg = project(tmp_path, f'{{ type = "judge", {JUDGE}, rubric = "r" }}', [{"match": "<output>", **verdict("pass")}], n=3)
    result, doc = run(cfg, "--max-tokens", "1", "--concurrency", "1")
    assert doc is not None, result.output
    # the target (Python) spends no tokens: only the judge's usage can have spent the budget
    assert doc["status"] == "partial" and doc["status_reason"].startswith("token budget reached")
    assert len(doc["suites"]["s"]["cases"]) == 1
    usage = score(doc["suites"]["s"]["cases"][0], "judge")["details"]["usage"]
    assert usage["tokens_in"] > 0 and doc["suites"]["s"]["cases"][0]["tokens_in"] is None
