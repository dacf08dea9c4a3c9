"""Fail closed: `evalh run` exits 1 when a suite's error rate (errored + judge_error over the
results that ran) exceeds its `max_error_rate`, deterministic or stochastic, and says which
suite and what rate; `--compare-baseline` cannot turn that green."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app
from evalh.core.results.outcome import DEFAULT_MAX_ERROR_RATE, ErrorGate, error_gates
from evalh.core.run.verdict import run_verdict
from evalh.models import Aggregate, DatasetInfo, EnvironmentInfo, Run, SuiteResult

TARGET = '''\
def answer(inp):
    return {"text": inp["q"].upper()}

def crash_first(inp):
    if inp["q"] == "q1":
        raise RuntimeError("the product fell over")
    return {"text": inp["q"].upper()}
'''

GOOD = {"rules": [{"match": "", "text": "the answer is x"}]}
DOWN = {"rules": [{"match": "", "fault": "server_error"}]}
MODEL_TARGET = ('{ kind = "anthropic", model = "claude-haiku-4-5", base_url = "mock:provider.json", '
                'prompt = "{{ input.q }}", max_retries = 0 }')
JUDGE = ('{ type = "judge", provider = "anthropic", model = "judge-1", base_url = "mock:judge.json", '
         'max_retries = 0, rubric = "r", output_field = "text", max_tokens = 16 }')


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "response-cache"))


def project(root: Path, *, target: str = MODEL_TARGET, regime: str = "stochastic",
            scorers: str = '{ type = "contains" }', extra: str = "", n: int = 4,
            provider: dict[str, Any] | None = None) -> Path:
    (root / "evalh.toml").write_text(
        f'[suites.live]\ndataset = "d.jsonl"\ntarget = {target}\nregime = "{regime}"\n{extra}'
        f'scorers = [{scorers}]\n', encoding="utf-8")
    (root / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": f"q{i}"}, "expected": "x"}) + "\n"
        for i in range(1, n + 1)), encoding="utf-8")
    (root / "ftgt.py").write_text(TARGET, encoding="utf-8")
    (root / "provider.json").write_text(json.dumps(provider or DOWN), encoding="utf-8")
    return root / "evalh.toml"


def cli(cfg: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--config", str(cfg), "--runs-dir", str(cfg.parent / "runs")])


def docs(cfg: Path) -> list[dict[str, Any]]:
    runs = cfg.parent / "runs"
    return [json.loads(p.read_bytes()) for p in sorted(runs.glob("*.json"))] if runs.is_dir() else []


# ----------------------------------------------------------------------------- a provider that is down


def test_a_stochastic_suite_whose_provider_is_down_fails_the_run(tmp_path: Path) -> None:
    cfg = project(tmp_path)
    result = cli(cfg, "run")
    assert result.exit_code == 1, result.output
    assert "suite live: 4 of 4 results errored (100 %), over max_error_rate 10 %" in result.stderr
    (doc,) = docs(cfg)
    assert doc["status"] == "complete"
    gate = doc["summary"]["suites"]["live"]["error_gate"]
    assert gate == {"errors": 4, "errored": 4, "judge_error": 0, "of": 4, "rate": 1.0,
                    "max_error_rate": DEFAULT_MAX_ERROR_RATE, "over": True}
    assert doc["summary"]["error_rate_ok"] is False


def test_a_port_with_nothing_listening_fails_the_run_in_json_too(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    cfg = project(tmp_path, target=MODEL_TARGET.replace("mock:provider.json", f"http://127.0.0.1:{port}"), n=3)
    result = cli(cfg, "run", "--json")
    assert result.exit_code == 1, result.output
    assert "suite live: 3 of 3 results errored (100 %), over max_error_rate 10 %" in result.stderr
    out = json.loads(result.stdout)
    assert out["exit_code"] == 1
    assert out["reasons"] == ["suite live: 3 of 3 results errored (100 %), over max_error_rate 10 %"]
    assert out["summary"]["suites"]["live"]["error_gate"]["over"] is True


def test_a_healthy_stochastic_run_still_exits_0(tmp_path: Path) -> None:
    cfg = project(tmp_path, provider=GOOD)
    result = cli(cfg, "run", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["exit_code"] == 0 and out["reasons"] == []
    assert out["summary"]["suites"]["live"]["error_gate"]["rate"] == 0.0
    assert out["summary"]["error_rate_ok"] is True


# ----------------------------------------------------------------------------- a judge that fails every case


def test_a_deterministic_suite_all_judge_error_is_not_deterministic_ok(tmp_path: Path) -> None:
    cfg = project(tmp_path, target='"ftgt:answer"', regime="deterministic", scorers=JUDGE, n=3)
    (tmp_path / "judge.json").write_text(json.dumps(
        {"rules": [{"match": "", "json": {"verdict": "pass", "rationale": "a long enough rationale " * 4},
                    "fault": {"kind": "truncate", "tokens": 2}}]}), encoding="utf-8")
    result = cli(cfg, "run", "--json")
    assert result.exit_code == 1, result.output
    (doc,) = docs(cfg)
    assert {c["status"] for c in doc["suites"]["live"]["cases"]} == {"judge_error"}
    assert doc["summary"]["deterministic_ok"] is False
    line = "suite live: 3 of 3 results errored or judge_error (0 errored, 3 judge_error) (100 %), over max_error_rate 10 %"
    assert line in result.stderr
    assert json.loads(result.stdout)["reasons"] == [line]


# ----------------------------------------------------------------------------- the limit: key, flag, edges


def test_the_limit_comes_from_the_suite_key_and_the_flag_overrides_it(tmp_path: Path) -> None:
    # 1 of 4 errored: 25 %, over the default 10 %
    cfg = project(tmp_path, target='"ftgt:crash_first"', scorers='{ type = "exact", field = "text", expected_field = "text" }')
    (tmp_path / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": f"q{i}"}, "expected": {"text": f"Q{i}"}}) + "\n"
        for i in range(1, 5)), encoding="utf-8")
    result = cli(cfg, "run")
    assert result.exit_code == 1, result.output
    assert "suite live: 1 of 4 results errored (25 %), over max_error_rate 10 %" in result.stderr

    result = cli(cfg, "run", "--max-error-rate", "0.25")  # at the limit is not over it
    assert result.exit_code == 0, result.output
    assert "max_error_rate" not in result.stderr
    assert docs(cfg)[-1]["config"]["run_options"]["max_error_rate"] == 0.25

    text = cfg.read_text().replace('regime = "stochastic"\n', 'regime = "stochastic"\nmax_error_rate = 0.3\n')
    cfg.write_text(text)
    result = cli(cfg, "run", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["summary"]["suites"]["live"]["error_gate"]["max_error_rate"] == 0.3

    result = cli(cfg, "run", "--max-error-rate", "0.2")  # the flag wins over the suite key
    assert result.exit_code == 1, result.output
    assert "suite live: 1 of 4 results errored (25 %), over max_error_rate 20 %" in result.stderr


def test_every_result_errored_is_over_even_a_limit_of_1(tmp_path: Path) -> None:
    cfg = project(tmp_path, extra="max_error_rate = 1.0\n")
    result = cli(cfg, "run")
    assert result.exit_code == 1, result.output
    assert "suite live: 4 of 4 results errored (100 %), over max_error_rate 100 %" in result.stderr


@pytest.mark.parametrize("value", ["1.5", "-0.1", "abc"])
def test_a_bad_flag_value_is_bad_usage(tmp_path: Path, value: str) -> None:
    cfg = project(tmp_path, provider=GOOD)
    result = cli(cfg, "run", "--max-error-rate", value)
    assert result.exit_code == 2, result.output
    assert docs(cfg) == []


def test_a_bad_suite_key_names_the_key(tmp_path: Path) -> None:
    cfg = project(tmp_path, provider=GOOD, extra="max_error_rate = 2\n")
    result = cli(cfg, "run")
    assert result.exit_code == 2, result.output
    assert "suites.live.max_error_rate" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert docs(cfg) == []


def test_resume_keeps_the_recorded_limit(tmp_path: Path) -> None:
    cfg = project(tmp_path, provider=GOOD)
    result = cli(cfg, "run", "--resume", "20261129T201530123Z-3fa9c1", "--max-error-rate", "0.5")
    assert result.exit_code == 2, result.output
    assert "--max-error-rate" in result.stderr


# ----------------------------------------------------------------------------- with --compare-baseline


def test_compare_baseline_cannot_turn_a_broken_run_green(tmp_path: Path) -> None:
    cfg = project(tmp_path, provider=GOOD)
    good = cli(cfg, "run", "--json")
    assert good.exit_code == 0, good.output
    assert cli(cfg, "baseline", "set", json.loads(good.stdout)["run_id"]).exit_code == 0
    (tmp_path / "provider.json").write_text(json.dumps(DOWN), encoding="utf-8")
    result = cli(cfg, "run", "--compare-baseline", "--json")
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    assert "comparison" in out
    assert "suite live: 4 of 4 results errored (100 %), over max_error_rate 10 %" in out["reasons"]
    assert "suite live: 4 of 4 results errored (100 %), over max_error_rate 10 %" in result.stderr


# ----------------------------------------------------------------------------- the pure decision


def _run(regime: str, config: dict[str, Any] | None = None, status: str = "complete", **counts: int) -> Run:
    agg = Aggregate(n=sum(counts.values()), **counts)
    suite = SuiteResult(regime=regime, dataset=DatasetInfo(path="d.jsonl", sha256="0" * 64, cases=agg.n),  # type: ignore[arg-type]
                        aggregate=agg)
    return Run(run_id="r", status=status, started_at="2026-01-01T00:00:00Z", config=config or {},  # type: ignore[arg-type]
               environment=EnvironmentInfo(evalh="0", python="3", platform="p"), suites={"s": suite})


def test_error_gate_counts_judge_errors_and_leaves_skipped_out() -> None:
    (g,) = error_gates(_run("stochastic", passed=18, errored=1, judge_error=1, skipped=5))
    assert (g.errors, g.of, g.rate, g.over) == (2, 20, 0.1, False)  # at the limit is not over it
    (g,) = error_gates(_run("stochastic", passed=17, errored=2, judge_error=1))
    assert (g.errors, g.of, g.over) == (3, 20, True)


def test_error_gate_limits_flag_over_suite_over_default() -> None:
    def limit(config: dict[str, Any]) -> float:
        return error_gates(_run("stochastic", config, passed=1))[0].max_error_rate
    assert limit({}) == DEFAULT_MAX_ERROR_RATE
    assert limit({"suites": {"s": {"max_error_rate": 0.4}}}) == 0.4
    assert limit({"suites": {"s": {"max_error_rate": 0.4}}, "run_options": {"max_error_rate": 0.0}}) == 0.0


def test_nothing_measured_is_over_and_nothing_run_is_not_rated() -> None:
    assert ErrorGate("s", errored=0, judge_error=0, of=0, results=2, max_error_rate=0.1).over
    assert error_gates(_run("stochastic")) == []  # a suite with no result (a partial run) is not rated here


def test_run_verdict_codes() -> None:
    assert run_verdict(_run("deterministic", passed=3)).code == 0
    assert run_verdict(_run("deterministic", passed=2, failed=1)).code == 1
    assert run_verdict(_run("stochastic", passed=2, failed=1)).code == 0  # failures gate only deterministic suites
    v = run_verdict(_run("stochastic", errored=3))
    assert v.code == 1 and v.reasons == ["suite s: 3 of 3 results errored (100 %), over max_error_rate 10 %"]
    assert run_verdict(_run("stochastic", {"run_options": {"max_error_rate": 0}}, passed=99, judge_error=1)).code == 1
    partial = run_verdict(_run("stochastic", status="partial", passed=1))
    assert partial.code == 1 and "partial" in partial.reasons[0]
