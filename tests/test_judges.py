"""Judge scorers, unit ring: a scripted fake ProviderClient, no network."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from judge_fakes import FakeClient, case, ctx, factory, reply, services, suite_plan
from pydantic import ValidationError

from evalh.core.results.outcome import decide_status
from evalh.errors import ConfigError, EvalhError
from evalh.providers.base import ProviderError
from evalh.scorers.citations import CitationJudgeConfig, CitationJudgeScorer
from evalh.scorers.citations_text import cited_numbers, paragraphs, precheck, sources_of
from evalh.scorers.judge import JudgeScorer
from evalh.scorers.judge_base import CalibrationFailed, SelfJudgeRefused, model_key
from evalh.scorers.judge_config import JudgeConfig
from evalh.scorers.judge_prompt import pairwise_prompt
from evalh.scorers.judge_reply import extract_json, salvage_json

JUDGE = "judge-model"
GOOD = {"verdict": "pass", "rationale": "names Paris, which is right"}


def judge(tmp_path: Path, *clients: FakeClient, **cfg: Any) -> JudgeScorer:
    raw = {"type": "judge", "provider": "anthropic", "model": JUDGE, "rubric": "The answer names the capital.", **cfg}
    raw = {k: v for k, v in raw.items() if v is not None}  # None: leave the key out
    return JudgeScorer(JudgeConfig.model_validate(raw), tmp_path, factory(*clients))


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def score_of(scorer: JudgeScorer, output: Any = "Paris", **kw: Any) -> Any:
    return run(scorer.score(kw.pop("the_case", case()), output, ctx(services(), **kw)))


# --------------------------------------------------------------------------- scales


def test_binary_pass_and_fail_with_provenance(tmp_path: Path) -> None:
    client = FakeClient(JUDGE, reply(GOOD), reply({"verdict": "FAIL", "rationale": "says Lyon"}))
    scorer = judge(tmp_path, client)
    ok, bad = score_of(scorer), score_of(scorer, "Lyon")
    assert (ok.value, ok.passed, ok.verdict, ok.error) == (1.0, True, "pass", None)
    assert ok.rationale == "names Paris, which is right"
    assert (bad.value, bad.passed, bad.verdict) == (0.0, False, "fail")
    assert ok.judge_model == JUDGE and ok.rubric_sha256 and len(ok.rubric_sha256) == 64
    assert ok.details["usage"]["calls"] == 1 and ok.details["usage"]["tokens_in"] == 10
    req = client.requests[0]
    assert scorer.config.rubric_sha256 in req.cache_salt
    assert req.max_tokens == 4096  # the default judge budget


def test_rubric_digest_changes_with_rubric_and_prompt_digest_with_scale(tmp_path: Path) -> None:
    import hashlib

    a = judge(tmp_path, FakeClient(JUDGE, reply(GOOD)))
    b = judge(tmp_path, FakeClient(JUDGE, reply(GOOD)), rubric="Another rubric.")
    c = judge(tmp_path, FakeClient(JUDGE, reply(GOOD)), scale="ordinal")
    # the rubric digest is over the rubric's bytes only, as for human labels (issue 15)
    assert a.config.rubric_sha256 == hashlib.sha256(b"The answer names the capital.").hexdigest()
    assert len({a.config.rubric_sha256, b.config.rubric_sha256}) == 2 and c.config.rubric_sha256 == a.config.rubric_sha256
    # what else the judge is given (prompt version, scale) has its own digest
    assert len({a.config.prompt_sha256, b.config.prompt_sha256, c.config.prompt_sha256}) == 3


def test_rubric_path_is_read_relative_to_root(tmp_path: Path) -> None:
    (tmp_path / "rubric.md").write_text("Names the capital.", encoding="utf-8")
    scorer = JudgeScorer(JudgeConfig.model_validate(
        {"type": "judge", "provider": "anthropic", "model": JUDGE, "rubric_path": "rubric.md"}), tmp_path)
    assert scorer.rubric == "Names the capital."
    with pytest.raises(ValueError, match="rubric_path: cannot read missing.md"):
        JudgeScorer(JudgeConfig.model_validate(
            {"type": "judge", "provider": "anthropic", "model": JUDGE, "rubric_path": "missing.md"}), tmp_path)


def test_ordinal_accepts_only_the_fixed_steps(tmp_path: Path) -> None:
    client = FakeClient(JUDGE, reply({"score": 0.3, "rationale": "x"}), reply({"score": 0.75, "rationale": "mostly"}))
    s = score_of(judge(tmp_path, client, scale="ordinal"))
    assert (s.value, s.passed, s.verdict) == (0.75, True, "0.75")
    assert s.details["judges"][0]["reasks"] == 1
    assert "0, 0.25, 0.5, 0.75, 1" in client.requests[1].messages[-1]["content"]
    low = score_of(judge(tmp_path, FakeClient(JUDGE, reply({"score": 0.5, "rationale": "half"})), scale="ordinal"))
    assert (low.value, low.passed) == (0.5, False)  # pass_at defaults to 0.75


@pytest.mark.parametrize(
    "cfg, message",
    [
        ({"scale": "ordinal", "steps": [0, 0.3, 0.6, 1]}, "ordinal steps are fixed at 0, 0.25, 0.5, 0.75, 1"),
        ({"scale": "ordinal", "pass_at": 0.6}, "pass_at must be one of the ordinal steps"),
        ({"scale": "verdicts"}, 'scale = "verdicts" needs a `verdicts` table'),
        ({"scale": "binary", "verdicts": {"ok": "pass"}}, '`verdicts` is only for scale = "verdicts"'),
        ({"scale": "verdicts", "verdicts": {"no_majority": "fail"}}, "evalh's own verdict"),
        ({"scale": "verdicts", "verdicts": {"Bad Name": "fail"}}, "use lower-case letters"),
        ({"scale": "verdicts", "verdicts": {"meh": "maybe"}}, 'a verdict is "pass", "fail", a score'),
        ({"scale": "linear"}, "Input should be 'binary', 'ordinal' or 'verdicts'"),
        ({"reference_field": "expected.answer"}, "a judge never sees `expected`"),
        ({"judges": [{"provider": "anthropic", "model": "x"}]}, "not both"),
        ({"rubric_sha256": "abc"}, "computed by evalh"),
        ({"rubric": None}, "needs a `rubric`"),
    ],
)
def test_bad_judge_configs_are_refused(cfg: dict[str, Any], message: str) -> None:
    raw = {"type": "judge", "provider": "anthropic", "model": JUDGE, "rubric": "r", **cfg}
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        JudgeConfig.model_validate(raw)


def test_ordinal_steps_rejected_through_the_config_loader(tmp_path: Path) -> None:
    from evalh.config import load_config

    (tmp_path / "d.jsonl").write_text('{"id": "a", "input": "x"}\n', encoding="utf-8")
    (tmp_path / "evalh.toml").write_text(
        '[suites.s]\ndataset = "d.jsonl"\ntarget = "m:f"\n'
        'scorers = [{ type = "judge", provider = "anthropic", model = "j", rubric = "r", '
        'scale = "ordinal", steps = [0, 0.5, 0.9] }]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"evalh.toml: suites.s.scorers\[0\]: .*ordinal steps are fixed"):
        load_config(tmp_path / "evalh.toml")


def test_verdict_vocabulary_maps_pass_and_score(tmp_path: Path) -> None:
    vocab = {"supported": "pass", "partial": {"pass": False, "score": 0.5}, "unsupported": 0,
             "wrong_speaker": "fail", "wrong_attribution": {"score": 0, "description": "cites the wrong source"}}
    replies = [reply({"verdict": v, "rationale": f"because {v}"}) for v in
               ("supported", "Partial", "unsupported", "wrong speaker", "wrong_attribution", "nonsense")]
    client = FakeClient(JUDGE, *replies, reply({"verdict": "supported", "rationale": "ok"}))
    scorer = judge(tmp_path, client, scale="verdicts", verdicts=vocab)
    got = [score_of(scorer) for _ in range(5)]
    assert [(s.verdict, s.value, s.passed) for s in got] == [
        ("supported", 1.0, True), ("partial", 0.5, False), ("unsupported", 0.0, False),
        ("wrong_speaker", 0.0, False), ("wrong_attribution", 0.0, False),
    ]
    again = score_of(scorer)  # "nonsense" is asked again, then answered with a known verdict
    assert again.verdict == "supported" and again.details["judges"][0]["reasks"] == 1
    assert "cites the wrong source" in client.requests[0].system


# --------------------------------------------------------------------------- failures


def test_missing_rationale_is_asked_again_then_accepted(tmp_path: Path) -> None:
    client = FakeClient(JUDGE, reply({"verdict": "pass"}), reply(GOOD))
    s = score_of(judge(tmp_path, client))
    assert s.passed is True and s.error is None
    second = client.requests[1].messages
    assert second[0] == client.requests[0].messages[0]
    assert second[1]["role"] == "assistant" and '"verdict": "pass"' in second[1]["content"]
    assert "no rationale" in second[2]["content"]
    assert s.details["usage"]["calls"] == 2


def test_missing_rationale_after_bounded_retries_is_judge_error(tmp_path: Path) -> None:
    client = FakeClient(JUDGE, reply({"verdict": "pass", "rationale": "  "}))
    s = score_of(judge(tmp_path, client, reply_retries=1))
    assert len(client.requests) == 2
    assert s.passed is None and s.value is None
    assert s.error == 'judge judge-model: invalid reply after 2 attempts: the reply has no rationale: every verdict needs a non-empty "rationale"'
    assert decide_status([s], {s.scorer}) == ("judge_error", None)


def test_reply_without_json_is_asked_again(tmp_path: Path) -> None:
    client = FakeClient(JUDGE, reply(text="I think it passes."), reply(text=f"```json\n{json.dumps(GOOD)}\n```"))
    s = score_of(judge(tmp_path, client))
    assert s.passed is True and "holds no JSON object" in client.requests[1].messages[-1]["content"]


def test_transport_failure_is_judge_error(tmp_path: Path) -> None:
    client = FakeClient(JUDGE, ProviderError("anthropic judge-model: 529 overloaded after 5 attempts", status=529))
    s = score_of(judge(tmp_path, client))
    assert s.error == "judge judge-model: judge call failed: anthropic judge-model: 529 overloaded after 5 attempts"
    assert decide_status([s], {s.scorer})[0] == "judge_error"
    # a deterministic failure next to it still fails the case: the product failed
    from evalh.models import Score

    assert decide_status([s, Score(scorer="exact", value=0, passed=False)], {s.scorer})[0] == "failed"


def test_truncated_reply_is_named_and_salvaged(tmp_path: Path) -> None:
    full = json.dumps({"criteria": [
        {"name": "correct", "verdict": "pass", "rationale": "Paris is right"},
        {"name": "concise", "verdict": "fail", "rationale": "rambles"},
        {"name": "polite", "verdict": "pass", "rationale": "it is courteous and"},
    ]})
    cut = full[: full.index("courteous") + 5]
    client = FakeClient(JUDGE, reply(text="Here you go: " + cut, truncated=True))
    s = score_of(judge(tmp_path, client, criteria=["correct", "concise", "polite"], max_tokens=50))
    assert len(client.requests) == 1  # a cut reply is not asked again with the same budget
    assert s.error.startswith("judge judge-model: truncated: the judge's reply stopped at max_tokens=50")
    assert "unparseable" not in s.error
    vote = s.details["judges"][0]
    assert vote["truncated"] is True and s.details["truncated"] is True
    assert [i["name"] for i in vote["salvaged"]] == ["correct", "concise"]
    assert vote["salvaged"][1] == {"name": "concise", "label": "fail", "value": 0.0, "passed": False,
                                   "rationale": "rambles"}


def test_truncated_but_complete_reply_is_kept_and_flagged(tmp_path: Path) -> None:
    s = score_of(judge(tmp_path, FakeClient(JUDGE, reply(GOOD, truncated=True))))
    assert s.passed is True and s.error is None and s.details["truncated"] is True


def test_criteria_all_must_pass(tmp_path: Path) -> None:
    body = {"criteria": [{"name": "a", "score": 1, "rationale": "fine"}, {"name": "b", "score": 0.5, "rationale": "meh"}]}
    s = score_of(judge(tmp_path, FakeClient(JUDGE, reply(body)), scale="ordinal", criteria=["a", "b"]))
    assert (s.value, s.passed, s.verdict) == (0.75, False, "fail")
    assert s.rationale == "a: fine; b: meh"


def test_salvage_and_extract_helpers() -> None:
    assert salvage_json('{"items": [{"a": 1}, {"a": 2}, {"a"') == {"items": [{"a": 1}, {"a": 2}]}
    assert salvage_json('{"verdict": "pass", "rationale": "cut her') == {"verdict": "pass"}
    assert salvage_json('{"n": 12') is None  # a number at the cut may itself be cut
    assert salvage_json("no json") is None
    assert extract_json('prose {not json} then {"a": {"b": [1, "}"]}} tail') == {"a": {"b": [1, "}"]}}


# --------------------------------------------------------------------------- bias controls


def test_majority_of_three_keeps_every_vote(tmp_path: Path) -> None:
    a, b, c = (FakeClient(m, reply(v)) for m, v in (
        ("j-a", GOOD), ("j-b", GOOD), ("j-c", {"verdict": "fail", "rationale": "wrong"})))
    scorer = judge(tmp_path, a, b, c, provider=None, model=None,
                   judges=[{"provider": "anthropic", "model": m} for m in ("j-a", "j-b", "j-c")])
    s = score_of(scorer)
    assert (s.verdict, s.passed, s.error) == ("pass", True, None)
    assert [(v["model"], v["verdict"]) for v in s.details["judges"]] == [("j-a", "pass"), ("j-b", "pass"), ("j-c", "fail")]
    assert s.judge_model == "j-a, j-b, j-c"


def test_tie_is_no_majority_never_a_pass(tmp_path: Path) -> None:
    a, b = FakeClient("j-a", reply(GOOD)), FakeClient("j-b", reply({"verdict": "fail", "rationale": "no"}))
    scorer = judge(tmp_path, a, b, provider=None, model=None,
                   judges=[{"provider": "anthropic", "model": "j-a"}, {"provider": "anthropic", "model": "j-b"}])
    s = score_of(scorer)
    assert s.verdict == "no_majority" and s.passed is None and s.value is None
    assert s.error == "no_majority: the judges split (pass: 1, fail: 1)"
    assert [v["verdict"] for v in s.details["judges"]] == ["pass", "fail"]
    assert decide_status([s], {s.scorer})[0] == "judge_error"


def test_a_failed_judge_leaves_the_panel_without_verdict(tmp_path: Path) -> None:
    a, b, c = FakeClient("j-a", reply(GOOD)), FakeClient("j-b", ProviderError("down")), FakeClient("j-c", reply(GOOD))
    scorer = judge(tmp_path, a, b, c, provider=None, model=None,
                   judges=[{"provider": "anthropic", "model": m} for m in ("j-a", "j-b", "j-c")])
    s = score_of(scorer)
    assert s.error == "judge 2 of 3 (j-b): judge call failed: down" and s.passed is None
    assert s.details["judges"][0]["verdict"] == "pass" and "error" in s.details["judges"][1]


def test_double_judging_flags_disagreement(tmp_path: Path) -> None:
    split = FakeClient(JUDGE, reply(GOOD), reply({"verdict": "fail", "rationale": "on reflection, no"}))
    s = score_of(judge(tmp_path, split, judge_repeats=2))
    assert s.details["low_confidence"] is True
    assert s.verdict == "fail" and s.passed is False  # a split goes to the worse verdict
    assert [r["verdict"] for r in s.details["judges"][0]["repeats"]] == ["pass", "fail"]
    salts = {r.cache_salt for r in split.requests}
    assert len(salts) == 2  # repeats never collapse onto one cached reply
    agree = score_of(judge(tmp_path, FakeClient(JUDGE, reply(GOOD)), judge_repeats=2))
    assert agree.passed is True and "low_confidence" not in agree.details
    assert agree.details["judges"][0]["low_confidence"] is False


MARKER = "LABEL-7f3a9c-never-shown"


def test_blind_prompt_never_contains_the_label(tmp_path: Path) -> None:
    client = FakeClient(JUDGE, reply(GOOD))
    scorer = judge(tmp_path, client, reference_field="input.reference", keywords_field="metadata.keywords")
    cases = [
        case("a", input={"question": "Capital?", "reference": "Paris is the capital."},
             expected=MARKER, metadata={"keywords": ["Paris", "capital"]}),
        case("b", input={"question": "Capital?"}, expected={"verdict": MARKER, "label": MARKER}),
        case("c", input="plain question", expected=[MARKER]),
    ]
    for c in cases:
        system, user = scorer.prompt(c, "Paris")
        assert MARKER not in system and MARKER not in user
        run(scorer.score(c, "Paris", ctx(services())))
    sent = json.dumps([[r.system, r.messages] for r in client.requests])
    assert MARKER not in sent and len(client.requests) == 3
    for c in cases:  # the pairwise judge builds its own prompt: blind to `expected` as well
        system, user = pairwise_prompt(rubric="r", scale=scorer.scale, case=c, first="Paris", second="Lyon")
        assert MARKER not in system and MARKER not in user and "<response_b>\nLyon" in user
    _, user = scorer.prompt(cases[0], "Paris")
    assert "Paris is the capital." in user and "Paris, capital" in user and "<output>\nParis\n</output>" in user


def test_self_judge_is_refused_unless_allowed(tmp_path: Path) -> None:
    scorer = judge(tmp_path, FakeClient("claude-x", reply(GOOD)), model="claude-x")
    plan = suite_plan(models=["anthropic/claude-x-20250101"])
    with pytest.raises(SelfJudgeRefused, match="is the model under test") as exc:
        run(scorer.prepare(plan, services()))
    assert isinstance(exc.value, EvalhError) and exc.value.exit_code == 2
    assert "--allow-self-judge" in str(exc.value)
    info = run(scorer.prepare(plan, services(allow_self_judge=True)))
    assert info["self_judge"] == {"allowed_by": "--allow-self-judge", "subject": "anthropic/claude-x-20250101",
                                  "judge_models": ["claude-x"]}
    s = run(scorer.score(case(), "Paris", ctx(services(allow_self_judge=True), subject="claude-x")))
    assert s.passed is True and s.details["self_judge"] is True


def test_self_judge_per_case_guard_and_model_keys(tmp_path: Path) -> None:
    scorer = judge(tmp_path, FakeClient("claude-x", reply(GOOD)), model="claude-x")
    s = run(scorer.score(case(), "Paris", ctx(services(), subject="claude-x-latest")))
    assert s.error and "is the model under test" in s.error
    assert run(scorer.prepare(suite_plan(models=["other-model", None]), services()))["judges"] == ["claude-x"]
    assert model_key("openai/GPT-4.1@20250101") == model_key("gpt-4.1")


def test_missing_judge_key_fails_fast(tmp_path: Path) -> None:
    from evalh.errors import MissingCredentials

    def no_key(cfg: Any, svc: Any) -> Any:
        raise ProviderError("anthropic judge-model: set ANTHROPIC_API_KEY in the environment", retryable=False)

    scorer = JudgeScorer(JudgeConfig.model_validate(
        {"type": "judge", "provider": "anthropic", "model": JUDGE, "rubric": "r"}), tmp_path, no_key)
    with pytest.raises(MissingCredentials, match="set ANTHROPIC_API_KEY"):
        run(scorer.prepare(suite_plan(models=[None]), services()))


# --------------------------------------------------------------------------- calibration


def _calibration(tmp_path: Path, rows: list[tuple[str, str]]) -> str:
    lines = [json.dumps({"id": f"cal{i}", "input": {"question": "Capital of France?", "output": out},
                         "expected": label}) for i, (out, label) in enumerate(rows)]
    (tmp_path / "cal.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return "cal.jsonl"


def _by_output(request: Any) -> Any:
    """A judge that passes everything: right on 'pass' items, wrong on 'fail' ones."""
    return reply(GOOD)


@pytest.mark.parametrize("key", ["min_accuracy", "min_calibration_accuracy"])
def test_calibration_below_threshold_refuses_the_judge(tmp_path: Path, key: str) -> None:
    path = _calibration(tmp_path, [("Paris", "pass"), ("Lyon", "fail"), ("Marseille", "fail"), ("Paris!", "pass")])
    scorer = judge(tmp_path, FakeClient(JUDGE, _by_output), calibration={"dataset": path, key: 0.75})
    with pytest.raises(CalibrationFailed, match=r"accuracy 0.50 \(2 of 4 on cal.jsonl, 0 judge errors\) is below min_accuracy 0.75"):
        run(scorer.prepare(suite_plan(models=[None]), services(tmp_path)))


def test_calibration_accuracy_is_recorded(tmp_path: Path) -> None:
    path = _calibration(tmp_path, [("Paris", "pass"), ("Lyon", "fail")])

    def right(request: Any) -> Any:
        ok = "<output>\nParis\n</output>" in request.messages[0]["content"]
        return reply({"verdict": "pass" if ok else "fail", "rationale": "checked"})

    scorer = judge(tmp_path, FakeClient(JUDGE, right), calibration={"dataset": path, "min_accuracy": 0.9})
    info = run(scorer.prepare(suite_plan(models=[None]), services(tmp_path)))
    cal = info["calibration"]
    assert (cal["n"], cal["correct"], cal["accuracy"], cal["min_accuracy"]) == (2, 2, 1.0, 0.9)
    assert cal["per_judge"] == [{"model": JUDGE, "correct": 2, "accuracy": 1.0}] and cal["misses"] == []


def test_calibration_dataset_errors_name_file_and_case(tmp_path: Path) -> None:
    (tmp_path / "cal.jsonl").write_text('{"id": "x", "input": {"output": "a"}, "expected": "maybe"}\n', encoding="utf-8")
    scorer = judge(tmp_path, FakeClient(JUDGE, reply(GOOD)), calibration={"dataset": "cal.jsonl", "min_accuracy": 0.5})
    with pytest.raises(ConfigError, match=r"cal.jsonl: case 'x': expected 'maybe' is not a verdict"):
        run(scorer.prepare(suite_plan(models=[None]), services(tmp_path)))


# --------------------------------------------------------------------------- citations

MENTION = r"\[(?P<speaker>[^\]]+)\]\(/mp/[^)]*\)\s*\((?P<party>[^)]+)\)"
TALKS = {
    "1": {"text": "We will double the library grant.", "speaker": "Sara Berg", "party": "L"},
    "2": {"text": "We reject a new grant.", "speaker": "Erik Holm", "party": "M"},
    "3": {"text": "Unrelated talk about roads.", "speaker": "Jonas Ek", "party": "C"},
}


def test_paragraphs_and_citation_markers() -> None:
    text = "Intro line.\r\n\r\nFirst claim [1].\nstill first [2, 3].\n\n- item one [1]\n  continued\n* item two\n1. item three [4]"
    assert paragraphs(text) == ["Intro line.", "First claim [1].\nstill first [2, 3].",
                                "- item one [1]\n  continued", "* item two", "1. item three [4]"]
    assert cited_numbers("a [2][1] b [1; 3] and a link [12](/mp/x) and [note]") == [2, 1, 3]


def test_sources_of_shapes() -> None:
    assert sources_of(["a", "b"])[2].text == "b"  # type: ignore[index]
    s = sources_of({"1": {"text": "t", "speaker": "X"}, " 2 ": "plain"})
    assert s is not None and s[1].meta == {"speaker": "X"} and s[2].text == "plain"
    assert sources_of({"one": "x"}) is None and sources_of("text") is None


def test_precheck_compares_stated_metadata_with_the_cited_source() -> None:
    src = sources_of(TALKS)
    assert src is not None
    rx = [re.compile(MENTION)]
    assert precheck("[Sara Berg](/mp/sb) (L) wants more books [1].", src, rx) is None
    assert precheck("[Erik Holm](/mp/eh) (M) wants more books [1].", src, rx) == (
        "the paragraph states speaker 'Erik Holm', party 'M', but [1] has speaker 'Sara Berg', party 'L'")
    assert "party 'M'" in (precheck("[Sara Berg](/mp/sb) (M) said so [1].", src, rx) or "")
    # each statement is checked against the sources cited in its own sentence
    two = "[Sara Berg](/mp/sb) (L) wants books [1]. [Erik Holm](/mp/eh) (M) does not [2]."
    assert precheck(two, src, rx) is None
    swapped = "[Sara Berg](/mp/sb) (L) wants books [2]. [Erik Holm](/mp/eh) (M) does not [1]."
    assert (precheck(swapped, src, rx) or "").count("the paragraph states") == 2
    # nothing checkable: no pattern match, or a cited source without that metadata
    assert precheck("Sara Berg said so [1].", src, rx) is None
    assert precheck("[X](/mp/x) (Y) said so [9].", src, rx) is None


def citation_judge(tmp_path: Path, *clients: FakeClient, **cfg: Any) -> CitationJudgeScorer:
    raw = {"type": "citation_judge", "provider": "anthropic", "model": JUDGE, "mention_patterns": [MENTION], **cfg}
    return CitationJudgeScorer(CitationJudgeConfig.model_validate(raw), tmp_path, factory(*clients))


def by_paragraph(request: Any) -> Any:
    text = request.messages[0]["content"]
    if "(/mp/eh) (M) wants more books" in text:
        return reply({"verdict": "wrong_speaker", "rationale": "it was Sara Berg (L)"})
    if "Roads are" in text:
        return ProviderError("judge down")
    return reply({"verdict": "supported", "rationale": "the source says so"})


def test_citation_judge_paragraph_by_paragraph(tmp_path: Path) -> None:
    client = FakeClient(JUDGE, by_paragraph)
    scorer = citation_judge(tmp_path, client)
    answer = ("Here is what was said.\n\n[Sara Berg](/mp/sb) (L) wants to double the grant [1].\n\n"
              "[Erik Holm](/mp/eh) (M) wants more books [1].\n\nHolm rejects a new grant [2][7].")
    c = case(input={"question": "Who said what?", "sources": TALKS}, expected=MARKER)
    s = run(scorer.score(c, answer, ctx(services())))
    rows = s.details["paragraphs"]
    assert [(r["index"], r["verdict"], r["cited"]) for r in rows] == [
        (1, "supported", [1]), (2, "wrong_speaker", [1]), (3, "supported", [2, 7])]
    assert rows[1]["metadata_mismatch"].startswith("the paragraph states speaker 'Erik Holm'")
    assert rows[2]["missing_sources"] == [7] and rows[0]["metadata_mismatch"] is None
    assert s.value == pytest.approx(2 / 3) and s.passed is False
    assert s.details["verdicts"] == {"supported": 2, "wrong_speaker": 1}
    assert s.details["precheck"] == {"metadata_mismatch": 1, "caught_by_precheck": 1, "only_by_judge": 0,
                                     "mismatch_judged_supported": 0}
    assert s.details["paragraphs_total"] == 4 and s.details["usage"]["calls"] == 3
    prompts = {r.messages[0]["content"] for r in client.requests}
    hinted = next(p for p in prompts if "(/mp/eh) (M) wants more books" in p)
    assert "<precheck>" in hinted and "speaker: Sara Berg" in hinted and "Erik Holm" in hinted
    assert "roads" not in " ".join(prompts)  # an uncited source is never sent
    assert "[7], which no source carries" in next(p for p in prompts if "Holm rejects" in p)
    assert all(MARKER not in p for p in prompts)  # blind: the label never reaches the judge


def test_citation_judge_failures_and_abstentions(tmp_path: Path) -> None:
    scorer = citation_judge(tmp_path, FakeClient(JUDGE, by_paragraph))
    c = case(input={"sources": TALKS})
    s = run(scorer.score(c, "Books matter [1].\n\nRoads are fine [3].", ctx(services())))
    assert s.error == "1 of 2 cited paragraphs could not be judged: judge judge-model: judge call failed: judge down"
    assert s.details["paragraphs"][0]["verdict"] == "supported"  # what was judged is kept
    assert decide_status([s], {s.scorer})[0] == "judge_error"
    none = run(scorer.score(c, "No citations here.", ctx(services())))
    assert none.abstained and none.passed is None and none.rationale == "no paragraph carries a citation"
    bad = run(scorer.score(case(input={"q": 1}), "x [1]", ctx(services())))
    assert bad.error == "case input has no numbered sources at 'sources'"


def test_citation_judge_config_checks() -> None:
    base = {"type": "citation_judge", "provider": "anthropic", "model": JUDGE}
    assert CitationJudgeConfig.model_validate(base).verdicts["partial"].outcome() == (0.5, False)
    with pytest.raises(ValidationError, match="needs named groups"):
        CitationJudgeConfig.model_validate({**base, "mention_patterns": [r"\[(.+)\]"]})
    with pytest.raises(ValidationError, match="does not compile"):
        CitationJudgeConfig.model_validate({**base, "mention_patterns": ["(?P<x>"]})


def test_dry_run_estimate_of_a_judge(tmp_path: Path) -> None:
    scorer = judge(tmp_path, FakeClient("j-a", reply(GOOD)), FakeClient("j-b", reply(GOOD)), provider=None, model=None,
                   judge_repeats=2, max_tokens=512,
                   judges=[{"provider": "anthropic", "model": "j-a"}, {"provider": "anthropic", "model": "j-b", "max_tokens": 64}])
    requests = scorer.estimate(case(expected=MARKER))
    assert [(m, out) for m, _, out in requests] == [("j-a", 512), ("j-a", 512), ("j-b", 64), ("j-b", 64)]
    system, user = scorer.prompt(case(), "")
    assert requests[0][1] == (len(system) + len(user)) // 4 > 0
