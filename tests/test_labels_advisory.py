"""Advisory suites: reported with judgeUse: advisory-only and releaseDecision:
not-assessed, never changing an exit code of `run` or `compare`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.core.compare.decide import compare_runs
from evalh.core.compare.gate import gate_exit_code
from evalh.core.run.verdict import run_verdict
from tests.report_factory import make_run, res, suite
from tests.runner_project import TARGET_MODULE, write_project


def with_config(run: Any, advisory: bool) -> Any:
    run.config = {"suites": {"j": {"advisory": advisory}}}
    return run


@pytest.mark.parametrize("advisory", [False, True])
def test_an_advisory_suite_never_fails_run(advisory: bool) -> None:
    run = with_config(make_run("r", {"j": suite([res("a", "failed"), res("b", "errored"), res("c", "errored")])}),
                      advisory)
    assert run_verdict(run).code == (0 if advisory else 1)


@pytest.mark.parametrize("advisory", [False, True])
def test_an_advisory_suite_never_fails_compare(advisory: bool) -> None:
    base = with_config(make_run("b", {"j": suite([res("a"), res("b")])}), advisory)
    cand = with_config(make_run("c", {"j": suite([res("a", "failed"), res("b", "errored")])}), advisory)
    cmp = compare_runs(base, cand)
    assert cmp.suites["j"].verdict == "regressed"  # still reported as it is
    assert gate_exit_code(cmp, fail_on_regression=True, fail_on_inconclusive=True) == (0 if advisory else 1)
    doc = json.loads(cmp.model_dump_json())
    if advisory:
        assert doc["suites"]["j"]["advisory"] == {"judgeUse": "advisory-only", "releaseDecision": "not-assessed"}
        assert any("advisory suite" in r for r in doc["suites"]["j"]["reasons"])
    else:
        assert doc["suites"]["j"]["advisory"] is None


def test_evalh_run_exits_0_on_a_failing_advisory_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(TARGET_MODULE, None)
    cfg = write_project(tmp_path, cases=5, suite_extra="advisory = true")  # case c004 fails
    runs = tmp_path / "runs"
    result = CliRunner().invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q"])
    assert result.exit_code == 0, result.output
    doc = json.loads(next(runs.glob("*.json")).read_text())
    assert doc["config"]["suites"]["s"]["advisory"] is True and doc["suites"]["s"]["aggregate"]["failed"] == 1
    cfg = write_project(tmp_path, cases=5)
    assert CliRunner().invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q"]).exit_code == 1


def test_evalh_report_says_an_advisory_suite_is_advisory() -> None:
    from evalh.report import build_report

    run = with_config(make_run("r", {"j": suite([res("a")])}), True)
    assert any("judgeUse: advisory-only" in n and "releaseDecision: not-assessed" in n
               for n in build_report([run]).suites[0].notes)
    assert not build_report([with_config(make_run("r", {"j": suite([res("a")])}), False)]).suites[0].notes


def test_an_advisory_scorer_is_recorded_but_never_decides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(TARGET_MODULE, None)
    cfg = write_project(tmp_path, cases=4)  # c000..c003 pass `exact`; `strict` (advisory) fails every one
    text = cfg.read_text().replace(
        'scorers = [{ type = "exact", field = "verdict" }]',
        'scorers = [{ type = "exact", field = "verdict" }, '
        '{ type = "exact", name = "strict", field = "verdict", expected_field = "nothing", advisory = true }]')
    cfg.write_text(text)
    runs = tmp_path / "runs"
    res_ = CliRunner().invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q"])
    assert res_.exit_code == 0, res_.output
    doc = json.loads(next(runs.glob("*.json")).read_text())
    s = doc["suites"]["s"]
    assert s["aggregate"]["passed"] == 4
    assert all(any(x["scorer"] == "strict" and x["passed"] is False for x in c["scores"]) for c in s["cases"])
    assert doc["config"]["suites"]["s"]["scorers"][1]["advisory"] is True
    assert "advisory" not in doc["config"]["suites"]["s"]["scorers"][0]  # unset: the snapshot reads as before
