"""evalh.api and the pytest plugin: the commands' objects from Python, and a test that runs
a suite and fails naming the cases that did not pass."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalh import api
from evalh.errors import ConfigError
from evalh.models import Run
from evalh.scaffold import init_project


def broken_stub(root: Path) -> None:
    """The stub now calls a statement a question when it ends with a full stop."""
    stub = root / "evals" / "evalh_target.py"
    stub.write_text(stub.read_text().replace('text.endswith("?")', 'text.endswith(("?", "."))'))
    for name in [m for m in sys.modules if m.startswith("evals")]:
        del sys.modules[name]


def test_run_load_compare_report(tmp_path: Path) -> None:
    init_project(tmp_path)
    project = api.load_project(tmp_path / "evalh.toml")
    first = project.run(label="first")
    assert isinstance(first.run, Run) and first.code == 0 and first.path is not None
    assert first.run.suites["smoke"].aggregate.passed == 4
    api.assert_passed(first.run)
    assert project.run_ids() == [first.run.run_id]
    assert project.load_run(first.run.run_id).run_id == first.run.run_id

    broken_stub(tmp_path)
    second = project.run()
    assert second.code == 1
    with pytest.raises(AssertionError) as info:
        api.assert_passed(second.run)  # type: ignore[arg-type]
    message = str(info.value)
    assert "1 case(s) did not pass" in message
    assert "smoke/statement.plain failed: exact: got question, expected statement" in message

    comparison = project.compare(first.run, second.run)
    from evalh.core.compare.gate import gate_exit_code

    assert gate_exit_code(comparison, fail_on_regression=True, fail_on_inconclusive=False) == 1
    assert "smoke" in project.report([first.run, second.run], fmt="md")
    assert project.report(fmt="json").lstrip().startswith("{")


def test_bad_config_raises_the_commands_one_line(tmp_path: Path) -> None:
    (tmp_path / "evalh.toml").write_text("[suites.x]\ndataset = 'nope.jsonl'\ntarget = 'm:f'\n")
    with pytest.raises(ConfigError, match=r"suites\.x\.dataset: file not found"):
        api.load_project(tmp_path / "evalh.toml")


def test_the_pytest_fixture_fails_naming_the_cases(tmp_path: Path) -> None:
    init_project(tmp_path)
    (tmp_path / "test_evals.py").write_text(textwrap.dedent('''
        def test_smoke_passes(evalh):
            run = evalh.check("smoke")
            assert run.suites["smoke"].aggregate.passed == 4

        def test_unknown_suite(evalh):
            evalh.check("nope")
    '''))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # No `-p evalh.pytest_plugin`: the installed pytest11 entry point loads the fixture, as it
    # does in a user's project (naming it as well is a second registration, and pytest exits 3).
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "--evalh-runs-dir", str(tmp_path / "runs"), "test_evals.py"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout
    assert "1 failed, 1 passed" in proc.stdout
    assert "evalh: " in proc.stdout and "unknown suite 'nope'" in proc.stdout

    broken_stub(tmp_path)
    proc = subprocess.run(cmd + ["-k", "passes"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1
    assert "evalh: 1 case(s) did not pass" in proc.stdout
    assert "smoke/statement.plain failed: exact: got question, expected statement" in proc.stdout
    assert "Traceback" not in proc.stdout  # the failure is the list of cases, not evalh's stack
