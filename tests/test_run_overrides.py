"""`evalh run --judge-model` and `--sleep-ms`, a target's `pace_ms`, and the model a Python
product reports recorded with the run and checked against its judges. Through the CLI and
the runner, against the loopback mock provider."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app

PRODUCT = '''\
from evalh.targets.base import TargetOutput

def answer(inp):
    return TargetOutput(output={"text": inp["q"]}, model="prod-model-1")

def plain(inp):
    return {"text": inp["q"]}
'''


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "response-cache"))


def project(root: Path, target: str, *, judge_model: str = "judge-1", n: int = 2, extra: str = "") -> Path:
    judge = (f'{{ type = "judge", provider = "anthropic", model = "{judge_model}", base_url = "mock:judge.json", '
             'rubric = "r", max_retries = 0 }')
    (root / "evalh.toml").write_text(
        f'[suites.s]\ndataset = "d.jsonl"\ntarget = {target}\nregime = "stochastic"\nmax_error_rate = 1\n{extra}'
        f'scorers = [{judge}]\n', encoding="utf-8")
    (root / "d.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": {"q": f"q{i}", "prompt": f"q{i}"}}) + "\n"
                                          for i in range(n)), encoding="utf-8")
    (root / "product.py").write_text(PRODUCT, encoding="utf-8")
    (root / "judge.json").write_text(json.dumps({"rules": [{"json": {"verdict": "pass", "rationale": "fine"}}]}),
                                     encoding="utf-8")
    return root / "evalh.toml"


def run(cfg: Path, *args: str) -> tuple[Result, dict[str, Any] | None]:
    runs = cfg.parent / "runs"
    result = CliRunner().invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "--json", *args])
    docs = sorted(runs.glob("*.json")) if runs.is_dir() else []
    return result, (json.loads(docs[-1].read_bytes()) if docs else None)


MODEL_TARGET = '{ kind = "anthropic", model = "subject-1", base_url = "mock:judge.json", prompt = "{{ input.prompt }}" }'


def test_judge_model_judges_is_recorded_and_checked_against_the_subject(tmp_path: Path) -> None:
    cfg = project(tmp_path, MODEL_TARGET)
    result, doc = run(cfg, "--judge-model", "judge-2")
    assert result.exit_code == 0, result.output
    assert doc is not None
    assert doc["config"]["suites"]["s"]["scorers"][0]["judges"][0]["model"] == "judge-2"
    assert {s["judge_model"] for c in doc["suites"]["s"]["cases"] for s in c["scores"]} == {"judge-2"}
    # the subject's own model as the judge: refused before the first case, nothing written
    (tmp_path / "again").mkdir()
    cfg2 = project(tmp_path / "again", MODEL_TARGET)
    result, doc = run(cfg2, "--judge-model", "subject-1")
    assert result.exit_code == 2 and doc is None
    assert "subject-1" in result.stderr


def test_a_python_products_reported_model_is_recorded_and_guarded(tmp_path: Path) -> None:
    cfg = project(tmp_path, '"product:answer"')
    result, doc = run(cfg)
    assert doc is not None, result.output
    assert doc["suites"]["s"]["target"]["model"] == "prod-model-1"
    assert "model" not in doc["config"]["suites"]["s"]["target"]  # not declared, only reported
    # a judge of the product's own (reported) model stops the run at the first reply
    # (issue 29: before the other cases are paid for), exit 2, nothing written
    (tmp_path / "b").mkdir()
    cfg = project(tmp_path / "b", '"product:answer"', judge_model="prod-model-1")
    result, doc = run(cfg)
    assert result.exit_code == 2 and doc is None, result.output
    assert "reported model 'prod-model-1', which is judge model 'prod-model-1'" in result.stderr


def test_a_declared_product_model_is_refused_as_judge_before_the_run(tmp_path: Path) -> None:
    cfg = project(tmp_path, '{ kind = "python", callable = "product:plain", model = "prod-model-1" }',
                  judge_model="prod-model-1")
    result, doc = run(cfg)
    assert result.exit_code == 2 and doc is None, result.output


def _wall_s(doc: dict[str, Any]) -> float:
    def at(stamp: str) -> float:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()

    return at(doc["finished_at"]) - at(doc["started_at"])


def test_pace_ms_spaces_the_calls_and_is_not_latency(tmp_path: Path) -> None:
    cfg = project(tmp_path, '{ kind = "python", callable = "product:plain", pace_ms = 200 }', n=4,
                  extra="concurrency = 4\n")
    result, doc = run(cfg)
    assert doc is not None, result.output
    assert doc["config"]["suites"]["s"]["target"]["pace_ms"] == 200
    cases = doc["suites"]["s"]["cases"]
    # the four calls waited for each other (0, 200, 400, 600 ms), but none of it is latency
    assert max(c["latency_ms"] for c in cases) < 150
    assert _wall_s(doc) >= 0.55 and len(cases) == 4


def test_sleep_ms_paces_every_target_and_is_recorded(tmp_path: Path) -> None:
    cfg = project(tmp_path, MODEL_TARGET, n=3, extra="concurrency = 3\n")
    result, doc = run(cfg, "--sleep-ms", "150")
    assert doc is not None, result.output
    assert doc["config"]["suites"]["s"]["target"]["pace_ms"] == 150
    assert max(c["latency_ms"] for c in doc["suites"]["s"]["cases"]) < 140
    assert _wall_s(doc) >= 0.28


def test_http_targets_are_paced_too(tmp_path: Path) -> None:
    from evalh.mock.mock_provider import MockProvider

    with MockProvider() as mp:
        target = f'{{ kind = "http", url = "{mp.base_url}/v1/product/answer", output_field = "output" }}'
        cfg = project(tmp_path, target, n=3, extra="concurrency = 3\n")
        result, doc = run(cfg, "--sleep-ms", "150")
        assert doc is not None, result.output
        assert mp.count() == 3
    assert doc["config"]["suites"]["s"]["target"]["pace_ms"] == 150
    # two of the three calls waited 150 and 300 ms, none of it latency (the one that did not
    # wait holds the HTTP client's start in its latency, so only two are held to the bound)
    latencies = sorted(c["latency_ms"] for c in doc["suites"]["s"]["cases"])
    assert latencies[1] < 140, latencies
    assert _wall_s(doc) >= 0.28
