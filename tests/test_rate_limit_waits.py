"""Waiting for an endpoint's rate limit is not the target's time, and it is bounded.

Against the loopback mock provider through `evalh run`: a 429's `retry-after` pause neither
times out the cases held behind it nor counts in their latency; a `retry-after` beyond
`[evalh] max_retry_wait_s` errors the requests it would hold, at once, saying why.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app
from evalh.mock import MockProvider

TOML = """\
[evalh]
concurrency = {concurrency}
timeout_s = {timeout_s}
{extra}

[suites.qa]
dataset = "qa.jsonl"
scorers = [{{ type = "contains" }}]

[suites.qa.target]
kind = "openai"
model = "gpt-4o-mini"
base_url = "{base_url}"
prompt = "{{{{ input.question }}}}"
backoff_base_s = 0.001
"""


@pytest.fixture
def mp() -> Iterator[MockProvider]:
    with MockProvider([]) as provider:
        yield provider


@pytest.fixture(autouse=True)
def _no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-rate-limits-0123456789")
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))


def project(root: Path, mp: MockProvider, *, cases: int, concurrency: int, timeout_s: float,
            extra: str = "") -> Path:
    cfg = root / "evalh.toml"
    cfg.write_text(TOML.format(concurrency=concurrency, timeout_s=timeout_s, extra=extra,
                               base_url=mp.openai_base_url))
    (root / "qa.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"question": f"question {i}"}, "expected": "ok"}) + "\n"
        for i in range(cases)))
    return cfg


def run(cfg: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    runs = cfg.parent / "runs"
    result = CliRunner().invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "--no-cache", "-q", *args])
    docs = sorted(runs.glob("*.json"))
    assert docs, result.output
    return result, json.loads(docs[-1].read_bytes())


def test_a_retry_after_pause_neither_times_out_nor_slows_the_cases_it_holds(
    tmp_path: Path, mp: MockProvider
) -> None:
    """Before: the first reply is a 429 asking for 4 s; the endpoint pauses, and the cases
    queued behind it (which never got a 429) time out at 3 s."""
    cfg = project(tmp_path, mp, cases=6, concurrency=2, timeout_s=3)
    mp.inject("rate_limit", retry_after=4)
    t0 = time.monotonic()
    result, doc = run(cfg)
    wall = time.monotonic() - t0
    statuses = {c["case_id"]: c["status"] for c in doc["suites"]["qa"]["cases"]}
    assert set(statuses.values()) == {"passed"}, (statuses, [c["error"] for c in doc["suites"]["qa"]["cases"]])
    assert result.exit_code == 0, result.output
    assert wall >= 4  # the pause was honoured
    # the 4 s spent waiting is in no case's latency
    assert max(c["latency_ms"] for c in doc["suites"]["qa"]["cases"]) < 3000
    (limits,) = doc["limits"].values()
    assert limits["rate_limited"] == 1 and limits["max_retry_wait_s"] == 120
    assert mp.count() == 7


def test_a_retry_after_beyond_the_maximum_wait_errors_at_once(tmp_path: Path, mp: MockProvider) -> None:
    """Before: `retry-after: 3600` held the run for an hour (each case until its timeout)."""
    cfg = project(tmp_path, mp, cases=4, concurrency=1, timeout_s=30, extra="max_retry_wait_s = 5")
    mp.inject("rate_limit", retry_after=3600)
    t0 = time.monotonic()
    result, doc = run(cfg)
    assert time.monotonic() - t0 < 15
    cases = doc["suites"]["qa"]["cases"]
    assert [c["status"] for c in cases] == ["errored"] * 4
    for c in cases:
        assert "asked to wait 3600 s, longer than max_retry_wait_s = 5 s" in c["error"]["message"], c["error"]
    assert mp.count() == 1  # the other requests were never sent into the pause
    assert result.exit_code == 1


def test_the_default_maximum_wait_is_documented_and_enforced(tmp_path: Path, mp: MockProvider) -> None:
    cfg = project(tmp_path, mp, cases=1, concurrency=1, timeout_s=30)
    mp.inject("rate_limit", retry_after=121)
    _, doc = run(cfg)
    (case,) = doc["suites"]["qa"]["cases"]
    assert case["status"] == "errored" and "max_retry_wait_s = 120 s" in case["error"]["message"]
    docs = (Path(__file__).resolve().parent.parent / "docs" / "config.md").read_text()
    assert "max_retry_wait_s" in docs


@pytest.mark.parametrize("value", ["0", "-1", '"soon"'])
def test_a_bad_maximum_wait_is_refused_by_validate(tmp_path: Path, mp: MockProvider, value: str) -> None:
    cfg = project(tmp_path, mp, cases=1, concurrency=1, timeout_s=30, extra=f"max_retry_wait_s = {value}")
    result = CliRunner().invoke(app, ["validate", "--config", str(cfg)])
    assert result.exit_code == 2
    assert "evalh.max_retry_wait_s" in result.stderr and result.stderr.strip().count("\n") == 0
