"""A refusal before the first case (a judge grading its own model, a judge calibration below
its threshold) writes nothing — no `failed` document, no journal — and is one line on stderr
with exit 2, as `evalh run --help` and docs/running.md say (issue 19, item 4). A refusal
after cases ran keeps what ran."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app

TARGET = '''\
def answer(inp):
    return {"text": inp["q"].upper()}
'''
JUDGE = 'provider = "anthropic", model = "judge-1", base_url = "mock:judge.json", max_retries = 0'
SELF_TARGET = '{ kind = "anthropic", model = "judge-1", base_url = "mock:judge.json", prompt = "{{ input.q }}", max_tokens = 20 }'
PASS = {"match": "<output>", "json": {"verdict": "pass", "rationale": "fine"}}


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "response-cache"))


def suite(name: str, scorers: str, target: str = '"tgt:answer"') -> str:
    return (f'[suites.{name}]\ndataset = "d.jsonl"\ntarget = {target}\nregime = "stochastic"\n'
            f'scorers = [{scorers}]\n')


def project(root: Path, *suites: str, rules: list[dict[str, Any]] | None = None) -> Path:
    (root / "evalh.toml").write_text("\n".join(suites), encoding="utf-8")
    (root / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": f"question{i}"}, "expected": {"text": f"QUESTION{i}"}}) + "\n"
        for i in range(1, 3)), encoding="utf-8")
    (root / "cal.jsonl").write_text("".join(json.dumps(
        {"id": f"k{i}", "input": {"q": "capital?", "output": out}, "expected": label}) + "\n"
        for i, (out, label) in enumerate([("Paris", "pass"), ("Lyon", "fail"), ("Nice", "fail")])), encoding="utf-8")
    (root / "tgt.py").write_text(TARGET, encoding="utf-8")
    (root / "judge.json").write_text(json.dumps({"rules": rules or [PASS, {"match": "", "text": "an answer"}]}),
                                     encoding="utf-8")
    return root / "evalh.toml"


def run(cfg: Path, *args: str) -> tuple[Result, list[str]]:
    runs = cfg.parent / "runs"
    result = CliRunner().invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), *args])
    left = sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []
    return result, left


def one_line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


CALIBRATED = f'{{ type = "judge", {JUDGE}, rubric = "r", calibration = {{ dataset = "cal.jsonl", min_accuracy = 0.9 }} }}'


@pytest.mark.parametrize("why", ["self_judge", "calibration"])
def test_a_refusal_before_the_first_case_writes_nothing(tmp_path: Path, why: str) -> None:
    if why == "self_judge":
        cfg = project(tmp_path, suite("s", f'{{ type = "judge", {JUDGE}, rubric = "r" }}', SELF_TARGET))
        expected = "judge model 'judge-1' is the model under test"
    else:
        cfg = project(tmp_path, suite("s", CALIBRATED))
        expected = "is below min_accuracy 0.90"
    result, left = run(cfg)
    assert result.exit_code == 2, result.output
    assert expected in one_line(result)
    assert left == [], left  # no failed document, no journal, no lock
    listed = CliRunner().invoke(app, ["runs", "--runs-dir", str(tmp_path / "runs"), "--json"])
    assert listed.exit_code == 0 and json.loads(listed.stdout) == []


def test_a_self_judge_in_a_later_suite_is_refused_before_any_suite_runs(tmp_path: Path) -> None:
    cfg = project(tmp_path, suite("a_first", '{ type = "exact", field = "text", expected_field = "text" }'),
                  suite("b_self", f'{{ type = "judge", {JUDGE}, rubric = "r" }}', SELF_TARGET))
    result, left = run(cfg)
    assert result.exit_code == 2, result.output
    assert "suite 'b_self'" in one_line(result)
    assert left == [], left


def test_a_refusal_after_cases_ran_keeps_them_as_a_failed_run(tmp_path: Path) -> None:
    """A calibration is only known once it is made, after the suites before it ran: what ran
    is kept, written `failed`, and the exit is still 2."""
    cfg = project(tmp_path, suite("a_first", '{ type = "exact", field = "text", expected_field = "text" }'),
                  suite("b_calibrated", CALIBRATED))
    result, left = run(cfg, "--quiet")
    assert result.exit_code == 2, result.output
    assert "is below min_accuracy 0.90" in one_line(result)
    docs = [n for n in left if n.endswith(".json")]
    assert len(docs) == 1
    doc = json.loads((tmp_path / "runs" / docs[0]).read_bytes())
    assert doc["status"] == "failed" and len(doc["suites"]["a_first"]["cases"]) == 2
