"""One suite over several worker processes (`--procs N`, `processes = N`): the same run
document as one process, case by case; a worker that dies is errored cases or a clean
failure, never a pass; budgets and resume hold (evalh.core.run.procs)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.mock import MockProvider
from tests.runner_project import TARGET_MODULE, by_triple, load, write_project

pytestmark = pytest.mark.slow  # processes, venvs or large runs: minutes on a busy 2-core machine

runner = CliRunner()

MODEL_TOML = """\
[evalh]
concurrency = 6
timeout_s = 20

[prices."claude-haiku-4-5"]
input = 1.0
output = 5.0

[suites.qa]
dataset = "qa.jsonl"
regime = "stochastic"
repeats = 2
scorers = [{{ type = "contains" }}]

[suites.qa.target]
kind = "anthropic"
model = "claude-haiku-4-5"
base_url = "{base_url}"
api_key_env = "EVALH_TEST_KEY"
prompt = "{{{{ input.question }}}}"
max_in_flight = 5
"""

KILLERS = '''

def kill_on_three(inp):
    """Case 3 kills the process it runs in, unless that is the run's own (one process)."""
    import os, signal
    if inp["n"] == 3 and os.getpid() != int(os.environ["RUN_PID"]):
        os.kill(os.getpid(), signal.SIGKILL)
    return {"verdict": "even" if inp["n"] % 2 == 0 else "odd"}


def kill_always(inp):
    import os, signal
    if os.getpid() != int(os.environ["RUN_PID"]):
        os.kill(os.getpid(), signal.SIGKILL)
    _log()
    return {"verdict": "even" if inp["n"] % 2 == 0 else "odd"}
'''


@pytest.fixture
def mp() -> Iterator[MockProvider]:
    script = [{"match": "say even", "text": "even"}, {"match": "say odd", "text": "odd"}]
    with MockProvider(script) as provider:
        yield provider


def _model_project(root: Path, mp: MockProvider, cases: int = 30) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "evalh.toml").write_text(MODEL_TOML.format(base_url=mp.base_url), encoding="utf-8")
    lines = []
    for n in range(cases):
        word = "even" if n % 2 == 0 else "odd"
        expected = word if n % 7 else ("odd" if word == "even" else "even")  # some fail
        lines.append(json.dumps({"id": f"q{n:03d}", "input": {"question": f"case {n}: say {word}"},
                                 "expected": expected}))
    (root / "qa.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root / "evalh.toml"


def _run(cfg: Path, runs: Path, *args: str) -> tuple[Any, dict[str, Any] | None]:
    before = set(runs.glob("*.json")) if runs.is_dir() else set()
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", *args])
    new = sorted(set(runs.glob("*.json")) - before) if runs.is_dir() else []
    return result, (load(new[-1]) if new else None)


def _facts(doc: dict[str, Any], suite: str) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    return {k: (r["status"], r["score"], [s["value"] for s in r["scores"]], r["output"], r["seed"],
                r["tokens_in"], r["tokens_out"], r["cost_usd"], r["error"])
            for k, r in by_triple(doc, suite).items()}


def test_a_run_over_three_processes_equals_a_one_process_run_case_by_case(
    mp: MockProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALH_TEST_KEY", "k")
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))
    cfg = _model_project(tmp_path / "p", mp)
    one_result, one = _run(cfg, tmp_path / "one", "--seed", "5", "--no-cache")
    assert one is not None, one_result.output
    requests_one = mp.count()
    three_result, three = _run(cfg, tmp_path / "three", "--seed", "5", "--no-cache", "--procs", "3")
    assert three is not None, three_result.output
    assert three_result.exit_code == one_result.exit_code
    assert mp.count() - requests_one == 60  # every (case, attempt) asked once, over the processes
    assert three["status"] == one["status"] == "complete"
    assert _facts(three, "qa") == _facts(one, "qa")
    statuses = {f[0] for f in _facts(three, "qa").values()}
    assert statuses == {"passed", "failed"}
    for key in ("passed", "failed", "errored", "n", "tokens_in", "tokens_out", "cost_usd"):
        assert three["suites"]["qa"]["aggregate"][key] == one["suites"]["qa"]["aggregate"][key]
    assert three["summary"] == one["summary"]
    assert [r["case_id"] for r in three["suites"]["qa"]["cases"]] == [r["case_id"] for r in one["suites"]["qa"]["cases"]]
    # the endpoint's counters, summed over the workers; its configured bound as configured
    (lim_one,) = one["limits"].values()
    (lim_three,) = three["limits"].values()
    assert lim_three["requests"] == lim_one["requests"] == 60
    assert lim_three["max_in_flight"] == lim_one["max_in_flight"] == 5
    assert lim_three["in_flight_peak"] <= 5  # 5 shared out over 3 processes: 2 + 2 + 1
    assert three["config"] == one["config"] and three["seed"] == one["seed"] == 5


def test_processes_from_the_config_and_sync_targets_see_their_case(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, cases=24, target="who", concurrency=4, suite_extra="processes = 2")
    result, doc = _run(cfg, tmp_path / "runs", "--seed", "2")
    assert doc is not None, result.output
    assert result.exit_code == 1  # the mislabelled cases fail
    for r in doc["suites"]["s"]["cases"]:
        assert r["output"]["ctx"] == [doc["run_id"], "s", r["case_id"], "default", r["attempt"]]
        assert r["output"]["env_case_id"] is None
    single_result, single = _run(cfg, tmp_path / "single", "--seed", "2", "--procs", "1")
    assert single is not None, single_result.output
    assert {k: (r["status"], r["seed"]) for k, r in by_triple(doc).items()} == \
        {k: (r["status"], r["seed"]) for k, r in by_triple(single).items()}
    assert "processes" not in json.dumps(doc["config"])  # not part of what the run is


def _killer_project(root: Path, target: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    import os

    monkeypatch.setenv("RUN_PID", str(os.getpid()))
    cfg = write_project(root, cases=12, target=target, concurrency=4)
    module = root / f"{TARGET_MODULE}.py"
    module.write_text(module.read_text() + KILLERS)
    return cfg


def test_a_killed_worker_errors_the_cases_it_was_running_never_a_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _killer_project(tmp_path, "kill_on_three", monkeypatch)
    result, doc = _run(cfg, tmp_path / "runs", "--seed", "1", "--procs", "2")
    assert doc is not None, result.output
    assert result.exit_code == 1
    assert doc["status"] == "complete"  # the other worker ran the rest
    cases = by_triple(doc)
    assert len(cases) == 12
    killer = cases[("c003", "default", 0)]
    assert killer["status"] == "errored" and killer["score"] is None
    assert killer["error"]["type"] == "WorkerDied" and "SIGKILL" in killer["error"]["message"]
    died = [r for r in cases.values() if r["error"] and r["error"]["type"] == "WorkerDied"]
    assert 1 <= len(died) <= 2  # what that worker had in flight: its share of 4
    assert all(r["status"] == "errored" for r in died)
    others = [r for r in cases.values() if r not in died]
    assert all(r["status"] in ("passed", "failed") for r in others)


def test_when_every_worker_dies_the_run_fails_cleanly_and_resume_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _killer_project(tmp_path, "kill_always", monkeypatch)
    result, doc = _run(cfg, tmp_path / "runs", "--seed", "1", "--procs", "2")
    assert result.exit_code != 0
    assert doc is not None, result.output
    assert doc["status"] == "failed" and "WorkersLost" in doc["status_reason"]
    cases = doc["suites"]["s"]["cases"]
    assert cases and all(r["status"] == "errored" and r["error"]["type"] == "WorkerDied" for r in cases)
    assert len(cases) < 12
    # in one process the target does not kill itself: the resume runs what is left
    resumed, _ = _run(cfg, tmp_path / "runs", "--resume", doc["run_id"], "--procs", "1")
    done = load(tmp_path / "runs" / f"{doc['run_id']}.json")
    assert done["status"] == "complete", resumed.output
    assert len(done["suites"]["s"]["cases"]) == 12


def test_resume_runs_again_the_cases_a_dying_worker_left_errored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both workers killed: the cases they had in flight are `WorkerDied`, which measured
    nothing about the product. `--resume` runs them again (they were kept errored for good),
    and the resumed run has a real result for every case."""
    cfg = _killer_project(tmp_path, "kill_always", monkeypatch)
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("CALLS_FILE", str(calls))
    result, doc = _run(cfg, tmp_path / "runs", "--seed", "1", "--procs", "2")
    assert doc is not None and doc["status"] == "failed", result.output
    died = {r["case_id"] for r in doc["suites"]["s"]["cases"] if r["error"]["type"] == "WorkerDied"}
    assert died
    calls.write_text("")
    resumed, _ = _run(cfg, tmp_path / "runs", "--resume", doc["run_id"], "--procs", "1")
    done = load(tmp_path / "runs" / f"{doc['run_id']}.json")
    assert done["status"] == "complete", resumed.output
    cases = done["suites"]["s"]["cases"]
    assert len(cases) == 12 and all(r["status"] in ("passed", "failed") for r in cases), cases
    ran = {line.split(" ")[0] for line in calls.read_text().splitlines()}
    assert died <= ran and len(ran) == 12, (died, ran)


def test_the_budget_holds_over_processes_and_a_resume_over_processes_finishes_the_run(
    tmp_path: Path
) -> None:
    cfg = write_project(tmp_path, cases=40, target="priced", concurrency=4)
    result, doc = _run(cfg, tmp_path / "runs", "--seed", "3", "--procs", "2", "--max-cost", "0.1")
    assert doc is not None, result.output
    assert result.exit_code == 1 and doc["status"] == "partial"
    assert "cost budget reached" in doc["status_reason"]
    ran = len(doc["suites"]["s"]["cases"])
    # each result costs 0.01: 10 reach the budget, and at most the 4 in flight then finish
    assert 10 <= ran <= 14
    assert doc["suites"]["s"]["aggregate"]["cost_usd"] == pytest.approx(0.01 * ran)
    resumed, _ = _run(cfg, tmp_path / "runs", "--resume", doc["run_id"], "--procs", "2", "--max-cost", "5")
    done = load(tmp_path / "runs" / f"{doc['run_id']}.json")
    assert done["status"] == "complete", resumed.output
    _, single = _run(cfg, tmp_path / "single", "--seed", "3")
    assert single is not None
    assert {k: (r["status"], r["seed"], r["cost_usd"]) for k, r in by_triple(done).items()} == \
        {k: (r["status"], r["seed"], r["cost_usd"]) for k, r in by_triple(single).items()}


def test_a_refusal_in_a_worker_stops_the_run_as_it_would_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judge's own model reported by the product: refused at the first reply of each
    worker (exit 2, one line, nothing written), raised by the run's process as the same error."""
    from tests.test_bias_methodology import _nothing_written, _one_line, _project
    from tests.test_bias_methodology import _run as run_h13

    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("H13_CALLS", str(calls))
    cfg = _project(tmp_path, """\
[[suites.s.scorers]]
type = "judge"
provider = "anthropic"
model = "claude-haiku-4-5"
base_url = "mock:judge.script.json"
rubric = "ok?"

[suites.s.require]
judge_not_subject = true
""", target="h13_target:reports_judge_model")
    result = run_h13(cfg, tmp_path / "runs", "--suite", "s", "--concurrency", "4", "--procs", "2")
    assert result.exit_code == 2, result.output
    line = _one_line(result)
    assert "reported model 'claude-haiku-4-5-20251001'" in line and "judge model 'claude-haiku-4-5'" in line
    assert 1 <= len(calls.read_text().splitlines()) <= 2  # each worker's first reply at most
    assert _nothing_written(tmp_path / "runs")


PIDS = '''

def slow_pid(inp):
    import os, time
    with open(os.environ["PIDS_FILE"], "a") as fh:
        fh.write(f"{os.getpid()}\\n")
    time.sleep(0.2)
    return {"verdict": "even" if inp["n"] % 2 == 0 else "odd"}
'''


def test_ctrl_c_stops_the_workers_keeps_a_partial_run_and_resume_over_processes_finishes_it(
    tmp_path: Path
) -> None:
    import os
    import signal
    import time

    from tests.runner_project import evalh_process

    cfg = write_project(tmp_path, cases=40, target="slow_pid", concurrency=4)
    (tmp_path / f"{TARGET_MODULE}.py").write_text((tmp_path / f"{TARGET_MODULE}.py").read_text() + PIDS)
    pids_file = tmp_path / "pids"
    runs = tmp_path / "runs"
    proc = evalh_process(["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", "--seed", "1",
                          "--procs", "2"], tmp_path, env={"PIDS_FILE": str(pids_file)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # some cases done: interrupt mid-run
        if pids_file.exists() and len(pids_file.read_text().splitlines()) >= 8:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    [path] = runs.glob("*.json")
    doc = load(path)
    assert doc["status"] == "partial" and doc["status_reason"] == "interrupted"
    assert 0 < len(doc["suites"]["s"]["cases"]) < 40
    workers = {int(p) for p in pids_file.read_text().split()} - {proc.pid}
    assert len(workers) == 2  # the cases ran in two worker processes, not in the run's
    for pid in workers:  # none outlives the run
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    resumed = evalh_process(["run", "--runs-dir", str(runs), "--config", str(cfg), "-q",
                             "--resume", doc["run_id"], "--procs", "2"], tmp_path,
                            env={"PIDS_FILE": str(pids_file)})
    _, err = resumed.communicate(timeout=120)
    done = load(path)
    assert done["status"] == "complete", err
    assert len(done["suites"]["s"]["cases"]) == 40


def test_the_git_state_is_asked_only_once_the_worker_processes_are_forked(
    mp: MockProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git is asked in a thread, through three subprocesses whose pipes a fork copies: a
    worker forked while they are open holds their write ends until it exits, so the parent's
    read of git's answer waits for the worker (and gives up after 5 s, the run's git state
    lost). So the worker processes are forked first, and git asked after."""
    import os

    from evalh.core.run import procs
    from evalh.core.run import runner as runner_module
    from evalh.models import GitInfo

    parent = os.getpid()
    events: list[str] = []
    real_fork = procs._fork

    def fork(*args: Any, **kwargs: Any) -> Any:
        made = real_fork(*args, **kwargs)
        if os.getpid() == parent:
            events.append("fork")
        return made

    def asked(root: Path) -> GitInfo:
        events.append("git")
        return GitInfo(sha="abc123", dirty=False, branch="main")

    monkeypatch.setenv("EVALH_TEST_KEY", "k")
    monkeypatch.setattr(procs, "_fork", fork)
    monkeypatch.setattr(runner_module, "git_info", asked)
    cfg = _model_project(tmp_path, mp, cases=12)
    result, doc = _run(cfg, tmp_path / "runs", "--seed", "1", "--no-cache", "--procs", "2")
    assert result.exit_code == 0, result.output
    assert events == ["fork", "fork", "git"]
    assert doc is not None and doc["git"] == {"sha": "abc123", "dirty": False, "branch": "main"}
