"""A command that measured nothing never exits 0 (issue 27, items 5 and 6 and the commands
beside `run`): a target module that ends the process at import, a generator that is down,
a judge that is down for a rejudge, a sweep over a run whose every result errored, an
empty ratings file. Item 5 goes through the `evalh` program itself (a subprocess): the
guard is in the process, not in the command."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app

EXACT = '{ type = "exact", field = "text", expected_field = "text" }'


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "response-cache"))


def project(root: Path, target_source: str, *, scorers: str = EXACT, n: int = 3, module: str = "tgt") -> Path:
    (root / "evalh.toml").write_text(
        f'[suites.s]\ndataset = "d.jsonl"\ntarget = "{module}:answer"\nregime = "deterministic"\n'
        f"scorers = [{scorers}]\n", encoding="utf-8")
    (root / "d.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"q": f"q{i}"}, "expected": {"text": f"Q{i}"}}) + "\n"
        for i in range(n)), encoding="utf-8")
    (root / f"{module}.py").write_text(target_source, encoding="utf-8")
    return root / "evalh.toml"


def evalh(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The `evalh` program, as a user runs it (its entry point, in a new process)."""
    return subprocess.run([sys.executable, "-c", "from evalh.cli.main import entry; entry()", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "EVALH_CACHE_DIR": str(cwd / "response-cache")})


def cli(cfg: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--config", str(cfg), "--runs-dir", str(cfg.parent / "runs")])


# ----------------------------------------------------------------------------- item 5: os._exit at import

EXITS_AT_IMPORT = 'import os\nos._exit(0)\n\ndef answer(inp):\n    return {"text": inp["q"].upper()}\n'
ANSWERS = 'def answer(inp):\n    return {"text": inp["q"].upper()}\n'


@pytest.mark.parametrize("command", [["run", "-q"], ["run", "--json"], ["validate"], ["validate", "-q"]])
def test_a_target_module_that_exits_0_at_import_is_never_green(tmp_path: Path, command: list[str]) -> None:
    project(tmp_path, EXITS_AT_IMPORT)
    done = evalh(tmp_path, *command)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("error: evalh ended before reaching a verdict (exit status 0)")
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "eval_runs").exists() or not list((tmp_path / "eval_runs").glob("*.json"))


def test_a_target_module_that_exits_non_zero_keeps_its_code_and_says_so(tmp_path: Path) -> None:
    project(tmp_path, EXITS_AT_IMPORT.replace("os._exit(0)", "os._exit(3)"))
    done = evalh(tmp_path, "run", "-q")
    assert done.returncode == 3 and "exit status 3" in done.stderr


def test_the_guard_passes_every_verdict_through(tmp_path: Path) -> None:
    project(tmp_path, ANSWERS)
    ok = evalh(tmp_path, "run", "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["exit_code"] == 0 and ok.stderr.count("error") == 0
    (tmp_path / "tgt.py").write_text('def answer(inp):\n    return {"text": "wrong"}\n')
    failed = evalh(tmp_path, "run", "-q")
    assert failed.returncode == 1 and "verdict" not in failed.stderr
    bad = evalh(tmp_path, "run", "--suite", "nope")
    assert bad.returncode == 2 and "verdict" not in bad.stderr
    assert evalh(tmp_path, "--help").returncode == 0


def test_a_signal_to_the_evalh_process_reaches_the_run(tmp_path: Path) -> None:
    gate = tmp_path / "started"
    project(tmp_path, "import os, time\n\ndef answer(inp):\n"
                      f"    open({str(gate)!r}, 'a').close()\n"
                      "    time.sleep(60)\n    return {'text': inp['q'].upper()}\n", n=2)
    proc = subprocess.Popen([sys.executable, "-c", "from evalh.cli.main import entry; entry()", "run", "-q",
                             "--concurrency", "1"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gate.exists()
    proc.send_signal(signal.SIGTERM)  # to the process the user started: the run hears it
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    (doc,) = (json.loads(p.read_text()) for p in (tmp_path / "eval_runs").glob("*.json"))
    assert doc["status"] == "partial"


# ----------------------------------------------------------------------------- item 6: generate


def test_generate_with_its_generator_down_exits_1_and_writes_nothing(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from evalh.mock.mock_provider import MockProvider
    from tests.test_generate import project as generate_project

    monkeypatch.setenv("MOCK_KEY", "k")
    with MockProvider({"rules": []}) as mp:
        cfg = generate_project(tmp_path, mp, count=3)
        url = mp.base_url
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    cfg.write_text(cfg.read_text().replace(url, f"http://127.0.0.1:{port}"))
    assert "max_attempts" not in cfg.read_text()
    cfg.write_text(cfg.read_text().replace("[suites.p.generate]", "[suites.p.generate]\nmax_attempts = 1", 1))
    out = tmp_path / "generated.jsonl"
    result = CliRunner().invoke(app, ["generate", "--config", str(cfg), "--suite", "p", "-o", str(out), "--seed", "1"])
    assert result.exit_code == 1, result.output
    line = result.stderr.strip()
    assert line.startswith("error: suite 'p': no case generated: 3 of 3 generations failed (the first: "
                           "generator call failed"), line
    assert line.endswith(f"{out} not written") and len(line.splitlines()) == 1
    assert not out.exists()


# ----------------------------------------------------------------------------- rejudge, sweep, label import

JUDGE = ('{ type = "judge", provider = "anthropic", model = "judge-1", base_url = "mock:judge.json", '
         'max_retries = 0, rubric = "r", output_field = "text", max_tokens = 64 }')
JUDGE_OK = {"rules": [{"match": "", "json": {"verdict": "pass", "rationale": "fine"}}]}
JUDGE_DOWN = {"rules": [{"match": "", "fault": "server_error"}]}


def test_rejudge_with_its_judge_down_exits_1(tmp_path: Path) -> None:
    cfg = project(tmp_path, ANSWERS, scorers=JUDGE, module="rjtgt")
    (tmp_path / "judge.json").write_text(json.dumps(JUDGE_OK))
    first = cli(cfg, "run", "--json")
    assert first.exit_code == 0, first.output
    run_id = json.loads(first.stdout)["run_id"]
    (tmp_path / "judge.json").write_text(json.dumps(JUDGE_DOWN))
    result = cli(cfg, "rejudge", run_id, "--all", "--json")
    assert result.exit_code == 1, result.output
    assert (f"error: rejudge of {run_id}: every result judged again got no judgment: 3 of 3 "
            "judge_error") in result.stderr
    assert json.loads(result.stdout)["suites"]["s"]["judge_error_now"] == 3
    (tmp_path / "judge.json").write_text(json.dumps(JUDGE_OK))
    again = cli(cfg, "rejudge", run_id, "--all", "-q")
    assert again.exit_code == 0, again.output


def test_a_sweep_over_a_run_that_measured_nothing_is_not_green(tmp_path: Path) -> None:
    cfg = project(tmp_path, 'def answer(inp):\n    raise RuntimeError("down")\n', module="swtgt")
    run = cli(cfg, "run", "--json")
    assert run.exit_code == 1
    run_id = json.loads(run.stdout)["run_id"]
    result = cli(cfg, "sweep", run_id, "--measure", "score", "--label", "text", "--positive", "Q0",
                 "--grid", "threshold=0.1:0.9:0.1")
    assert result.exit_code == 2, result.output
    assert "nothing to rank" in result.stderr


def test_label_import_of_an_empty_ratings_file_is_not_green(tmp_path: Path) -> None:
    cfg = project(tmp_path, ANSWERS, module="lbtgt")
    run = cli(cfg, "run", "--json")
    run_id = json.loads(run.stdout)["run_id"]
    empty = tmp_path / "ratings.jsonl"
    empty.write_text("")
    result = cli(cfg, "label", "import", str(empty), "--run", run_id)
    assert result.exit_code == 2, result.output
    assert "no ratings in the file" in result.stderr
