"""Judge calibration is estimated, counted and charged like every other request.

Through `evalh run` against the loopback mock provider (a real HTTP server; requests are
counted where they arrive): `--dry-run` counts the calibration requests, `--max-tokens`
admits them against the budget before they are sent, and the run records what they used.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app
from evalh.mock import MockProvider

KEY = "EVALH_TEST_JUDGE_KEY"
CAL_ITEMS = 10


@pytest.fixture
def mp() -> Iterator[MockProvider]:
    with MockProvider([{"match": "<output>", "json": {"verdict": "pass", "rationale": "fine"}}]) as provider:
        yield provider


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY, "sk-judge-0123456789abcdef")
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))


def project(root: Path, mp: MockProvider, *, max_tokens: int = 200) -> Path:
    judge = (f'provider = "anthropic", model = "claude-haiku-4-5", base_url = "{mp.base_url}", '
             f'api_key_env = "{KEY}", max_tokens = {max_tokens}')
    cal = 'calibration = { dataset = "cal.jsonl", min_accuracy = 0.5 }'
    (root / "evalh.toml").write_text(
        '[suites.s]\ndataset = "d.jsonl"\ntarget = "tgt:answer"\nregime = "stochastic"\n'
        f'scorers = [{{ type = "judge", {judge}, rubric = "Is it right?", {cal} }}]\n', encoding="utf-8")
    (root / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": f"question {i}"}}) + "\n" for i in range(3)), encoding="utf-8")
    (root / "cal.jsonl").write_text("".join(
        json.dumps({"id": f"k{i}", "input": {"q": f"capital {i}?", "output": "Paris " * 40}, "expected": "pass"}) + "\n"
        for i in range(CAL_ITEMS)), encoding="utf-8")
    (root / "tgt.py").write_text("def answer(inp):\n    return inp['q'].upper()\n", encoding="utf-8")
    return root / "evalh.toml"


def run(cfg: Path, *args: str) -> tuple[Result, dict[str, Any] | None]:
    runs = cfg.parent / "runs"
    result = CliRunner().invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "--no-cache", *args])
    docs = sorted(runs.glob("*.json")) if runs.is_dir() else []
    return result, (json.loads(docs[-1].read_bytes()) if docs else None)


def test_dry_run_counts_the_calibration_requests(tmp_path: Path, mp: MockProvider) -> None:
    cfg = project(tmp_path, mp)
    result, _ = run(cfg, "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    (suite,) = json.loads(result.stdout)["suites"]
    assert suite["setup"]["requests"] == CAL_ITEMS
    assert suite["setup"]["tokens_out_max"] == CAL_ITEMS * 200
    assert suite["setup"]["tokens_in"] > CAL_ITEMS * 40  # the output to judge is known: counted
    assert suite["total"]["requests"] == 3 + 3 + CAL_ITEMS  # target calls + judge calls + calibration
    assert mp.count() == 0
    table, _ = run(cfg, "--dry-run")
    assert f"{CAL_ITEMS} of the requests are judge calibration" in table.stdout


def test_calibration_is_admitted_against_the_token_budget(tmp_path: Path, mp: MockProvider) -> None:
    """Before: `--max-tokens` did not stop calibration; every item was sent (here 10
    requests of up to ~300 tokens each against a budget of 700) before the first case."""
    cfg = project(tmp_path, mp)
    result, doc = run(cfg, "--max-tokens", "700")
    assert doc is not None, result.output
    assert doc["status"] == "partial", doc["status_reason"]
    assert "token budget" in doc["status_reason"] and "judge calibration" in doc["status_reason"]
    assert doc["suites"]["s"]["cases"] == []  # no case started
    calibration = doc["suites"]["s"]["details"]["judge"]["calibration"]
    sent = mp.count()
    assert 0 < sent < CAL_ITEMS and calibration["judged"] == sent
    usage = calibration["usage"]
    assert usage["calls"] == sent and 0 < usage["tokens_in"] + usage["tokens_out"] <= 700


def test_calibration_usage_is_recorded(tmp_path: Path, mp: MockProvider) -> None:
    cfg = project(tmp_path, mp)
    result, doc = run(cfg)
    assert doc is not None and doc["status"] == "complete", result.output
    usage = doc["suites"]["s"]["details"]["judge"]["calibration"]["usage"]
    assert usage["calls"] == CAL_ITEMS and usage["tokens_in"] > 0 and usage["cost_usd"] > 0
    assert mp.count() == CAL_ITEMS + 3


def test_a_cost_budget_refuses_an_unpriced_calibration_before_sending(tmp_path: Path, mp: MockProvider) -> None:
    cfg = project(tmp_path, mp)
    cfg.write_text(cfg.read_text().replace("claude-haiku-4-5", "house-judge-1"))
    result, doc = run(cfg, "--max-cost", "1")
    assert doc is not None, result.output
    assert doc["status"] == "partial" and "no known price" in doc["status_reason"]
    assert mp.count() == 0


def test_dry_run_counts_pairwise_judge_requests(tmp_path: Path, mp: MockProvider) -> None:
    """Before: the pairwise judge's requests (made after the suite) were `+ ?`, unknown."""
    judge = (f'provider = "anthropic", model = "claude-haiku-4-5", base_url = "{mp.base_url}", '
             f'api_key_env = "{KEY}", max_tokens = 100')
    (tmp_path / "evalh.toml").write_text(
        '[suites.s]\ndataset = "d.jsonl"\ntarget = "tgt:answer"\nregime = "stochastic"\nrepeats = 2\n'
        'arms = [{ name = "a", target = "tgt:answer" }, { name = "b", target = "tgt:answer" }, '
        '{ name = "c", target = "tgt:answer" }]\n'
        f'scorers = [{{ type = "judge", {judge}, rubric = "Right?" }}, '
        f'{{ type = "pairwise_judge", {judge}, rubric = "Which is better?" }}]\n', encoding="utf-8")
    (tmp_path / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": f"question {i}"}}) + "\n" for i in range(3)), encoding="utf-8")
    (tmp_path / "tgt.py").write_text("def answer(inp):\n    return inp['q']\n", encoding="utf-8")
    result, _ = run(tmp_path / "evalh.toml", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    (suite,) = json.loads(result.stdout)["suites"]
    items = 3 * 3 * 2
    pairs = 3 * 2 * 2  # cases × the two arms that are not the baseline × repeats
    assert suite["judges"]["requests_unknown"] == 0
    assert suite["judges"]["requests"] == items + 2 * pairs  # pointwise, then both orders of each pair
    assert suite["judges"]["tokens_out_max"] == (items + 2 * pairs) * 100


def test_pairwise_judging_after_the_suite_is_admitted_against_the_budget(tmp_path: Path) -> None:
    """Before: the pairs, judged after the suite's cases, were sent whatever the budget."""
    with MockProvider([{"match": "<response_a>", "json": {"winner": "tie", "rationale": "same"}}]) as mp:
        _pairwise_budget(tmp_path, mp)


def _pairwise_budget(tmp_path: Path, mp: MockProvider) -> None:
    judge = (f'provider = "anthropic", model = "claude-haiku-4-5", base_url = "{mp.base_url}", '
             f'api_key_env = "{KEY}", max_tokens = 200')
    (tmp_path / "evalh.toml").write_text(
        '[suites.s]\ndataset = "d.jsonl"\ntarget = "tgt:answer"\nregime = "stochastic"\n'
        'arms = [{ name = "a", target = "tgt:answer" }, { name = "b", target = "tgt:answer" }]\n'
        'scorers = [{ type = "exact" }, '
        f'{{ type = "pairwise_judge", {judge}, rubric = "Which is better?" }}]\n', encoding="utf-8")
    (tmp_path / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": f"question {i}"}, "expected": f"question {i}"}) + "\n"
        for i in range(3)), encoding="utf-8")
    (tmp_path / "tgt.py").write_text("def answer(inp):\n    return inp['q']\n", encoding="utf-8")
    cfg = tmp_path / "evalh.toml"
    result, doc = run(cfg, "--max-tokens", "1000")
    assert doc is not None, result.output
    assert doc["status"] == "partial" and "pairwise judging" in doc["status_reason"], doc["status_reason"]
    assert len(doc["suites"]["s"]["cases"]) == 6  # every case ran: only the pairs were held back
    # the three pairs hold ~850 tokens each (both orders, max_tokens each): they do not fit
    # in the 1,000 together and none is sent (a pair judged now would be paid again by
    # the resume, which sees only the journal)
    assert mp.count() == 0

    def verdicts(d: dict[str, Any]) -> list[str]:
        return [next(s for s in c["scores"] if s["scorer"] == "pairwise_judge")["verdict"]
                for c in d["suites"]["s"]["cases"] if c["arm"] == "b"]

    assert verdicts(doc) == ["pending"] * 3
    resumed = CliRunner().invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(tmp_path / "runs"),
                                       "--no-cache", "--resume", doc["run_id"], "--max-tokens", "100000"])
    assert resumed.exit_code == 0, resumed.output
    final = json.loads((tmp_path / "runs" / f"{doc['run_id']}.json").read_bytes())
    assert final["status"] == "complete" and verdicts(final) == ["tie"] * 3
    assert mp.count() == 6  # each pair judged once, in both orders
