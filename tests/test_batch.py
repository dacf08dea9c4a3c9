"""`batch = true`: model targets and judges through the provider batch APIs, end to end.

Every run here is a real `evalh run` (in-process, or a subprocess that is killed) against
evalh's loopback mock provider in the test process, which speaks the Anthropic Message
Batches API (driven by the anthropic SDK) and the OpenAI Batch API (driven over aiohttp)
and counts the batches created: a batch submitted twice would show."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.mock import MockProvider
from evalh.providers.prices import BATCH_DISCOUNT, DEFAULT_PRICES
from tests.runner_project import evalh_process, load

runner = CliRunner()
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-test-batch-0123456789", "OPENAI_API_KEY": "sk-test-batch-0123456789"}
MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4o-mini"}
JUDGE = "claude-sonnet-4-5"

SCRIPT: list[dict[str, Any]] = [
    {"model": JUDGE, "match": "<output>\nParis", "json": {"verdict": "pass", "rationale": "right"}},
    {"model": JUDGE, "match": "<output>\nok", "fault": "server_error"},  # the judge's request errs
    {"model": JUDGE, "match": "<output>", "json": {"verdict": "fail", "rationale": "wrong"}},
    {"match": "capital of France", "text": "Paris"},
    {"match": "capital of Italy", "text": "Rome"},
    {"match": "boom", "fault": "server_error"},
]
CASES = [
    ("c1", "capital of France", "Paris"),  # passes
    ("c2", "capital of Italy", "Rome"),  # passes
    ("c3", "boom", "x"),  # the provider errs on this request: errored
    ("c4", "capital of Spain", "Madrid"),  # the default reply "ok": fails
]


@pytest.fixture()
def mock() -> Any:
    with MockProvider(SCRIPT) as mp:
        yield mp


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))


def _project(root: Path, provider: str, mp: MockProvider, *, judge: bool = False) -> Path:
    url = mp.base_url if provider == "anthropic" else mp.openai_base_url
    poll = "batch = true, batch_poll_s = 0.02, batch_poll_max_s = 0.1"
    target = (f'{{ kind = "{provider}", model = "{MODELS[provider]}", prompt = "{{{{ input.q }}}}", '
              f'base_url = "{url}", max_tokens = 50, {poll} }}')
    scorers = '{ type = "contains" }'
    if judge:
        scorers = (f'{{ type = "judge", provider = "anthropic", model = "{JUDGE}", base_url = "{mp.base_url}", '
                   f'rubric = "names the capital", max_tokens = 64, {poll} }}')
    (root / "evalh.toml").write_text(
        f'[suites.b]\ndataset = "d.jsonl"\nregime = "stochastic"\ntarget = {target}\nscorers = [{scorers}]\n',
        encoding="utf-8")
    (root / "d.jsonl").write_text("".join(
        json.dumps({"id": cid, "input": {"q": q}, "expected": exp}) + "\n" for cid, q, exp in CASES), encoding="utf-8")
    return root / "evalh.toml"


def _run(cfg: Path, runs: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--seed", "1", *extra])
    docs = [p for p in runs.glob("*.json")]
    assert len(docs) == 1, result.output
    return result.exit_code, load(docs[0])


def _cases(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in doc["suites"]["b"]["cases"]}


def _journal_batches(journal: Path) -> list[dict[str, Any]]:
    return [json.loads(line)["batch"] for line in journal.read_bytes().splitlines() if line.startswith(b'{"batch":')]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_batched_target_submits_one_batch_at_the_batch_price(
    tmp_path: Path, mock: MockProvider, provider: str
) -> None:
    cfg = _project(tmp_path, provider, mock)
    code, doc = _run(cfg, tmp_path / "runs", "--no-cache")
    assert code == 1  # c3 errored: over max_error_rate
    cases = _cases(doc)
    assert {c: r["status"] for c, r in cases.items()} == {
        "c1": "passed", "c2": "passed", "c3": "errored", "c4": "failed"}
    # one batch holding every request; not one request went to the single-request endpoint
    assert mock.batch_creates() == mock.batch_creates(provider) == 1
    (batch,) = mock.batch_requests()
    assert len(batch["custom_ids"]) == 4 and set(batch["models"]) == {MODELS[provider]}
    assert mock.count("/v1/messages") == mock.count("/v1/chat/completions") == 0
    # a per-request error is an errored case naming the batch, never a pass
    error = cases["c3"]["error"]["message"]
    assert f"batch {batch['id']}" in error and "errored" in error and "Internal server error" in error
    price = DEFAULT_PRICES[MODELS[provider]]
    for cid in ("c1", "c2", "c4"):
        r = cases[cid]
        assert r["tokens_in"] and r["tokens_out"]
        listed = (r["tokens_in"] * price.input + r["tokens_out"] * price.output) / 1_000_000
        assert r["cost_usd"] == pytest.approx(listed * BATCH_DISCOUNT)
        assert r["latency_ms"] is None  # the batch's turnaround is not the model's latency
    assert doc["suites"]["b"]["target"]["batch"] is True


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_an_expired_batch_errors_the_requests_it_did_not_process(
    tmp_path: Path, mock: MockProvider, provider: str
) -> None:
    mock.set_batches(expire_after=2)
    cfg = _project(tmp_path, provider, mock)
    _, doc = _run(cfg, tmp_path / "runs", "--no-cache")
    statuses = {c: r["status"] for c, r in _cases(doc).items()}
    (batch,) = mock.batch_requests()
    processed = batch["custom_ids"][:2]
    assert batch["status"] == ("ended" if provider == "anthropic" else "expired")
    expired = [r for r in _cases(doc).values() if "expired before the provider processed it" in (r.get("error") or {}).get("message", "")]
    assert len(expired) == 2 and all(r["status"] == "errored" for r in expired), statuses
    assert sum(s == "errored" for s in statuses.values()) >= 2
    assert len(processed) == 2 and mock.batch_creates() == 1


def _wait(what: Any, proc: Any, timeout: float = 90) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if what():
            return True
        time.sleep(0.005)
    return False


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_killed_while_polling_the_resumed_run_reattaches_to_its_batch(
    tmp_path: Path, mock: MockProvider, provider: str
) -> None:
    mock.set_batches(polls=10**9)  # the batch stays in progress: the run polls it
    cfg = _project(tmp_path, provider, mock)
    runs = tmp_path / "runs"
    proc = evalh_process(["run", "--seed", "1", "-q", "--no-cache", "--runs-dir", str(runs)], tmp_path, KEYS)

    def polled() -> bool:
        found = list(runs.glob("*.journal.jsonl")) if runs.is_dir() else []
        batches = mock.batch_requests()
        return bool(found and _journal_batches(found[0]) and batches and batches[0]["retrieves"] >= 2)

    assert _wait(polled, proc), proc.communicate()[1] if proc.poll() is not None else "not polled"
    proc.kill()
    proc.wait(timeout=10)
    (journal,) = runs.glob("*.journal.jsonl")
    assert not list(runs.glob("*.json")), "SIGKILL leaves no document, only the journal"
    (noted,) = _journal_batches(journal)
    (batch,) = mock.batch_requests()
    assert noted["id"] == batch["id"] and noted["custom_ids"] == batch["custom_ids"]

    mock.set_batches(polls=0)  # the provider finishes the batch
    run_id = journal.name.removesuffix(".journal.jsonl")
    result = runner.invoke(app, ["run", "--config", str(cfg), "--resume", run_id, "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 1, result.output  # c3 errored, as in an uninterrupted run
    doc = load(runs / f"{run_id}.json")
    assert doc["status"] == "complete" and not journal.exists()
    assert {c: r["status"] for c, r in _cases(doc).items()} == {
        "c1": "passed", "c2": "passed", "c3": "errored", "c4": "failed"}
    assert mock.batch_creates() == 1, "the resumed run submitted its batch again"
    assert mock.count("/v1/messages") == mock.count("/v1/chat/completions") == 0


def test_judges_of_a_batched_suite_run_as_a_second_batch(tmp_path: Path, mock: MockProvider) -> None:
    cfg = _project(tmp_path, "anthropic", mock, judge=True)
    code, doc = _run(cfg, tmp_path / "runs", "--no-cache")
    cases = _cases(doc)
    assert {c: r["status"] for c, r in cases.items()} == {
        "c1": "passed", "c2": "failed", "c3": "errored", "c4": "judge_error"}
    assert "errored: api_error" in cases["c4"]["scores"][0]["error"]
    targets, judges = mock.batch_requests()
    assert set(targets["models"]) == {MODELS["anthropic"]} and len(targets["custom_ids"]) == 4
    # the judges judge the three outputs there are, together, after the targets' batch
    assert set(judges["models"]) == {JUDGE} and len(judges["custom_ids"]) == 3
    assert mock.batch_creates() == 2 and mock.count("/v1/messages") == 0
    assert code == 1
    price = DEFAULT_PRICES[JUDGE]
    for cid in ("c1", "c2"):  # what judging cost, at the batch price
        usage = cases[cid]["scores"][0]["details"]["usage"]
        listed = (usage["tokens_in"] * price.input + usage["tokens_out"] * price.output) / 1_000_000
        assert usage["calls"] == 1 and usage["cost_usd"] == pytest.approx(listed * BATCH_DISCOUNT, abs=1e-8)


def test_killed_while_the_judges_batch_polls_resumes_without_resubmitting_either(
    tmp_path: Path, mock: MockProvider
) -> None:
    cfg = _project(tmp_path, "anthropic", mock, judge=True)
    runs = tmp_path / "runs"
    proc = evalh_process(["run", "--seed", "1", "-q", "--no-cache", "--runs-dir", str(runs)], tmp_path, KEYS)

    def targets_ended() -> bool:
        batches = mock.batch_requests()
        return bool(batches) and batches[0]["status"] == "ended"

    assert _wait(targets_ended, proc)
    mock.set_batches(polls=10**9)  # the judges' batch, created next, stays in progress

    def judges_polled() -> bool:
        found = list(runs.glob("*.journal.jsonl")) if runs.is_dir() else []
        batches = mock.batch_requests()
        return bool(found and len(_journal_batches(found[0])) == 2 and len(batches) == 2
                    and batches[1]["retrieves"] >= 1)

    assert _wait(judges_polled, proc)
    proc.kill()
    proc.wait(timeout=10)
    (journal,) = runs.glob("*.journal.jsonl")
    assert [b["id"] for b in _journal_batches(journal)] == [b["id"] for b in mock.batch_requests()]

    mock.set_batches(polls=0)
    run_id = journal.name.removesuffix(".journal.jsonl")
    result = runner.invoke(app, ["run", "--config", str(cfg), "--resume", run_id, "--runs-dir", str(runs), "-q"])
    doc = load(runs / f"{run_id}.json")
    assert doc["status"] == "complete", result.output
    assert {c: r["status"] for c, r in _cases(doc).items()} == {
        "c1": "passed", "c2": "failed", "c3": "errored", "c4": "judge_error"}
    assert mock.batch_creates() == 2, "the resumed run submitted a batch again"
    assert mock.count("/v1/messages") == 0


def test_dry_run_prices_batched_requests_at_the_batch_price_and_shows_the_saving(
    tmp_path: Path, mock: MockProvider
) -> None:
    cfg = _project(tmp_path, "anthropic", mock, judge=True)
    result = runner.invoke(app, ["run", "--config", str(cfg), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    est = json.loads(result.stdout)
    suite = est["suites"][0]
    for part in ("target", "judges"):
        tally = suite[part]
        assert tally["batch_requests"] == tally["requests"] == 4
        assert tally["batch_saving_usd"] == pytest.approx(tally["cost_usd"])  # 50 % off: saving = what is paid
    assert est["total"]["cost_usd"] > 0
    assert est["total"]["batch_saving_usd"] == pytest.approx(est["total"]["cost_usd"])
    text = runner.invoke(app, ["run", "--config", str(cfg), "--dry-run"])
    assert "8 of the requests go through batch APIs at the batch price (50 % of list), saving $" in text.output
    assert mock.batch_creates() == 0 and not mock.requests  # a dry run calls nothing


def test_a_recorded_batch_the_provider_lost_is_submitted_anew(tmp_path: Path, mock: MockProvider) -> None:
    mock.set_batches(polls=10**9)
    cfg = _project(tmp_path, "anthropic", mock)
    runs = tmp_path / "runs"
    proc = evalh_process(["run", "--seed", "1", "-q", "--no-cache", "--runs-dir", str(runs)], tmp_path, KEYS)

    def submitted() -> bool:
        found = list(runs.glob("*.journal.jsonl")) if runs.is_dir() else []
        return bool(found and _journal_batches(found[0]))

    assert _wait(submitted, proc)
    proc.kill()
    proc.wait(timeout=10)
    (journal,) = runs.glob("*.journal.jsonl")
    mock.reset()  # the provider no longer knows the batch (404 when asked)
    mock.set_batches(polls=0)
    run_id = journal.name.removesuffix(".journal.jsonl")
    result = runner.invoke(app, ["run", "--config", str(cfg), "--resume", run_id, "--runs-dir", str(runs), "-q"])
    doc = load(runs / f"{run_id}.json")
    assert doc["status"] == "complete", result.output
    assert {c: r["status"] for c, r in _cases(doc).items()} == {
        "c1": "passed", "c2": "passed", "c3": "errored", "c4": "failed"}
    assert mock.batch_creates() == 1  # the lost batch's requests, once, in a new batch


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_the_example_of_docs_batch_md_runs_as_written(tmp_path: Path) -> None:
    doc = (Path(__file__).parent.parent / "docs" / "batch.md").read_text(encoding="utf-8")
    example = doc[doc.index("## A runnable example"):]
    (tmp_path / "evalh.toml").write_text(_blocks(example, "toml")[0], encoding="utf-8")
    dataset, script = _blocks(example, "json")
    (tmp_path / "capitals.jsonl").write_text(dataset, encoding="utf-8")
    (tmp_path / "batch.script.json").write_text(script, encoding="utf-8")
    commands = [line.split("#")[0].split() for line in _blocks(example, "bash")[0].splitlines()]
    assert commands == [["evalh", "run", "--dry-run"], ["evalh", "run"]]
    dry = runner.invoke(app, ["run", "--config", str(tmp_path / "evalh.toml"), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "3 of the requests go through batch APIs at the batch price (50 % of list), saving $" in dry.output
    code, run = _run(tmp_path / "evalh.toml", tmp_path / "eval_runs")
    assert code == 1
    cases = {r["case_id"]: r for r in run["suites"]["capitals"]["cases"]}
    assert {c: r["status"] for c, r in cases.items()} == {"fr": "passed", "it": "passed", "es": "errored"}
    assert "errored: api_error" in cases["es"]["error"]["message"]
