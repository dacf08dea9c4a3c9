"""The runner keeps numbers, not models (issue 18 item 1): the document it streams from its
journal is byte for byte the one built from every result model, as the runner built it
before (sorted in dataset order, aggregated per suite and arm, metrics, contrasts, sweep,
summary), on suites with arms, repeats, a classification scorer, strata, errors and costs;
a run killed with SIGKILL resumes into the same; the dataset is held as compact JSON."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import defaultdict
from pathlib import Path

import pytest

from evalh.config import load_config
from evalh.core.analysis.contrasts import suite_claims
from evalh.core.analysis.sweep import suite_sweep
from evalh.core.results.aggregate import aggregate
from evalh.core.results.outcome import summarize
from evalh.core.run.entry import run_plan
from evalh.core.run.items import NullObserver
from evalh.core.run.plan import RunPlan, SuitePlan
from evalh.core.run.prepare import RunOptions, prepare_run
from evalh.core.run.retained import not_passed
from evalh.datasets import CaseList, load_dataset
from evalh.models import CaseResult, Run
from evalh.store import RunStore, serialize_run
from tests.runner_project import TARGET_MODULE, TARGET_SOURCE, evalh_process

pytestmark = pytest.mark.slow  # processes, venvs or large runs: minutes on a busy 2-core machine

SUITES = f"""\
[evalh]
concurrency = 4
timeout_s = 10

[suites.armed]
dataset = "data/cases.jsonl"
regime = "stochastic"
repeats = 3
baseline_arm = "right"
target = "{TARGET_MODULE}:parity"
scorers = [
  {{ type = "exact", field = "verdict" }},
  {{ type = "classification", positive = "even", field = "verdict" }},
]

[[suites.armed.arms]]
name = "right"
target = "{TARGET_MODULE}:parity"

[[suites.armed.arms]]
name = "wrong"
target = "{TARGET_MODULE}:wrong"

[[suites.armed.metrics]]
type = "pattern_bias"
terms = ["even"]

[[suites.armed.metrics]]
type = "sycophancy"
terms = ["odd"]

[[suites.armed.contrasts]]
name = "wrong - right"
arm = "wrong"
against = "right"
figures = ["mean_score", "pass_rate", "score:exact"]
rules = ["mean_score <= 0"]

[suites.armed.sweep]
measure = "score"
positive = "even"
grid = {{ threshold = "0:1:0.5" }}

[suites.priced]
dataset = "data/cases.jsonl"
target = "{TARGET_MODULE}:priced"
scorers = [{{ type = "exact", field = "verdict" }}]
"""


def project(root: Path, cases: int = 40) -> Path:
    (root / "data").mkdir(parents=True, exist_ok=True)
    with (root / "data" / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for n in range(cases):
            parity = "even" if n % 2 == 0 else "odd"
            expected = parity if n % 5 != 4 else ("odd" if parity == "even" else "even")
            meta = {"stratum": ["short", "long", "odd"][n % 3], "group": f"g{n % 7}",
                    "wrong_premise": n % 4 == 0, "tags": ["t"] if n % 2 else []}
            fh.write(json.dumps({"id": f"c{n:03d}", "input": {"n": n}, "expected": expected,
                                 "metadata": meta}) + "\n")
    (root / f"{TARGET_MODULE}.py").write_text(TARGET_SOURCE, encoding="utf-8")
    path = root / "evalh.toml"
    path.write_text(SUITES, encoding="utf-8")
    return path


def reference(plan: RunPlan, written: Run, results: dict[str, list[CaseResult]]) -> Run:
    """The run as the runner built it from every result model before it kept numbers only."""
    run = written.model_copy(deep=True)
    for suite in plan.suites:
        s = run.suites[suite.name]
        order = {c.id: i for i, c in enumerate(suite.cases)}
        rs = sorted(results[suite.name], key=lambda r: (order.get(r.case_id, 0), r.arm, r.attempt))
        s.arms = {a.name: aggregate(r for r in rs if r.arm == a.name) for a in suite.arms}
        s.aggregate = aggregate(rs)
        s.metrics, s.contrasts = suite_claims(suite.config, rs, plan.root)
        s.sweep = suite_sweep(suite.name, suite.config, rs, suite.arms[0].name if suite.arms else None)
        s.cases = rs
    run.summary = summarize(run)
    return run


class Capture(NullObserver):
    """Every result model as the runner made it."""

    def __init__(self) -> None:
        self.results: dict[str, list[CaseResult]] = defaultdict(list)

    def on_result(self, suite: SuitePlan, result: CaseResult) -> None:
        self.results[suite.name].append(result)


def test_the_streamed_document_is_the_one_built_from_every_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config_path = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("CRASH_EVERY", "9")  # some cases errored
    store = RunStore(tmp_path / "runs")
    prepared = prepare_run(load_config(config_path), RunOptions(seed=11), store.runs_dir)
    capture = Capture()
    light = run_plan(prepared.plan, store, capture, results=False)
    data = store.path_for(light.run_id).read_bytes()
    full = store.load(light.run_id)

    want = reference(prepared.plan, full, capture.results)
    assert serialize_run(want) == data  # byte for byte: header, aggregates, metrics, result lines
    armed = want.suites["armed"]
    assert {r.status for r in armed.cases} >= {"passed", "failed", "errored"}
    assert len(armed.cases) == 40 * 2 * 3 and armed.metrics and armed.contrasts and armed.sweep
    assert "error" not in armed.sweep, armed.sweep
    assert want.suites["priced"].aggregate.cost_usd
    # what run_plan(results=False) hands back: the same run, without a model per result
    assert all(s.cases == [] for s in light.suites.values())
    assert light.model_dump(exclude={"suites"}) == full.model_dump(exclude={"suites"})
    for name, s in light.suites.items():
        assert s.model_dump(exclude={"cases"}) == full.suites[name].model_dump(exclude={"cases"})
    # what `evalh run` prints its failures from: only the results that did not pass
    failures = not_passed(store, light.run_id).suites["armed"].cases
    assert failures == [r for r in full.suites["armed"].cases if r.status != "passed"] and failures
    assert not_passed(store, light.run_id, limit=3).suites["armed"].cases == failures[:3]


def test_a_dataset_is_held_as_compact_json(tmp_path: Path) -> None:
    project(tmp_path)
    ds = load_dataset(tmp_path / "data" / "cases.jsonl")
    assert isinstance(ds.cases, CaseList) and len(ds.cases) == 40
    lines = (tmp_path / "data" / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    assert [c.model_dump() for c in ds.cases] == [
        __import__("evalh.models", fromlist=["Case"]).Case.model_validate_json(line).model_dump() for line in lines]
    assert ds.cases[-1].id == "c039" and ds.cases[3:5][1].id == "c004" and ds.cases.ids()[7] == "c007"
    long = ds.cases.where(lambda c: c.metadata.stratum == "long")
    assert isinstance(long, CaseList) and [c.id for c in long][:2] == ["c001", "c004"]
    with pytest.raises(IndexError):
        ds.cases[40]


def test_a_run_killed_mid_way_resumes_into_the_document_of_its_results(tmp_path: Path) -> None:
    project(tmp_path, cases=60)
    env = {"SLOW_S": "0.02", "PYTHONPATH": str(tmp_path) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = evalh_process(["run", "--suite", "armed", "--seed", "5", "-q"], tmp_path, env)
    runs = tmp_path / "eval_runs"
    deadline = time.monotonic() + 60
    journal = None
    while time.monotonic() < deadline:
        found = list(runs.glob("*.journal.jsonl")) if runs.is_dir() else []
        if found and found[0].read_bytes().count(b"\n") > 60:
            journal = found[0]
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert journal is not None, "the run ended before it could be killed"
    run_id = journal.name.split(".")[0]
    assert not (runs / f"{run_id}.json").exists()

    resumed = evalh_process(["run", "--resume", run_id, "-q"], tmp_path, env)
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode in (0, 1), err
    store = RunStore(runs)
    run = store.load(run_id)
    assert run.status == "complete" and not journal.exists()
    suite = run.suites["armed"]
    keys = [(r.case_id, r.arm, r.attempt) for r in suite.cases]
    assert len(keys) == len(set(keys)) == 60 * 2 * 3
    config = load_config(tmp_path / "evalh.toml")
    plan = prepare_run(config, RunOptions(suites=["armed"], seed=5), tmp_path / "elsewhere").plan
    want = reference(plan, run, {"armed": suite.cases})
    assert serialize_run(want) == store.path_for(run_id).read_bytes()


def test_evalh_run_lists_its_first_failures_and_counts_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from evalh.cli.main import app

    project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = CliRunner().invoke(app, ["run", "--suite", "armed", "--seed", "2"])
    assert result.exit_code == 0, result.output  # a stochastic suite: failures are figures
    run = RunStore(tmp_path / "eval_runs").load(RunStore(tmp_path / "eval_runs").list_ids()[0])
    bad = [r for r in run.suites["armed"].cases if r.status in ("failed", "errored", "judge_error")]
    assert len(bad) > 20
    assert f"armed: {len(bad)} not passed" in result.stdout
    assert f"… and {len(bad) - 20} more" in result.stdout
    shown = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("  failed ")]
    assert shown == [r.case_id for r in bad if r.status == "failed"][:len(shown)] and shown
