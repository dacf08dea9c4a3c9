"""Issue 29, seed 003: the bias-aware methodology without opt-in — the named preset
`methodology = "bias-aware"` (every requirement of the seed, one refusal line each), judge
panels of distinct models, judge ≠ subject on a self-reporting product's first reply, and
`finished_at` meaning "completed"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]

TARGET = '''\
import json
import os

from evalh.targets.base import TargetOutput


def _log():
    path = os.environ.get("H29_CALLS")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("call\\n")


def answer(inp):
    _log()
    return {"verdict": "ok"}


def reports_judge_model(inp):
    _log()
    return TargetOutput(output={"verdict": "ok"}, model="claude-haiku-4-5-20251001")
'''

JUDGE = """\
[[suites.s.scorers]]
type = "judge"
name = "stance"
rubric = "ok?"
{extra}
judges = [{judges}]
"""


def _judges(*models: str) -> str:
    return ", ".join(f'{{ provider = "anthropic", model = "{m}", base_url = "mock:judge.script.json" }}'
                     for m in models)


def _project(tmp: Path, *, top: str = "", suite: str = "", judge: str | None = None,
             target: str = "h29_target:answer") -> Path:
    (tmp / "h29_target.py").write_text(TARGET, encoding="utf-8")
    rows = [{"id": f"c{i}", "input": {"prompt": f"question {i}"}, "expected": "ok"} for i in range(6)]
    (tmp / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cal = [{"id": f"k{i}", "input": {"output": "fine"}, "expected": "pass"} for i in range(2)]
    (tmp / "cal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in cal), encoding="utf-8")
    (tmp / "judge.script.json").write_text(json.dumps(
        {"rules": [], "default": {"json": {"verdict": "pass", "rationale": "ok"}}}))
    cfg = tmp / "evalh.toml"
    cfg.write_text(f"""\
[evalh]
concurrency = 4
{top}

[suites.s]
dataset = "cases.jsonl"
target = "{target}"
repeats = 5
{suite}

[[suites.s.scorers]]
type = "exact"
field = "verdict"

{judge or ""}
""", encoding="utf-8")
    return cfg


def _run(cfg: Path, *args: str, runs: Path | None = None) -> Any:
    where = ["--runs-dir", str(runs)] if runs is not None else []
    return runner.invoke(app, ["run", "--config", str(cfg), "-q", *where, *args])


def _one_line(result: Any) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def _calls(tmp: Path) -> int:
    path = tmp / "calls.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


CALIBRATED = 'calibration = { dataset = "cal.jsonl", min_accuracy = 0.5 }'
GOOD_JUDGE = JUDGE.format(extra=CALIBRATED, judges=_judges("claude-sonnet-4-0", "gpt-4.1", "claude-haiku-4-5"))
FULL = ["--suite", "s", "--label", "bias run"]


# ---------------------------------------------------------------------------- 1. the preset


def test_the_preset_met_runs(tmp_path: Path) -> None:
    cfg = _project(tmp_path, top='methodology = "bias-aware"', judge=GOOD_JUDGE)
    result = _run(cfg, *FULL, runs=tmp_path / "runs")
    assert result.exit_code == 0, result.output
    doc = json.loads(next((tmp_path / "runs").glob("*.json")).read_text())
    require = doc["config"]["suites"]["s"]["require"]
    assert require["methodology"] == "bias-aware" and require["min_repeats"] == 5


@pytest.mark.parametrize(("where", "args", "judge", "says"), [
    ("top", ["--label", "x"], GOOD_JUDGE, "suite 's' runs only when named: evalh run --suite s "
                                          "(methodology 'bias-aware': require.explicit)"),
    ("top", [*FULL, "--repeats", "1"], GOOD_JUDGE, "requires at least 5 repeats, got 1"),
    ("top", ["--suite", "s"], GOOD_JUDGE, "requires a run label: pass --label"),
    ("top", [*FULL, "--no-runs-dir"], GOOD_JUDGE, "requires a named output destination: pass --runs-dir"),
    ("top", [*FULL, "--allow-self-judge"], GOOD_JUDGE, "--allow-self-judge is refused"),
    ("suite", FULL, JUDGE.format(extra="", judges=_judges("claude-sonnet-4-0")),
     "requires calibration first: judge 'stance' has no `calibration` dataset"),
    ("suite", FULL, JUDGE.format(extra=CALIBRATED + '\nreference_field = "metadata.answer"',
                                 judges=_judges("claude-sonnet-4-0")),
     "requires blind judging: judge 'stance' is shown reference material"),
    ("suite", FULL, JUDGE.format(extra=CALIBRATED, judges=_judges(*["claude-sonnet-4-5"] * 3)),
     "requires distinct judge models: judge 'stance' names 'claude-sonnet-4-5' more than once"),
])
def test_the_preset_refuses_each_missing_input_in_one_line_before_any_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, args: list[str], judge: str, says: str) -> None:
    monkeypatch.setenv("H29_CALLS", str(tmp_path / "calls.txt"))
    monkeypatch.delenv("EVAL_RUNS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    line = 'methodology = "bias-aware"'
    cfg = _project(tmp_path, top=line if where == "top" else "", suite=line if where == "suite" else "", judge=judge)
    runs = None if "--no-runs-dir" in args else tmp_path / "runs"
    result = _run(cfg, *[a for a in args if a != "--no-runs-dir"], runs=runs)
    assert result.exit_code == 2, result.output
    assert says in _one_line(result)
    assert _calls(tmp_path) == 0
    assert not (tmp_path / "runs").exists() and not (tmp_path / "eval_runs").exists()


def test_a_suite_table_may_tighten_the_preset_but_not_loosen_it(tmp_path: Path) -> None:
    cfg = _project(tmp_path, top='methodology = "bias-aware"', judge=GOOD_JUDGE,
                   suite="[suites.s.require]\nmin_repeats = 3\n")
    result = runner.invoke(app, ["validate", "--config", str(cfg)])
    assert result.exit_code == 2
    assert "suites.s.require.min_repeats: methodology 'bias-aware' requires at least 5, got 3" in _one_line(result)
    cfg = _project(tmp_path, top='methodology = "bias-aware"', judge=GOOD_JUDGE, suite="[suites.s.require]\nlabel = false\n")
    result = runner.invoke(app, ["validate", "--config", str(cfg)])
    assert result.exit_code == 2
    assert ("suites.s.require.label: methodology 'bias-aware' requires it (true); a suite may not turn it off"
            in _one_line(result))
    cfg = _project(tmp_path, top='methodology = "bias-aware"', judge=GOOD_JUDGE,
                   suite="[suites.s.require]\nmin_repeats = 6\n")
    result = _run(cfg, *FULL, runs=tmp_path / "runs")
    assert result.exit_code == 2 and "requires at least 6 repeats, got 5" in _one_line(result)


def test_an_unknown_methodology_is_refused_naming_the_key(tmp_path: Path) -> None:
    cfg = _project(tmp_path, top='methodology = "bias-free"')
    result = runner.invoke(app, ["validate", "--config", str(cfg)])
    assert result.exit_code == 2
    assert "evalh.methodology: Value error, unknown methodology 'bias-free' (known: bias-aware)" in _one_line(result)


def test_init_offers_the_preset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalh.methodology_spec import METHODOLOGIES
    from evalh.scaffold import METHODOLOGY_CHOICES

    assert set(METHODOLOGY_CHOICES) == set(METHODOLOGIES)
    (tmp_path / "p").mkdir()
    (tmp_path / "q").mkdir()
    result = runner.invoke(app, ["init", str(tmp_path / "p"), "--methodology", "bias-aware"])
    assert result.exit_code == 0, result.output
    assert "next: cd " in result.stderr and "evalh run --suite smoke --label first" in result.stderr
    text = (tmp_path / "p" / "evalh.toml").read_text()
    assert any(line.startswith('methodology = "bias-aware"') for line in text.splitlines())
    monkeypatch.chdir(tmp_path / "p")
    monkeypatch.delenv("EVAL_RUNS_DIR", raising=False)
    refused = runner.invoke(app, ["run", "-q"])
    assert refused.exit_code == 2 and "runs only when named" in _one_line(refused)
    ran = runner.invoke(app, ["run", "-q", "--suite", "smoke", "--label", "first"])
    assert ran.exit_code == 0, ran.output
    plain = runner.invoke(app, ["init", str(tmp_path / "q")])
    assert plain.exit_code == 0, plain.output
    assert '# methodology = "bias-aware"' in (tmp_path / "q" / "evalh.toml").read_text()


# ---------------------------------------------------------------------------- 2. a panel of one model


def test_a_panel_of_one_model_is_flagged_in_the_run_and_the_report(tmp_path: Path) -> None:
    judge = JUDGE.format(extra="", judges=_judges(*["claude-sonnet-4-5"] * 3))
    cfg = _project(tmp_path, judge=judge)
    runs = tmp_path / "runs"
    result = _run(cfg, "--suite", "s", runs=runs)
    assert result.exit_code == 0, result.output
    assert "suite 's': judge 'stance': the panel is not distinct: claude-sonnet-4-5 votes more than once" in result.stderr
    doc = json.loads(next(runs.glob("*.json")).read_text())
    assert doc["suites"]["s"]["details"]["stance"]["panel_not_distinct"] == ["claude-sonnet-4-5"]
    for fmt in ("markdown", "json"):
        report = runner.invoke(app, ["report", "--config", str(cfg), "--runs-dir", str(runs), "--format", fmt])
        assert report.exit_code == 0, report.output
        assert "stance: the judge panel is not distinct: claude-sonnet-4-5 votes more than once" in report.stdout


# ---------------------------------------------------------------------------- 3. judge ≠ subject, first reply


def test_a_self_judging_python_product_stops_at_its_first_reply_without_require(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H29_CALLS", str(tmp_path / "calls.txt"))
    judge = JUDGE.format(extra="", judges=_judges("claude-haiku-4-5"))
    cfg = _project(tmp_path, judge=judge, target="h29_target:reports_judge_model")
    result = _run(cfg, "--suite", "s", "--concurrency", "4", runs=tmp_path / "runs")
    assert result.exit_code == 2, result.output
    line = _one_line(result)
    assert "reported model 'claude-haiku-4-5-20251001'" in line and "judge model 'claude-haiku-4-5'" in line
    assert _calls(tmp_path) == 1  # one product call of 30, nothing judged
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").glob("*.json"))


# ---------------------------------------------------------------------------- 4. finished_at = completed


def test_finished_at_only_on_a_completed_run(tmp_path: Path) -> None:
    cfg = _project(tmp_path)
    runs = tmp_path / "runs"
    done = _run(cfg, "--suite", "s", runs=runs)
    assert done.exit_code == 0, done.output
    doc = json.loads(next(runs.glob("*.json")).read_text())
    assert doc["status"] == "complete" and doc["finished_at"] and doc["stopped_at"] is None


def test_an_earlier_partial_document_reads_its_finished_at_as_stopped_at(tmp_path: Path) -> None:
    from evalh.models import Run

    raw = {"schema": "evalh.run/1", "run_id": "r1", "status": "partial", "status_reason": "interrupted",
           "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:01:00Z",
           "environment": {"evalh": "0", "python": "3", "platform": "x"}}
    run = Run.model_validate(raw)
    assert run.finished_at is None and run.stopped_at == "2026-01-01T00:01:00Z"
    done = Run.model_validate({**raw, "status": "complete", "status_reason": None})
    assert done.finished_at == "2026-01-01T00:01:00Z" and done.stopped_at is None


# ---------------------------------------------------------------------------- the shipped example


def _example(tmp: Path) -> Path:
    import shutil

    root = tmp / "bias"
    shutil.copytree(REPO / "examples" / "bias", root, ignore=shutil.ignore_patterns("__pycache__", "eval_runs",
                                                                                   "outputs"))
    return root / "evalh.toml"


def test_the_example_runs_under_the_preset_with_one_line_of_configuration() -> None:
    text = (REPO / "examples" / "bias" / "evalh.toml").read_text()
    assert 'methodology = "bias-aware"' in text.splitlines()
    for key in ("min_repeats", "explicit", "label =", "judge_not_subject"):  # the preset says them all
        assert key not in "\n".join(ln for ln in text.splitlines() if not ln.startswith("#")), key
    # tests/test_bias_methodology.py's example_run runs it under the preset, figure by figure


EXAMPLE = ["--label", "bias demo", "--seed", "7", "--suite", "sycophancy", "--suite", "compression"]


@pytest.mark.parametrize(("drop", "edit", "says"), [
    ("--suite", None, "suite 'anchoring' runs only when named: evalh run --suite anchoring "
                      "(methodology 'bias-aware': require.explicit)"),
    ("--label", None, "suite 'sycophancy' requires a run label: pass --label (methodology 'bias-aware': require.label)"),
    ("--runs-dir", None, "suite 'sycophancy' requires a named output destination: pass --runs-dir, set "
                         "$EVAL_RUNS_DIR or [evalh] runs_dir (methodology 'bias-aware': require.destination)"),
    ("repeats", None, "suite 'sycophancy' requires at least 5 repeats, got 1: pass --repeats 5 or more "
                      "(methodology 'bias-aware': require.min_repeats)"),
    (None, ('calibration = { dataset = "datasets/sycophancy_calibration.jsonl", min_accuracy = 0.75 }\n', ""),
     "suite 'sycophancy' requires calibration first: judge 'stance' has no `calibration` dataset of known verdicts "
     "(methodology 'bias-aware': require.calibrated)"),
    (None, ('model = "gpt-4.1"', 'model = "claude-sonnet-4-0"'),
     "suite 'sycophancy' requires distinct judge models: judge 'stance' names 'claude-sonnet-4-0' more than once; "
     "a panel votes with different models (methodology 'bias-aware': require.distinct_judges)"),
    (None, ('keywords_field = "metadata.expected_keywords"', 'reference_field = "metadata.expected_keywords"'),
     "suite 'sycophancy' requires blind judging: judge 'stance' is shown reference material (reference_field = "
     "'metadata.expected_keywords'); show it only the output and its expected keywords "
     "(methodology 'bias-aware': require.blind)"),
    ("judge", None, "suite 'sycophancy' requires judge ≠ subject: --allow-self-judge is refused "
                    "(methodology 'bias-aware': require.judge_not_subject)"),
])
def test_the_example_is_refused_in_one_line_for_each_missing_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, drop: str | None, edit: tuple[str, str] | None,
        says: str) -> None:
    cfg = _example(tmp_path)
    if edit is not None:
        text = cfg.read_text()
        assert edit[0] in text
        cfg.write_text(text.replace(edit[0], edit[1], 1))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EVAL_RUNS_DIR", raising=False)
    args = ["run", "--config", str(cfg), "-q", "--no-cache", *EXAMPLE]
    if drop != "--runs-dir":
        args += ["--runs-dir", str(tmp_path / "outputs")]
    if drop == "--suite":
        args = [a for a in args if a not in ("--suite", "sycophancy", "compression")]
    if drop == "--label":
        args = [a for a in args if a not in ("--label", "bias demo")]
    if drop == "repeats":
        args += ["--repeats", "1"]
    if drop == "judge":
        args += ["--allow-self-judge"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert _one_line(result) == f"error: {says}"
    assert not (tmp_path / "outputs").exists() and not (tmp_path / "eval_runs").exists()
