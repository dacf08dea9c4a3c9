"""Deterministic scorers: one `Score` shape (value, passed, rationale, scorer name) each."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evalh import registry
from evalh.config import load_config
from evalh.core.results.outcome import decide_status
from evalh.errors import ConfigError
from evalh.models import Case, Score
from evalh.scorers import build_scorer
from evalh.scorers.base import ScoreContext
from evalh.services import RunServices
from evalh.targets.base import TargetOutput


def _config(cfg: dict[str, Any]) -> Any:
    type_ = cfg["type"]
    return registry.scorer_module(type_).CONFIGS[type_].model_validate(cfg)


def score(cfg: dict[str, Any], output: Any, expected: Any = None, input: Any = None,
          root: Path | None = None) -> Score:
    """Build the scorer as config loading would, and score one (case, output)."""
    scorer = build_scorer(_config(cfg), root or Path.cwd())
    case = Case(id="c1", input=input, expected=expected)
    ctx = ScoreContext(run_id="r1", suite="s", arm="default", attempt=0,
                       target_output=TargetOutput(output=output),
                       services=RunServices(root=root or Path.cwd()))
    result = asyncio.run(scorer.score(case, output, ctx))
    assert isinstance(result, Score)
    return result


def passes(s: Score) -> bool:
    assert s.passed in (True, False), s
    return bool(s.passed)


# ----------------------------------------------------------------------------- exact


def test_exact_whole_output() -> None:
    s = score({"type": "exact"}, "accept", expected="accept")
    assert s == Score(scorer="exact", value=1.0, passed=True, rationale=s.rationale)
    assert s.rationale
    f = score({"type": "exact"}, "reject", expected="accept")
    assert (f.value, f.passed) == (0.0, False)
    assert "reject" in (f.rationale or "") and "accept" in (f.rationale or "")


def test_exact_strips_but_is_case_sensitive_by_default() -> None:
    assert passes(score({"type": "exact"}, "  accept\n", expected="accept"))
    assert not passes(score({"type": "exact"}, "Accept", expected="accept"))
    assert passes(score({"type": "exact", "case_sensitive": False}, "Accept", expected="accept"))
    assert not passes(score({"type": "exact", "strip": False}, "accept ", expected="accept"))


def test_exact_with_field_on_dicts_and_json_text() -> None:
    cfg = {"type": "exact", "field": "verdict"}
    assert passes(score(cfg, {"verdict": "accept", "why": "x"}, expected="accept"))
    assert passes(score(cfg, '{"verdict": "accept"}', expected="accept"))
    assert passes(score({"type": "exact", "field": "a.b.1"}, {"a": {"b": ["x", "y"]}}, expected="y"))
    missing = score(cfg, {"verdikt": "accept"}, expected="accept")
    assert not passes(missing) and "verdict" in (missing.rationale or "")
    assert not passes(score(cfg, "plain text, not JSON", expected="accept"))


def test_exact_with_expected_field_and_structured_values() -> None:
    cfg = {"type": "exact", "field": "verdict", "expected_field": "label"}
    assert passes(score(cfg, {"verdict": "ok"}, expected={"label": "ok"}))
    assert not passes(score(cfg, {"verdict": "ok"}, expected={"other": "ok"}))
    assert passes(score({"type": "exact"}, {"a": [1, 2]}, expected={"a": [1, 2]}))
    assert not passes(score({"type": "exact"}, 1, expected="1"))


def test_scorer_name_overrides_type() -> None:
    assert score({"type": "exact", "name": "verdict"}, "a", expected="a").scorer == "verdict"


# ----------------------------------------------------------------------------- contains


def test_contains_all_and_any_with_configured_values() -> None:
    all_ = {"type": "contains", "values": ["alpha", "beta"]}
    any_ = {**all_, "mode": "any"}
    both, one, none = "alpha and beta", "only alpha here", "gamma"
    assert passes(score(all_, both)) and passes(score(any_, both))
    half = score(all_, one)
    assert not passes(half) and half.value == 0.5 and "beta" in (half.rationale or "")
    assert passes(score(any_, one))
    assert not passes(score(any_, none)) and score(any_, none).value == 0.0


def test_contains_is_case_insensitive_by_default() -> None:
    assert passes(score({"type": "contains", "values": ["ALPHA"]}, "alpha"))
    assert not passes(score({"type": "contains", "values": ["ALPHA"], "case_sensitive": True}, "alpha"))


def test_contains_takes_values_from_expected() -> None:
    assert passes(score({"type": "contains"}, "the answer is 42", expected="42"))
    assert passes(score({"type": "contains"}, "a b c", expected=["a", "c"]))
    assert not passes(score({"type": "contains"}, "a b c", expected=["a", "d"]))
    assert passes(score({"type": "contains", "field": "text"}, {"text": "x 42"}, expected="42"))


def test_contains_with_nothing_to_look_for_abstains() -> None:
    s = score({"type": "contains"}, "text", expected=None)
    assert s.abstained and s.passed is None


# ----------------------------------------------------------------------------- regex


def test_regex_search_fullmatch_and_ignore_case() -> None:
    cfg = {"type": "regex", "pattern": r"\d{4}-\d{2}"}
    assert passes(score(cfg, "on 2024-03 it rained"))
    assert not passes(score({**cfg, "fullmatch": True}, "on 2024-03 it rained"))
    assert passes(score({**cfg, "fullmatch": True}, "2024-03"))
    assert not passes(score({"type": "regex", "pattern": "ACCEPT"}, "accept"))
    assert passes(score({"type": "regex", "pattern": "ACCEPT", "ignore_case": True}, "accept"))


def test_regex_pattern_from_expected() -> None:
    assert passes(score({"type": "regex"}, "id: AB-12", expected=r"[A-Z]{2}-\d+"))
    s = score({"type": "regex"}, "x", expected=None)
    assert s.abstained and s.passed is None


def test_regex_that_does_not_compile_is_refused_at_config() -> None:
    with pytest.raises(ValidationError, match="compile"):
        _config({"type": "regex", "pattern": "(unclosed"})


def test_regex_from_a_case_that_does_not_compile_is_a_scorer_error() -> None:
    s = score({"type": "regex"}, "x", expected="(unclosed")
    assert s.error and s.passed is None
    assert decide_status([s], set())[0] == "errored"


# ----------------------------------------------------------------------------- json_equal


def test_json_equal_parses_text_and_ignores_key_order() -> None:
    cfg = {"type": "json_equal"}
    assert passes(score(cfg, '{"b": [1, 2], "a": 1}', expected={"a": 1, "b": [1, 2]}))
    assert not passes(score(cfg, '{"a": 1, "b": [2, 1]}', expected={"a": 1, "b": [1, 2]}))
    assert passes(score({"type": "json_equal", "field": "data"}, {"data": {"x": 1}}, expected={"x": 1}))
    assert passes(score({"type": "json_equal", "field": "data"}, '{"data": {"x": 1}}', expected={"x": 1}))
    assert not passes(score(cfg, "not json", expected={"x": 1}))


# ----------------------------------------------------------------------------- numeric


def test_numeric_absolute_and_relative_tolerance() -> None:
    assert passes(score({"type": "numeric"}, 3, expected=3.0))
    assert not passes(score({"type": "numeric"}, 3.0001, expected=3.0))
    assert passes(score({"type": "numeric", "abs_tol": 0.01}, "3.005", expected=3))
    assert not passes(score({"type": "numeric", "abs_tol": 0.01}, 3.02, expected=3))
    assert passes(score({"type": "numeric", "rel_tol": 0.01}, 1009, expected=1000))
    assert not passes(score({"type": "numeric", "rel_tol": 0.01}, 1011, expected=1000))
    assert passes(score({"type": "numeric", "field": "n", "abs_tol": 0.5}, {"n": 9.6}, expected=10))


@pytest.mark.parametrize("output", ["ten", None, "nan", float("nan"), {"n": 1}])
def test_numeric_not_a_number_fails(output: Any) -> None:
    s = score({"type": "numeric", "abs_tol": 1e9}, output, expected=10)
    assert not passes(s) and s.rationale


# ----------------------------------------------------------------------------- json_schema

SCHEMA = {
    "type": "object",
    "required": ["verdict"],
    "properties": {"verdict": {"enum": ["accept", "reject"]}},
}


def test_json_schema_inline() -> None:
    cfg = {"type": "json_schema", "json_schema": SCHEMA}
    assert passes(score(cfg, {"verdict": "accept"}))
    assert passes(score(cfg, '{"verdict": "reject"}'))
    bad = score(cfg, {"verdict": "maybe"})
    assert not passes(bad) and "verdict" in (bad.rationale or "")
    assert not passes(score(cfg, {}))
    assert passes(score({**cfg, "field": "result"}, {"result": {"verdict": "accept"}}))


def test_json_schema_from_a_file_relative_to_the_root(tmp_path: Path) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "v.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    cfg = {"type": "json_schema", "schema_path": "schemas/v.json"}
    assert passes(score(cfg, {"verdict": "accept"}, root=tmp_path))
    assert not passes(score(cfg, {"verdict": 1}, root=tmp_path))


def test_json_schema_needs_exactly_one_schema() -> None:
    with pytest.raises(ValidationError):
        _config({"type": "json_schema"})
    with pytest.raises(ValidationError):
        _config({"type": "json_schema", "json_schema": SCHEMA, "schema_path": "x.json"})


def test_json_schema_invalid_inline_schema_is_a_config_error(project: Path) -> None:
    (project / "evalh.toml").write_text("""
[suites.s]
dataset = "data/smoke.jsonl"
target = "evalh_fixture_target:answer"
scorers = [{ type = "json_schema", json_schema = { type = "nonsense" } }]
""", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(project / "evalh.toml")
    assert "suites.s.scorers[0]" in info.value.message and "\n" not in info.value.message


def test_json_schema_invalid_schema_file_is_refused_when_built(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"type": "nonsense"}', encoding="utf-8")
    with pytest.raises(ValueError, match="bad.json"):
        build_scorer(_config({"type": "json_schema", "schema_path": "bad.json"}), tmp_path)


# ----------------------------------------------------------------------------- literal checks

EVIDENCE = "The board said: “demand stayed resilient” in Q3."


def test_literal_quote_exact_match_passes() -> None:
    cfg = {"type": "literal_quote", "text": "output.quote", "region": "input.evidence"}
    s = score(cfg, {"quote": "demand stayed resilient"}, input={"evidence": EVIDENCE})
    assert (s.passed, s.value, s.verdict, s.abstained) == (True, 1.0, "exact-match", False)


@pytest.mark.parametrize("quote", ["demand was resilient", "Demand stayed resilient",
                                   "demand  stayed resilient"])
def test_literal_quote_without_exact_match_abstains(quote: str) -> None:
    """Matching is byte-exact: a paraphrase or a case change cannot be confirmed."""
    cfg = {"type": "literal_quote", "text": "output.quote", "region": "input.evidence"}
    s = score(cfg, {"quote": quote}, input={"evidence": EVIDENCE})
    assert s.abstained and s.passed is None and s.value is None and s.verdict == "abstain"


def test_literal_quote_with_nothing_to_check_abstains() -> None:
    cfg = {"type": "literal_quote", "text": "output.quote", "region": "input.evidence"}
    assert score(cfg, {"other": 1}, input={"evidence": EVIDENCE}).abstained
    assert score(cfg, {"quote": "x"}, input={"no_evidence": 1}).abstained


def test_literal_absence_present_fails_and_absent_abstains() -> None:
    cfg = {"type": "literal_absence", "text": "expected.banned", "region": "output"}
    present = score(cfg, "we guarantee returns", expected={"banned": "guarantee"})
    assert (present.passed, present.value, present.verdict) == (False, 0.0, "annotated-text-present")
    absent = score(cfg, "returns may vary", expected={"banned": "guarantee"})
    assert absent.abstained and absent.passed is None and absent.verdict == "abstain"


def test_literal_paths_must_be_rooted() -> None:
    with pytest.raises(ValidationError):
        _config({"type": "literal_quote", "text": "answer.quote"})


def test_an_abstention_is_never_a_pass() -> None:
    abstain = Score(scorer="q", abstained=True)
    ok = Score(scorer="e", value=1.0, passed=True)
    assert decide_status([abstain], set())[0] == "failed"
    assert decide_status([], set())[0] == "failed"
    assert decide_status([abstain, ok], set())[0] == "passed"
    assert decide_status([ok, Score(scorer="x", value=0.0, passed=False)], set())[0] == "failed"


def test_a_case_whose_only_scorer_abstains_is_failed(project: Path) -> None:
    from typer.testing import CliRunner

    from evalh.cli.main import app

    (project / "evalh.toml").write_text("""
[suites.s]
dataset = "data/smoke.jsonl"
target = "evalh_fixture_target:answer"
scorers = [{ type = "literal_quote", text = "output.verdict", region = "input.text" }]
""", encoding="utf-8")
    runs = project / "runs"
    result = CliRunner().invoke(app, ["run", "--config", str(project / "evalh.toml"),
                                      "--runs-dir", str(runs), "--json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(next(runs.glob("*.json")).read_bytes())
    cases = doc["suites"]["s"]["cases"]
    assert {c["status"] for c in cases} == {"failed"}
    assert all(c["scores"][0]["abstained"] for c in cases)
    assert doc["suites"]["s"]["aggregate"]["passed"] == 0


# ----------------------------------------------------------------------------- custom


CUSTOM = '''
from evalh.models import Score


def as_bool(case, output):
    return output == case.expected


def as_number(case, output):
    return 0.75


def as_dict(case, output):
    return {"value": 0.2, "passed": False, "rationale": "too short"}


def as_score(case, output):
    return Score(scorer="ignored", value=1.0, passed=True, rationale="fine")


async def async_bool(case, output):
    return output == case.expected


def with_ctx(case, output, ctx):
    return {"value": 1.0, "passed": ctx.suite == "s" and ctx.target_output.output == output}


def wrong_type(case, output):
    return "yes"


class AsyncCallable:
    async def __call__(self, case, output):
        return True


async_object = AsyncCallable()
'''


@pytest.fixture
def custom_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "evalh_custom_scorers.py").write_text(CUSTOM, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "evalh_custom_scorers"


def test_custom_returning_bool_sync_and_async(custom_module: str) -> None:
    for fn in ("as_bool", "async_bool"):
        cfg = {"type": "custom", "function": f"{custom_module}:{fn}"}
        s = score(cfg, "a", expected="a")
        assert (s.passed, s.value, s.scorer) == (True, 1.0, "custom")
        assert not passes(score(cfg, "a", expected="b"))


def test_custom_returning_a_number_uses_the_threshold(custom_module: str) -> None:
    cfg = {"type": "custom", "function": f"{custom_module}:as_number"}
    s = score(cfg, "x")
    assert s.value == 0.75 and s.passed is False  # default threshold 1.0
    assert passes(score({**cfg, "threshold": 0.7}, "x"))


def test_custom_returning_dict_and_score(custom_module: str) -> None:
    d = score({"type": "custom", "function": f"{custom_module}:as_dict", "name": "len"}, "x")
    assert (d.scorer, d.value, d.passed, d.rationale) == ("len", 0.2, False, "too short")
    s = score({"type": "custom", "function": f"{custom_module}:as_score"}, "x")
    assert (s.scorer, s.passed, s.rationale) == ("custom", True, "fine")


def test_custom_receives_the_context_when_it_takes_three_parameters(custom_module: str) -> None:
    assert passes(score({"type": "custom", "function": f"{custom_module}:with_ctx"}, "out"))


def test_custom_async_callable_object(custom_module: str) -> None:
    assert passes(score({"type": "custom", "function": f"{custom_module}:async_object"}, "x"))


def test_custom_returning_something_else_raises(custom_module: str) -> None:
    with pytest.raises(TypeError, match="str"):
        score({"type": "custom", "function": f"{custom_module}:wrong_type"}, "x")
