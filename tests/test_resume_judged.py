"""`evalh run --resume` of suites scored by model-backed scorers (a judge, a calibrated
judge, a pairwise judge with its order swap, a citation judge with an external score),
against evalh's loopback mock provider running in the test process, so every request the
run and its resume send is counted: a resumed run pays for nothing twice and writes the
document an uninterrupted run writes."""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.mock import MockProvider
from tests.runner_project import evalh_process, journal_results, load

runner = CliRunner()
KEY = "sk-ant-test-resume-0123456789"

TARGET = '''\
import os
import time


def answer(inp):
    time.sleep(float(os.environ.get("SLOW_S", "0")))
    return {"text": "answer to " + inp["q"]}


def brief(inp):
    return {"text": "brief answer to " + inp["q"]}


def detailed(inp):
    time.sleep(float(os.environ.get("SLOW_S", "0")))
    return {"text": "detailed answer to " + inp["q"]}


def cited(inp):
    time.sleep(float(os.environ.get("SLOW_S", "0")))
    return {"text": "Intro.\\n\\nThe sky over " + inp["q"] + " is blue [1].\\n\\nGrass on " + inp["q"] + " is green [2]."}
'''


def _judge(url: str, model: str = "judge-1") -> str:
    return f'provider = "anthropic", model = "{model}", base_url = "{url}", max_retries = 1, backoff_base_s = 0.01, max_tokens = 64'


SCRIPT: list[dict[str, Any]] = [
    # pairwise: the judge prefers the detailed answer wherever it stands, except on q3, where
    # it prefers whatever it sees first (position bias)
    {"model": "pair-1", "match": "<response_a>\nbrief answer to q3", "json": {"winner": "A", "rationale": "first"}},
    {"model": "pair-1", "match": "<response_a>\ndetailed answer to q3", "json": {"winner": "A", "rationale": "first"}},
    {"model": "pair-1", "match": "<response_a>\ndetailed", "json": {"winner": "A", "rationale": "detailed"}},
    {"model": "pair-1", "match": "<response_b>\ndetailed", "json": {"winner": "B", "rationale": "detailed"}},
    # citations: the paragraphs about q1x cite the wrong source
    {"model": "cite-1", "match": "regex:(?s)<paragraph>\nGrass on q1\\d is green",
     "json": {"verdict": "unsupported", "rationale": "no"}},
    {"model": "cite-1", "match": "<paragraph>", "json": {"verdict": "supported", "rationale": "the source says so"}},
    # pointwise: answers to q2, q12, q22 … fail
    {"match": "regex:answer to q\\d*2\\b", "json": {"verdict": "fail", "rationale": "wrong"}},
    {"match": "<output>", "json": {"verdict": "pass", "rationale": "fine"}},
    {"endpoint": "score", "match": "sky", "score": 0.9},
    {"endpoint": "score", "score": 0.4},
]


def _project(root: Path, kind: str, url: str, *, n: int, concurrency: int = 2) -> Path:
    """A project of one suite `s` of `n` cases, scored as `kind` says, judged at `url`."""
    target, extra = '"tgt:answer"', ""
    if kind == "judge":
        scorers = f'{{ type = "judge", {_judge(url)}, rubric = "answers the question", output_field = "text" }}'
    elif kind == "calibrated":
        (root / "cal.jsonl").write_text("".join(
            json.dumps({"id": f"k{i}", "input": {"q": f"q{i}", "output": {"text": f"answer to q{i}"}},
                        "expected": "fail" if i == 2 else "pass"}) + "\n" for i in range(1, 5)), encoding="utf-8")
        cal = 'calibration = { dataset = "cal.jsonl", min_accuracy = 0.75 }'
        scorers = (f'{{ type = "judge", name = "cal", {_judge(url)}, rubric = "answers the question", '
                   f'output_field = "text", {cal} }}')
    elif kind == "pairwise":
        extra = ('arms = [{ name = "brief", target = "tgt:brief" }, { name = "detailed", target = "tgt:detailed" }]\n'
                 'baseline_arm = "brief"\n')
        scorers = (f'{{ type = "judge", {_judge(url)}, rubric = "answers the question", output_field = "text" }},\n'
                   f'{{ type = "pairwise_judge", name = "ab", {_judge(url, "pair-1")}, rubric = "more helpful", output_field = "text" }}')
    elif kind == "citations":
        target = '"tgt:cited"'
        scorers = (f'{{ type = "citation_judge", {_judge(url, "cite-1")}, answer_field = "text" }},\n'
                   f'{{ type = "external_score", name = "grounding", url = "{url}/v1/score", model = "rr", '
                   'claim_field = "text", mode = "paragraphs", retries = 0 }')
    else:  # pragma: no cover
        raise AssertionError(kind)
    (root / "evalh.toml").write_text(
        f'[evalh]\nconcurrency = {concurrency}\n\n[suites.s]\ndataset = "d.jsonl"\ntarget = {target}\n'
        f'regime = "stochastic"\n{extra}scorers = [\n{scorers}\n]\n', encoding="utf-8")
    sources = {"1": "The sky is blue.", "2": "Grass is green."}
    (root / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i:02d}", "input": {"q": f"q{i}", "sources": sources}, "expected": {"text": "x"}}) + "\n"
        for i in range(n)), encoding="utf-8")
    (root / "tgt.py").write_text(TARGET, encoding="utf-8")
    return root / "evalh.toml"


def _sent(mp: MockProvider) -> collections.Counter[str]:
    """Each distinct request the mock received (its path and body), with how often."""
    return collections.Counter(json.dumps([r.path, r.body], sort_keys=True) for r in mp.requests)


def _strip(value: Any) -> Any:
    """A JSON value without what legitimately differs between two runs of one experiment:
    timings, call usage (a resumed run is served some replies from the cache), ids."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items()
                if k not in ("usage", "latency_ms", "started_at", "cached", "cost_usd", "tokens_in", "tokens_out")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _essence(doc: dict[str, Any]) -> dict[str, Any]:
    suite = doc["suites"]["s"]
    return {
        "status": doc["status"],
        "cases": _strip(suite["cases"]),
        "details": _strip(suite["details"]),
        "aggregate": {k: suite["aggregate"][k] for k in ("n", "passed", "failed", "errored", "pass_rate")},
    }


def _reference(cfg: Path, tmp_path: Path, mp: MockProvider, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The same experiment run once, uninterrupted, with a cold cache."""
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "ref-cache"))
    monkeypatch.setenv("SLOW_S", "0")
    runs = tmp_path / "ref-runs"
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--seed", "3"])
    assert result.exit_code in (0, 1), result.output
    (path,) = runs.glob("*.json")
    return load(path)


@pytest.fixture
def mock() -> Any:
    with MockProvider(SCRIPT) as mp:
        yield mp


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))


def test_budget_stopped_judged_run_resumes(tmp_path: Path, mock: MockProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's reproduction: a judge, a small token budget, no cache; the resume with a
    larger budget finishes the run (it used to refuse: the judge's rubric digest, filled in
    when the scorer is built, was compared with a config snapshot taken before)."""
    cfg = _project(tmp_path, "judge", mock.base_url, n=8, concurrency=1)
    runs = tmp_path / "runs"
    base = ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q"]
    result = runner.invoke(app, [*base, "--seed", "3", "--max-tokens", "600", "--no-cache"])
    (path,) = runs.glob("*.json")
    doc = load(path)
    assert doc["status"] == "partial", result.output
    done = len(doc["suites"]["s"]["cases"])
    assert 0 < done < 8
    assert mock.count() == done

    result = runner.invoke(app, [*base, "--resume", doc["run_id"], "--max-tokens", "1000000"])
    assert result.exit_code == 0, result.output
    doc = load(path)
    assert doc["status"] == "complete" and len(doc["suites"]["s"]["cases"]) == 8
    assert mock.count() == 8 and set(_sent(mock).values()) == {1}, "a judged case was judged twice"
    assert doc["config"]["run_options"]["max_tokens"] == 1000000

    sent = mock.count()
    assert _essence(doc) == _essence(_reference(cfg, tmp_path, mock, monkeypatch))
    assert mock.count() == sent + 8


@pytest.mark.parametrize("kind", ["calibrated", "pairwise", "citations"])
def test_budget_stopped_run_of_each_judge_resumes(
    tmp_path: Path, mock: MockProvider, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    cfg = _project(tmp_path, kind, mock.base_url, n=6, concurrency=1)
    runs = tmp_path / "runs"
    base = ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q"]
    budget = {"calibrated": "1000", "pairwise": "600", "citations": "600"}[kind]  # stops mid-suite
    # no cache: the resume cannot be served what the run was answered; it must not ask again
    runner.invoke(app, [*base, "--seed", "3", "--max-tokens", budget, "--no-cache"])
    (path,) = runs.glob("*.json")
    doc = load(path)
    assert doc["status"] == "partial"
    assert 0 < len(doc["suites"]["s"]["cases"]) < (12 if kind == "pairwise" else 6)
    result = runner.invoke(app, [*base, "--resume", doc["run_id"], "--max-tokens", "1000000"])
    assert result.exit_code == 0, result.output
    doc = load(path)
    assert doc["status"] == "complete"
    assert set(_sent(mock).values()) == {1}, "a request was sent twice"
    assert _essence(doc) == _essence(_reference(cfg, tmp_path, mock, monkeypatch))


def _wait_for_journal(runs: Path, proc: Any, at_least: int, also: Callable[[], bool] = lambda: True) -> Path | None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(runs.glob("*.journal.jsonl")) if runs.is_dir() else []
        if found and len(journal_results(found[0])) >= at_least and also():
            return found[0]
        time.sleep(0.005)
    return None


# ("pairwise" suites are also scored by a plain judge: the pointwise judge is covered there)
@pytest.mark.parametrize("kind", ["calibrated", "pairwise", "pairwise-after-the-suite", "citations"])
def test_killed_judged_run_resumes_paying_nothing_twice(
    tmp_path: Path, mock: MockProvider, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    n, concurrency = 16, 2
    cfg = _project(tmp_path, kind.removesuffix("-after-the-suite"), mock.base_url, n=n, concurrency=concurrency)
    runs = tmp_path / "runs"
    env = {"ANTHROPIC_API_KEY": KEY, "EVALH_CACHE_DIR": str(tmp_path / "cache"), "SLOW_S": "0.04"}
    total = n * (2 if kind.startswith("pairwise") else 1)
    at_least, also = 4, lambda: True
    if kind == "pairwise-after-the-suite":
        # killed while the pairs are judged, after every case finished: slow pair replies,
        # and the kill once some of them were answered
        mock.set_script([{**r, "latency_ms": 100} if r.get("model") == "pair-1" else r for r in SCRIPT])
        at_least = total
        also = lambda: sum(r.body.get("model") == "pair-1" for r in mock.requests) >= 12  # noqa: E731
    # the calibrated judge runs without the cache: its calibration is kept, not served again
    no_cache = ["--no-cache"] if kind == "calibrated" else []
    proc = evalh_process(["run", "--seed", "3", "-q", "--runs-dir", str(runs), *no_cache], tmp_path, env)
    journal = _wait_for_journal(runs, proc, at_least, also)
    proc.kill()
    proc.wait(timeout=10)
    assert journal is not None, "the run ended before it could be killed"
    assert not list(runs.glob("*.json")), "SIGKILL leaves no document, only the journal"
    kept = len(journal_results(journal))
    assert 4 <= kept <= total
    run_id = journal.name.removesuffix(".journal.jsonl")

    monkeypatch.setenv("SLOW_S", "0")  # the resume, in this process: its imports are warm
    result = runner.invoke(app, ["run", "--config", str(cfg), "--resume", run_id, "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 0, result.output
    doc = load(runs / f"{run_id}.json")
    assert doc["status"] == "complete" and not journal.exists()

    sent = _sent(mock)
    twice = {k: v for k, v in sent.items() if v > 1}
    # only what was in flight at the kill (at most `concurrency` cases) can have been sent
    # again; everything the killed run had an answer to is served from the journal or cache
    assert sum(v - 1 for v in twice.values()) <= concurrency * 2, twice
    if kind == "calibrated":  # the calibration items (their task has no sources) were judged once
        calibration = {k: v for k, v in sent.items() if "sources" not in k}
        assert len(calibration) == 4 and set(calibration.values()) == {1}, calibration
    mock.reset()
    assert _essence(doc) == _essence(_reference(cfg, tmp_path, mock, monkeypatch))
    assert _sent(mock).keys() == sent.keys(), "the resumed run sent other requests than a fresh one"


def test_pairs_judged_before_a_kill_in_a_later_suite_are_not_judged_again(
    tmp_path: Path, mock: MockProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pairwise suite finished (its pairs judged after its cases), then the run is killed in
    the next suite. Without the cache, the resume must not judge those pairs again: what the
    pairwise judge wrote into the results is journaled when it is done."""
    cfg = _project(tmp_path, "pairwise", mock.base_url, n=6)
    slow = (f'\n[suites.t]\ndataset = "d.jsonl"\ntarget = "tgt:answer"\nregime = "stochastic"\ntier = 9\n'
            f'scorers = [{{ type = "judge", {_judge(mock.base_url)}, rubric = "answers", output_field = "text" }}]\n')
    cfg.write_text(cfg.read_text().replace('[suites.s]\n', '[suites.s]\ntier = 0\n') + slow)
    runs = tmp_path / "runs"
    env = {"ANTHROPIC_API_KEY": KEY, "EVALH_CACHE_DIR": str(tmp_path / "cache"), "SLOW_S": "0.1"}

    def suite_t_started() -> bool:
        found = list(runs.glob("*.journal.jsonl"))
        return bool(found) and sum(b'"suite":"t","result"' in line for line in found[0].read_bytes().splitlines()) >= 2

    proc = evalh_process(["run", "--seed", "3", "-q", "--no-cache", "--runs-dir", str(runs)], tmp_path, env)
    journal = _wait_for_journal(runs, proc, 12, suite_t_started)
    proc.kill()
    proc.wait(timeout=10)
    assert journal is not None, "the run ended before it could be killed"
    assert sum(1 for r in mock.requests if r.body.get("model") == "pair-1") == 12

    monkeypatch.setenv("SLOW_S", "0")
    result = runner.invoke(app, ["run", "--config", str(cfg), "--resume", journal.name.removesuffix(".journal.jsonl"),
                                 "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 0, result.output
    assert sum(1 for r in mock.requests if r.body.get("model") == "pair-1") == 12, "pairs judged again"
    (doc,) = runs.glob("*.json")
    details = load(doc)["suites"]["s"]["details"]["ab"]
    assert details["pairs_judged"] == 6 and details["consistency_under_order_swap"] is not None
