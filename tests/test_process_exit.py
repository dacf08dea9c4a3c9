"""The `evalh` process ends without tearing down what it loaded (evalh.cli.process_exit), and
loses nothing by it: exit codes, all of stdout, a product's atexit hooks and its threads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalh.cli.process_exit import exit_code_of
from tests.runner_project import TARGET_MODULE, evalh_process, write_project

HOOKS = '''

import atexit as _atexit
import threading as _threading
import time as _time


def with_hooks(inp):
    import os
    marks = os.environ["MARKS"]
    if inp["n"] == 0:
        def late():
            _time.sleep(0.3)
            with open(os.path.join(marks, "thread"), "w") as fh:
                fh.write("done")
        _threading.Thread(target=late, daemon=False).start()  # the process waits for it

        def hook():
            with open(os.path.join(marks, "atexit"), "w") as fh:
                fh.write("ran")
        _atexit.register(hook)
    return {"verdict": "even" if inp["n"] % 2 == 0 else "odd", "pad": "x" * 2000}
'''


def test_the_process_keeps_its_exit_code_stdout_atexit_hooks_and_threads(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, cases=300, target="with_hooks", concurrency=4)
    (tmp_path / f"{TARGET_MODULE}.py").write_text((tmp_path / f"{TARGET_MODULE}.py").read_text() + HOOKS)
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = evalh_process(["run", "--config", str(cfg), "--runs-dir", str(tmp_path / "runs"), "--json"],
                         tmp_path, env={"MARKS": str(marks)})
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err  # the mislabelled cases fail the gate
    assert json.loads(out)["exit_code"] == 1
    assert (marks / "atexit").read_text() == "ran"
    assert (marks / "thread").read_text() == "done"
    [path] = (tmp_path / "runs").glob("*.json")
    show = evalh_process(["show", str(path), "--json"], tmp_path)
    out, err = show.communicate(timeout=60)
    assert show.returncode == 0, err
    assert len(json.loads(out)["suites"]["s"]["cases"]) == 300  # all of it: ~700 KB through a pipe


def test_usage_errors_keep_their_exit_code(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "evalh.cli.main", "run", "--concurrency", "0"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "concurrency" in proc.stderr


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (1, 1), (4, 4), (256, 0), (-1, 255), ("boom", 1)])
def test_exit_codes_are_what_sys_exit_gives(code: object, status: int) -> None:
    assert exit_code_of(code) == status
