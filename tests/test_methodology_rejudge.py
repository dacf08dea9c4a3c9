"""The bias-aware preset holds on `evalh rejudge` too: a rejudge writes a new run judged by
today's judges, so the judge requirements (no --allow-self-judge, blind, calibrated,
distinct) are checked before any judge call, one line and exit 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from tests.test_methodology_preset import (
    CALIBRATED,
    FULL,
    GOOD_JUDGE,
    JUDGE,
    _judges,
    _one_line,
    _project,
)

runner = CliRunner()


def _first_run(tmp: Path) -> tuple[Path, Path, str]:
    cfg = _project(tmp, top='methodology = "bias-aware"', judge=GOOD_JUDGE)
    runs = tmp / "runs"
    result = runner.invoke(app, ["run", "--config", str(cfg), "-q", "--runs-dir", str(runs), *FULL])
    assert result.exit_code == 0, result.output
    (doc,) = runs.glob("*.json")
    return cfg, runs, json.loads(doc.read_text())["run_id"]


@pytest.mark.parametrize(("judge", "args", "says"), [
    (GOOD_JUDGE, ["--allow-self-judge"], "--allow-self-judge is refused (methodology 'bias-aware'"),
    (JUDGE.format(extra=CALIBRATED, judges=_judges(*["claude-sonnet-4-5"] * 3)), [],
     "requires distinct judge models: judge 'stance' names 'claude-sonnet-4-5' more than once"),
    (JUDGE.format(extra="", judges=_judges("claude-sonnet-4-0")), [],
     "requires calibration first: judge 'stance' has no `calibration` dataset"),
])
def test_a_rejudge_under_the_preset_is_refused_like_a_run(tmp_path: Path, judge: str, args: list[str],
                                                          says: str) -> None:
    cfg, runs, run_id = _first_run(tmp_path)
    _project(tmp_path, top='methodology = "bias-aware"', judge=judge)  # today's judges
    result = runner.invoke(app, ["rejudge", run_id, "--all", "--config", str(cfg), "--runs-dir", str(runs),
                                 "-q", *args])
    assert result.exit_code == 2, result.output
    assert says in _one_line(result)
    assert len(list(runs.glob("*.json"))) == 1  # nothing written


def test_a_rejudge_that_meets_the_preset_runs(tmp_path: Path) -> None:
    cfg, runs, run_id = _first_run(tmp_path)
    result = runner.invoke(app, ["rejudge", run_id, "--all", "--config", str(cfg), "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 0, result.output
    assert len(list(runs.glob("*.json"))) == 2


def test_a_rejudge_by_the_subject_model_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """With or without the preset, as `evalh run` refuses it: exit 2, one line, no run
    document and no journal (the refusal came after carried results were kept, so a
    failed document and its journal were left behind)."""
    (tmp_path / "script.json").write_text(json.dumps({"rules": [], "default": {"json": {"verdict": "pass", "rationale": "ok"}}}))
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": {"q": f"q{i}"}}) + "\n"
                                                  for i in range(3)), encoding="utf-8")
    model = 'provider = "anthropic", base_url = "mock:script.json"'
    cfg = tmp_path / "evalh.toml"
    cfg.write_text(f"""\
[suites.s]
dataset = "cases.jsonl"
target = {{ kind = "anthropic", model = "claude-opus-4-1", base_url = "mock:script.json", prompt = "{{{{ input.q }}}}" }}
scorers = [{{ type = "judge", model = "claude-sonnet-4-0", {model}, rubric = "ok?" }}]

[suites.t]
dataset = "cases.jsonl"
target = {{ kind = "anthropic", model = "claude-opus-4-1", base_url = "mock:script.json", prompt = "{{{{ input.q }}}}" }}
scorers = [{{ type = "judge", model = "claude-sonnet-4-0", {model}, rubric = "ok?" }}]
""", encoding="utf-8")
    runs = tmp_path / "runs"
    first = runner.invoke(app, ["run", "--config", str(cfg), "-q", "--runs-dir", str(runs)])
    assert first.exit_code == 0, first.output
    before = sorted(p.name for p in runs.iterdir())
    result = runner.invoke(app, ["rejudge", before[0].removesuffix(".json"), "--all", "--suite", "s",
                                 "--judge-model", "claude-opus-4-1", "--config", str(cfg), "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 2, result.output
    assert "judge model 'claude-opus-4-1' is the model under test" in _one_line(result)
    assert sorted(p.name for p in runs.iterdir()) == before


def test_a_rejudge_calibrates_the_judge_that_judges_again(tmp_path: Path) -> None:
    """The stored run's calibration (of the judges it had) was carried into the rejudged run
    and shown as the new judge's: a judge never calibrated read `accuracy 100% (2/2)`."""
    cfg, runs, run_id = _first_run(tmp_path)
    result = runner.invoke(app, ["rejudge", run_id, "--all", "--judge-model", "gpt-4.1", "--config", str(cfg),
                                 "--runs-dir", str(runs), "-q", "--label", "judge=gpt"])
    assert result.exit_code == 0, result.output
    (new,) = [p for p in runs.glob("*.json") if p.stem != run_id and not p.name.endswith(".labels.json")]
    stance = json.loads(new.read_text())["suites"]["s"]["details"]["stance"]
    assert stance["judges"] == ["gpt-4.1"]
    assert [j["model"] for j in stance["calibration"]["per_judge"]] == ["gpt-4.1"]
