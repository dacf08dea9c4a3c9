"""Importing project code (targets, custom scorers, plugins): a module that exits or raises a
BaseException at import is a bad target (exit 2, one line naming the module, no run document),
and every command finds project modules from the project root, whatever the current directory
and PYTHONPATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from evalh import registry
from evalh.cli.main import app

EVALH = str(Path(sys.executable).with_name("evalh"))

GOOD_TARGET = '''\
def answer(inp):
    return {"text": inp["q"].upper()}
'''
GOOD_SCORER = '''\
def check(case, output):
    return output["text"] == case.expected["text"]
'''
JUDGE = ('{ type = "judge", provider = "anthropic", model = "judge-1", base_url = "mock:judge.json", '
         'max_retries = 0, rubric = "r", output_field = "text" }')

# The four ways a module can end the process at import.
BAD = {
    "exit0": ("import sys\nsys.exit(0)\n", "exited (SystemExit 0)"),
    "exit3": ("import sys\nsys.exit(3)\n", "exited (SystemExit 3)"),
    "base": ("class Stop(BaseException):\n    pass\n\nraise Stop('no')\n", "raised Stop (a BaseException): no"),
    "argparse": ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--model', required=True)\n"
                 "args = p.parse_args()\n", "exited (SystemExit 2)"),
}


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "response-cache"))


def project(root: Path) -> Path:
    (root / "evalh.toml").write_text(
        '[suites.gate]\ndataset = "d.jsonl"\ntarget = "tgt:answer"\nregime = "deterministic"\n'
        f'scorers = [{{ type = "custom", name = "mine", function = "scorer_mod:check" }}, {JUDGE}]\n',
        encoding="utf-8")
    (root / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": f"q{i}"}, "expected": {"text": f"Q{i}"}}) + "\n"
        for i in range(1, 3)), encoding="utf-8")
    (root / "tgt.py").write_text(GOOD_TARGET, encoding="utf-8")
    (root / "scorer_mod.py").write_text(GOOD_SCORER, encoding="utf-8")
    (root / "judge.json").write_text(json.dumps(
        {"rules": [{"match": "", "json": {"verdict": "pass", "rationale": "fine"}}]}), encoding="utf-8")
    return root / "evalh.toml"


def cli(cfg: Path, *args: str) -> Result:
    runs = [] if args[0] == "validate" else ["--runs-dir", str(cfg.parent / "runs")]
    return CliRunner().invoke(app, [*args, "--config", str(cfg), *runs])


def shell(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed `evalh` in a fresh process: no PYTHONPATH, the current directory as given."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([EVALH, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def written(cfg: Path) -> list[Path]:
    runs = cfg.parent / "runs"
    return sorted(runs.iterdir()) if runs.is_dir() else []


def assert_bad_module(code: int, stderr: str, module: str, what: str, said: str) -> None:
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr  # argparse's usage text is not passed through
    assert lines[0].startswith("error: ") and f"importing module {module!r} {said}" in lines[0], lines[0]
    assert f"a {what} module must not exit at import" in lines[0]


# ----------------------------------------------------------------------------- run and validate


@pytest.mark.parametrize("way", sorted(BAD))
@pytest.mark.parametrize("command", ["run", "validate"])
@pytest.mark.parametrize("where", ["target", "scorer"])
def test_a_module_that_exits_at_import_is_a_bad_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      way: str, command: str, where: str) -> None:
    cfg = project(tmp_path)
    source, said = BAD[way]
    (tmp_path / ("tgt.py" if where == "target" else "scorer_mod.py")).write_text(source, encoding="utf-8")
    # argparse reads sys.argv: make it the command line a user typed
    monkeypatch.setattr(sys, "argv", [EVALH, command, "--suite", "gate"])
    args = ["--suite", "gate"] if command == "run" else []
    result = cli(cfg, command, *args)
    module, key = ("tgt", "suites.gate.target") if where == "target" else ("scorer_mod", "suites.gate.scorers[0]")
    assert_bad_module(result.exit_code, result.stderr, module, where, said)
    assert f"{key}: " in result.stderr
    assert written(cfg) == []  # no run document, no journal


def test_run_with_compare_baseline_and_an_exiting_target_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    cfg = project(tmp_path)
    good = cli(cfg, "run", "--json")
    assert good.exit_code == 0, good.output
    assert cli(cfg, "baseline", "set", json.loads(good.stdout)["run_id"]).exit_code == 0
    before = written(cfg)
    (tmp_path / "tgt.py").write_text(BAD["exit0"][0], encoding="utf-8")
    sys.modules.pop("tgt", None)  # imported by the good run in this process
    result = cli(cfg, "run", "--suite", "gate", "--compare-baseline")
    assert_bad_module(result.exit_code, result.stderr, "tgt", "target", "exited (SystemExit 0)")
    assert written(cfg) == before


@pytest.mark.parametrize("command", ["run", "validate"])
def test_argparse_at_import_in_a_real_process(tmp_path: Path, command: str) -> None:
    """The installed command, its own argv: argparse prints usage and exits 2 at import."""
    cfg = project(tmp_path)
    (tmp_path / "tgt.py").write_text(BAD["argparse"][0], encoding="utf-8")
    runs = [] if command == "validate" else ["--runs-dir", str(tmp_path / "runs")]
    proc = shell(tmp_path, command, "--config", str(cfg), *runs)
    assert_bad_module(proc.returncode, proc.stderr, "tgt", "target", "exited (SystemExit 2)")
    assert "the following arguments are required: --model" in proc.stderr  # what it said, in our one line
    assert "usage:" not in proc.stderr
    assert written(cfg) == []


def test_a_module_that_prints_at_import_and_works_keeps_its_output(tmp_path: Path) -> None:
    cfg = project(tmp_path)
    (tmp_path / "tgt.py").write_text("import sys\nprint('loading tgt', file=sys.stderr)\n" + GOOD_TARGET,
                                     encoding="utf-8")
    result = cli(cfg, "validate")
    assert result.exit_code == 0, result.output
    assert "loading tgt" in result.stderr


def test_keyboard_interrupt_at_import_is_an_interruption(tmp_path: Path) -> None:
    cfg = project(tmp_path)
    (tmp_path / "tgt.py").write_text("raise KeyboardInterrupt\n", encoding="utf-8")
    result = cli(cfg, "validate")
    assert result.exit_code == 130, result.output


def test_a_plugin_module_that_exits_at_import_is_bad_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "evalh_exiting_plugin.py").write_text(BAD["exit3"][0], encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.TARGET_KINDS, "exiting", "evalh_exiting_plugin")
    cfg = project(tmp_path)
    cfg.write_text(cfg.read_text().replace('target = "tgt:answer"', 'target = { kind = "exiting" }'))
    result = cli(cfg, "validate")
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert "suites.gate.target.kind: importing module 'evalh_exiting_plugin' exited (SystemExit 3)" in line
    assert "a plugin module must not exit at import" in line and len(line.splitlines()) == 1


# ----------------------------------------------------------------------------- rejudge


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A project and its run, made once by the installed `evalh` in a fresh process (a judge
    on the mock: every such process imports the provider SDK); each test copies it."""
    root = tmp_path_factory.mktemp("original")
    cfg = project(root)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["EVALH_CACHE_DIR"] = str(root / "response-cache")
    proc = subprocess.run([EVALH, "run", "--config", str(cfg), "--runs-dir", str(root / "runs"), "--json"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return root, json.loads(proc.stdout)["run_id"]


@pytest.fixture
def original_run(original: tuple[Path, str], tmp_path: Path) -> tuple[Path, str]:
    """The original project, run and response cache, copied into this test's `tmp_path`."""
    root, run_id = original
    shutil.copytree(root, tmp_path, dirs_exist_ok=True)
    return tmp_path / "evalh.toml", run_id


@pytest.mark.parametrize("cwd", ["root", "elsewhere"])
def test_rejudge_imports_project_code_without_pythonpath(tmp_path: Path, cwd: str,
                                                         original_run: tuple[Path, str]) -> None:
    """Issue 11 item 10: `evalh rejudge` said "No module named ..." unless PYTHONPATH=."""
    cfg, run_id = original_run
    where = tmp_path if cwd == "root" else tmp_path / "elsewhere"
    where.mkdir(exist_ok=True)
    proc = shell(where, "rejudge", run_id, "--all", "--json", "--config", str(cfg),
                 "--runs-dir", str(tmp_path / "runs"))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["derived_from"]["run_id"] == run_id and out["status"] == "complete"


@pytest.mark.parametrize("way", sorted(BAD))
def test_rejudge_with_a_scorer_module_that_exits_at_import(tmp_path: Path, way: str,
                                                           original_run: tuple[Path, str]) -> None:
    cfg, run_id = original_run
    before = written(cfg)
    source, said = BAD[way]
    (tmp_path / "scorer_mod.py").write_text(source, encoding="utf-8")
    proc = shell(tmp_path, "rejudge", run_id, "--all", "--config", str(cfg), "--runs-dir", str(tmp_path / "runs"))
    assert_bad_module(proc.returncode, proc.stderr, "scorer_mod", "scorer", said)
    assert "suites.gate.scorers[0]: " in proc.stderr
    assert written(cfg) == before  # no new run document
