"""The runner core through `evalh run`: repeats, seeded order, errored cases, timeouts, the
run/case context inside a target, arms, budgets, dry runs, failed runs and the progress
bar's manners (--quiet, NO_COLOR)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.config import load_config
from evalh.core.run.entry import run_plan
from evalh.core.run.estimate import estimate_plan
from evalh.core.run.prepare import RunOptions, prepare_run
from evalh.errors import EvalhError
from evalh.models import Case, Score
from evalh.scorers.base import Scorer
from evalh.store import RunStore
from tests.runner_project import TARGET_MODULE, by_triple, evalh_process, load, write_project

runner = CliRunner()


def _run(cfg: Path, runs: Path, *args: str) -> tuple[Any, dict[str, Any] | None]:
    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "-q", *args])
    docs = sorted(runs.glob("*.json")) if runs.is_dir() else []
    return result, (load(docs[-1]) if docs else None)


def _order(calls: Path) -> list[tuple[str, int]]:
    return [(line.split()[0], int(line.split()[2])) for line in calls.read_text().splitlines()]


# ---------------------------------------------------------------------------- repeats, order


def test_repeats_give_attempts_zero_to_n_minus_one(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, cases=5)
    result, doc = _run(cfg, tmp_path / "runs", "--repeats", "3")
    assert result.exit_code == 1, result.output  # c004 is mislabelled by design
    assert doc is not None
    cases = doc["suites"]["s"]["cases"]
    assert len(cases) == 15
    for n in range(5):
        assert sorted(r["attempt"] for r in cases if r["case_id"] == f"c{n:03d}") == [0, 1, 2]
    assert doc["suites"]["s"]["aggregate"]["n"] == 15
    assert doc["config"]["run_options"] == {"repeats": 3}


def test_seeded_shuffle_is_recorded_and_reproducible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = write_project(tmp_path, cases=20, concurrency=1)
    orders = []
    for i, seed in enumerate(["42", "42", "43"]):
        calls = tmp_path / f"calls{i}.txt"
        monkeypatch.setenv("CALLS_FILE", str(calls))
        result, doc = _run(cfg, tmp_path / f"runs{i}", "--seed", seed, "--repeats", "2")
        assert result.exit_code == 1, result.output
        assert doc is not None and doc["seed"] == int(seed) and doc["config"]["seed"] == int(seed)
        orders.append(_order(calls))
        # the document lists results in dataset order, whatever order they ran in
        assert [(r["case_id"], r["attempt"]) for r in doc["suites"]["s"]["cases"]] == sorted(orders[-1])
    assert orders[0] == orders[1], "same seed, same order"
    assert orders[0] != orders[2], "another seed shuffles differently"
    assert orders[0] != sorted(orders[0]), "the order is shuffled, not the file's"


def test_seed_from_config_when_not_given(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, cases=3)
    cfg.write_text(cfg.read_text().replace("[evalh]\n", "[evalh]\nseed = 99\n"))
    _, doc = _run(cfg, tmp_path / "runs")
    assert doc is not None and doc["seed"] == 99


# ---------------------------------------------------------------------------- errored cases


def test_a_crashing_target_is_errored_never_a_pass(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, cases=5, target="crash")
    result, doc = _run(cfg, tmp_path / "runs")
    assert result.exit_code == 1, result.output
    assert doc is not None
    for r in doc["suites"]["s"]["cases"]:
        assert r["status"] == "errored" and r["score"] is None and r["scores"] == []
        assert r["error"] == {"type": "RuntimeError", "message": "the product fell over"}
    agg = doc["suites"]["s"]["aggregate"]
    assert (agg["errored"], agg["passed"], agg["failed"]) == (5, 0, 0)
    assert agg["pass_rate"] is None and agg["pass_rate_denominator"] == 0
    assert agg["error_rate"] == 1.0
    assert doc["summary"]["deterministic_ok"] is False


@pytest.mark.parametrize("target", ["sleepy", "sleepy_async"])
def test_a_timeout_is_errored_with_timeout_error(tmp_path: Path, target: str) -> None:
    cfg = write_project(tmp_path, cases=2, target=target)
    result, doc = _run(cfg, tmp_path / "runs", "--timeout", "0.05")
    assert result.exit_code == 1, result.output
    assert doc is not None
    for r in doc["suites"]["s"]["cases"]:
        assert r["status"] == "errored"
        assert r["error"]["type"] == "TimeoutError"
        assert "within 0.05s" in r["error"]["message"]
        assert r["latency_ms"] >= 50
    assert doc["config"]["run_options"] == {"timeout_s": 0.05}


@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_a_hung_sync_call_does_not_time_out_the_cases_after_it(tmp_path: Path, seed: str) -> None:
    """At --concurrency 1 the hung call keeps its thread after its case times out; the next
    cases get their own thread and their full timeout, whichever order the seed gives."""
    cfg = write_project(tmp_path, cases=3, target="hangs_on_zero", concurrency=1)
    # the others answer at once: 3 s is a margin no busy machine uses up (0.5 s was not)
    result, doc = _run(cfg, tmp_path / "runs", "--timeout", "3", "--seed", seed)
    assert doc is not None, result.output
    status = {r["case_id"]: r["status"] for r in doc["suites"]["s"]["cases"]}
    assert status == {"c000": "errored", "c001": "passed", "c002": "passed"}, status


def test_a_hung_sync_call_does_not_keep_the_process_alive(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, cases=2, target="hangs_on_zero", concurrency=2)
    proc = evalh_process(["run", "--config", str(cfg), "--runs-dir", str(tmp_path / "runs"), "-q",
                          "--timeout", "0.5"], tmp_path, env={"HANG_S": "120"})
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("evalh run waited for a hung target call after writing its run") from None
    assert proc.returncode == 1, err  # one case errored: a red gate, and the process ended
    [doc_path] = (tmp_path / "runs").glob("*.json")
    assert load(doc_path)["status"] == "complete"


def test_sync_targets_get_as_many_threads_as_the_concurrency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 16 calls must be in flight at once: more than asyncio's default pool (CPUs + 4) holds
    monkeypatch.setenv("BARRIER", "16")
    cfg = write_project(tmp_path, cases=16, target="together", concurrency=16)
    result, doc = _run(cfg, tmp_path / "runs")
    assert doc is not None, result.output
    errors = [r["error"] for r in doc["suites"]["s"]["cases"] if r["error"]]
    assert errors == []
    assert doc["suites"]["s"]["aggregate"]["passed"] == 13  # c004, c009, c014 mislabelled


# ---------------------------------------------------------------------------- who is running


@pytest.mark.parametrize("target", ["who", "who_async"])
def test_run_and_case_ids_are_visible_inside_the_target(tmp_path: Path, target: str) -> None:
    cfg = write_project(tmp_path, cases=4, target=target, concurrency=1)
    cfg.write_text(cfg.read_text().replace('field = "verdict" }]', 'field = "verdict" }]\nrepeats = 2'))
    result, doc = _run(cfg, tmp_path / "runs")
    assert doc is not None, result.output
    run_id = doc["run_id"]
    for r in doc["suites"]["s"]["cases"]:
        out = r["output"]
        assert out["ctx"] == [run_id, "s", r["case_id"], "default", r["attempt"]]
        assert out["env_run_id"] == run_id
        assert out["env_case_id"] == r["case_id"]  # exact at concurrency 1
    # the ids belong to the run: once it is over, the process environment is as it was
    assert "EVALH_RUN_ID" not in os.environ and "EVALH_CASE_ID" not in os.environ


@pytest.mark.parametrize("target", ["who", "who_async"])
def test_with_cases_in_flight_together_the_environment_never_names_another_case(
    tmp_path: Path, target: str
) -> None:
    """The environment is the process's: at concurrency > 1 it cannot say which case is
    running, so EVALH_CASE_ID is absent; the context variable stays exact."""
    cfg = write_project(tmp_path, cases=16, target=target, concurrency=8)
    result, doc = _run(cfg, tmp_path / "runs")
    assert doc is not None, result.output
    for r in doc["suites"]["s"]["cases"]:
        out = r["output"]
        assert out["ctx"] == [doc["run_id"], "s", r["case_id"], "default", r["attempt"]]
        assert out["env_run_id"] == doc["run_id"]
        assert out["env_case_id"] is None


# ---------------------------------------------------------------------------- arms


def test_arms_carry_their_name_and_get_their_own_aggregates(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, cases=10)
    text = cfg.read_text().replace(
        'scorers = [{ type = "exact", field = "verdict" }]',
        'scorers = [{ type = "exact", field = "verdict" }]\nbaseline_arm = "right"\n'
        'arms = [{ name = "wrong", target = "evalh_runner_target:wrong" },\n'
        '        { name = "right", target = "evalh_runner_target:parity" }]',
    )
    cfg.write_text(text)
    result, doc = _run(cfg, tmp_path / "runs")
    assert doc is not None, result.output
    suite = doc["suites"]["s"]
    assert suite["baseline_arm"] == "right"
    assert list(suite["arms"]) == ["right", "wrong"]
    triples = by_triple(doc)
    assert len(triples) == 20
    assert {arm for (_, arm, _) in triples} == {"right", "wrong"}
    right, wrong = suite["arms"]["right"], suite["arms"]["wrong"]
    assert (right["n"], right["passed"], right["failed"]) == (10, 8, 2)  # c004, c009 mislabelled
    assert (wrong["n"], wrong["passed"], wrong["failed"]) == (10, 2, 8)
    assert suite["aggregate"]["n"] == 20 and suite["aggregate"]["passed"] == 10


# ---------------------------------------------------------------------------- budgets


@pytest.mark.parametrize(
    ("flag", "value", "ran", "reason"),
    [
        ("--max-cost", "0.05", 5, "cost budget reached: $0.0500 of $0.0500"),
        ("--max-tokens", "400", 3, "token budget reached: 450 of 400 tokens"),
    ],
)
def test_budget_reached_no_new_case_starts_and_the_run_is_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str, value: str, ran: int, reason: str
) -> None:
    cfg = write_project(tmp_path, cases=12, target="priced", concurrency=1)
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("CALLS_FILE", str(calls))
    result, doc = _run(cfg, tmp_path / "runs", flag, value)
    assert doc is not None, result.output
    assert doc["status"] == "partial" and doc["status_reason"] == reason
    assert result.exit_code == 1, "a run that stopped early is never a green gate"
    assert len(doc["suites"]["s"]["cases"]) == ran
    assert len(calls.read_text().splitlines()) == ran, "no case started past the budget"
    agg = doc["suites"]["s"]["aggregate"]
    assert agg["tokens_in"] == 100 * ran and agg["tokens_out"] == 50 * ran
    assert agg["cost_usd"] == pytest.approx(0.01 * ran)
    assert (tmp_path / "runs" / f"{doc['run_id']}.journal.jsonl").exists(), "kept for --resume"


def test_a_cost_budget_stops_at_the_first_reply_it_cannot_price(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unpriced model's replies cost null, not 0: under --max-cost the run stops (partial,
    saying why) instead of overrunning the budget unseen; without a budget it completes."""
    cfg = write_project(tmp_path, cases=6, target="unpriced", concurrency=1)
    monkeypatch.setenv("CALLS_FILE", str(tmp_path / "calls.txt"))
    result, doc = _run(cfg, tmp_path / "runs", "--max-cost", "1")
    assert doc is not None, result.output
    assert doc["status"] == "partial" and result.exit_code == 1
    assert doc["status_reason"] == (
        "cost budget cannot be kept: 1 reply used tokens at no known price (a model missing from "
        "[prices] in evalh.toml, or a target reporting tokens without its model)"
    )
    assert len(doc["suites"]["s"]["cases"]) == 1
    assert doc["suites"]["s"]["cases"][0]["cost_usd"] is None
    result, doc = _run(cfg, tmp_path / "runs2")
    assert doc is not None and doc["status"] == "complete" and len(doc["suites"]["s"]["cases"]) == 6


def test_budget_from_config(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, cases=12, target="priced", concurrency=1)
    cfg.write_text(cfg.read_text().replace("[evalh]\n", "[evalh]\nmax_cost_usd = 0.03\n"))
    _, doc = _run(cfg, tmp_path / "runs")
    assert doc is not None and doc["status"] == "partial"
    assert len(doc["suites"]["s"]["cases"]) == 3


# ---------------------------------------------------------------------------- a run that fails


class _RefusingScorer(Scorer):
    """A scorer whose suite-level `prepare` refuses, as a judge failing calibration does
    (or, with `bug`, fails as a bug would)."""

    kind: ClassVar[str] = "deterministic"

    def __init__(self, bug: bool = False) -> None:
        from evalh.scorers.match import ExactConfig

        self.config = ExactConfig(type="exact", name="refuses")
        self.bug = bug

    async def prepare(self, suite: Any, services: Any) -> None:
        if self.bug:
            raise RuntimeError("calibration failed: accuracy 0.40 below 0.80")
        raise EvalhError("calibration failed: accuracy 0.40 below 0.80")

    async def score(self, case: Case, output: Any, ctx: Any) -> Score:  # pragma: no cover
        raise AssertionError("never reached")


def test_a_run_that_stops_on_an_error_is_written_failed_never_complete(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, cases=3)
    config = load_config(cfg)
    runs = tmp_path / "runs"
    prepared = prepare_run(config, RunOptions(), runs)
    prepared.plan.suites[0].scorers.append(_RefusingScorer(bug=True))
    with pytest.raises(RuntimeError, match="calibration failed"):
        run_plan(prepared.plan, RunStore(runs))
    doc = load(runs / f"{prepared.plan.run_id}.json")
    assert doc["status"] == "failed"
    assert doc["status_reason"] == "RuntimeError: calibration failed: accuracy 0.40 below 0.80"
    assert (runs / f"{prepared.plan.run_id}.journal.jsonl").exists()


def test_a_refusal_before_any_case_writes_nothing(tmp_path: Path) -> None:
    """A refusal (exit 2) before the first case ran: no `failed` document, no journal."""
    cfg = write_project(tmp_path, cases=3)
    runs = tmp_path / "runs"
    prepared = prepare_run(load_config(cfg), RunOptions(), runs)
    prepared.plan.suites[0].scorers.append(_RefusingScorer())
    with pytest.raises(EvalhError, match="calibration failed"):
        run_plan(prepared.plan, RunStore(runs))
    assert sorted(p.name for p in runs.iterdir()) == []


def test_a_run_leaves_the_collector_as_it_found_it(tmp_path: Path) -> None:
    """The runner freezes the heap for the run and unfreezes it after, but a host's own
    frozen objects (frozen before forking workers) stay frozen."""
    import gc

    cfg = write_project(tmp_path, cases=3)
    runs = tmp_path / "runs"
    assert gc.get_freeze_count() == 0
    run_plan(prepare_run(load_config(cfg), RunOptions(), runs).plan, RunStore(runs))
    assert gc.get_freeze_count() == 0  # unfrozen after the run
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        run_plan(prepare_run(load_config(cfg), RunOptions(), runs).plan, RunStore(runs))
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


# ---------------------------------------------------------------------------- dry run


MODEL_SUITE = """
[prices]
"m-test" = { input = 1.0, output = 2.0 }

[suites.m]
dataset = "data/s.jsonl"
tier = 1
scorers = [{ type = "exact" }]

[suites.m.target]
kind = "anthropic"
model = "m-test"
base_url = "http://127.0.0.1:9"
api_key_env = "EVALH_TEST_FAKE_KEY"
prompt = "Is {{ input.n }} even? Answer in one word."
max_tokens = 100
"""


def test_suites_run_cheapest_first_within_a_tier(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same tier: the free Python suite, then the cheaper model suite, then the dearer one,
    then the one whose model has no price; a lower tier still goes first whatever it costs."""
    monkeypatch.setenv("EVALH_TEST_FAKE_KEY", "k")
    cfg = write_project(tmp_path, cases=4)
    dear = MODEL_SUITE.replace("[prices]\n", "").replace("[suites.m", "[suites.a_dear").replace(
        "tier = 1", "tier = 1").replace("max_tokens = 100", "max_tokens = 4000")
    cheap = MODEL_SUITE.replace("[prices]\n", "").replace("[suites.m", "[suites.b_cheap").replace(
        '"m-test" = { input = 1.0, output = 2.0 }\n', "")
    unpriced = cheap.replace("b_cheap", "a_unpriced").replace('model = "m-test"', 'model = "no-price"')
    free = f'\n[suites.z_free]\ndataset = "data/s.jsonl"\ntier = 1\ntarget = "{TARGET_MODULE}:parity"\n' \
           'scorers = [{ type = "exact" }]\n'
    first = free.replace("z_free", "zz_first").replace("tier = 1", "tier = 0")
    text = cfg.read_text().replace("[suites.s]", "[prices]\n\"m-test\" = { input = 1.0, output = 2.0 }\n\n[suites.s]")
    cfg.write_text(text + dear.replace('"m-test" = { input = 1.0, output = 2.0 }\n', "")
                   + cheap + unpriced + free + first)
    prepared = prepare_run(load_config(cfg), RunOptions(dry_run=True), tmp_path / "runs")
    order = [s.name for s in prepared.plan.suites]
    assert order == ["s", "zz_first", "z_free", "b_cheap", "a_dear", "a_unpriced"], order
    assert prepared.plan.options["suites"] == order


def test_a_template_that_fails_on_a_case_does_not_stop_the_ordering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ordering estimates every case's prompt; a case the template cannot render is the
    run's to error, not the planner's: the suite is placed last in its tier."""
    monkeypatch.setenv("EVALH_TEST_FAKE_KEY", "k")
    cfg = write_project(tmp_path, cases=4)
    broken = MODEL_SUITE.replace("[prices]\n", "").replace('"m-test" = { input = 1.0, output = 2.0 }\n', "")
    broken = broken.replace("[suites.m", "[suites.a_broken").replace("tier = 1", "tier = 0").replace(
        "{{ input.n }}", "{{ input.missing.deeper }}")
    cfg.write_text(cfg.read_text() + broken)
    prepared = prepare_run(load_config(cfg), RunOptions(dry_run=True), tmp_path / "runs")
    assert [s.name for s in prepared.plan.suites] == ["s", "a_broken"]


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_TEST_FAKE_KEY", "not-a-real-key")
    cfg = write_project(tmp_path, cases=12, extra=MODEL_SUITE)
    runs = tmp_path / "runs"
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))

    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "--dry-run",
                                 "--repeats", "2", "--json"])
    assert result.exit_code == 0, result.output
    est = json.loads(result.stdout)
    assert [s["name"] for s in est["suites"]] == ["s", "m"], "cheapest (lowest tier) first"
    s, m = est["suites"]
    assert (s["cases"], s["arms"], s["repeats"], s["items"]) == (12, ["default"], 2, 24)
    assert s["total"]["requests"] == 24 and s["total"]["tokens_in"] is None  # not a model
    assert s["total"]["cost_usd"] is None
    prompt_tokens = sum(math.ceil(len(f"Is {n} even? Answer in one word.") / 4) for n in range(12))
    assert m["target"]["tokens_in"] == 2 * prompt_tokens
    assert m["target"]["tokens_out_max"] == 24 * 100
    assert m["total"]["cost_usd"] == pytest.approx((2 * prompt_tokens * 1.0 + 2400 * 2.0) / 1e6)
    assert est["items"] == 48 and est["total"]["requests"] == 48

    result = runner.invoke(app, ["run", "--config", str(cfg), "--runs-dir", str(runs), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "dry run" in result.stdout and "upper bound" in result.stdout
    assert re.search(r"│ m +│ +12x1x1=12 │", result.stdout), result.stdout
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before, "nothing written"


class _Judge(Scorer):
    kind: ClassVar[str] = "judge"

    def __init__(self, name: str, per_case: int | None = None, estimate: bool = False) -> None:
        from evalh.scorers.match import ExactConfig

        self.config = ExactConfig(type="exact", name=name)
        if per_case is not None:
            self.requests_per_case = lambda: per_case
        if estimate:
            self.estimate = lambda case: [("m-judge", 200, 30), ("m-unpriced", 200, 30)]


def test_estimate_counts_judge_requests(tmp_path: Path) -> None:
    cfg = write_project(tmp_path, cases=5)
    cfg.write_text(cfg.read_text() + '\n[prices]\n"m-judge" = { input = 3.0, output = 15.0 }\n')
    prepared = prepare_run(load_config(cfg), RunOptions(repeats=2), tmp_path / "runs")
    suite = prepared.plan.suites[0]
    suite.scorers += [_Judge("counted", per_case=3), _Judge("estimated", estimate=True), _Judge("silent")]
    est = estimate_plan(prepared.plan).suites[0]
    assert est.items == 10
    assert est.judges.requests == 10 * 3 + 10 * 2
    assert est.judges.requests_unknown == 10
    assert est.judges.tokens_in == 10 * 400 and est.judges.tokens_out_max == 10 * 60
    assert est.judges.cost_usd == pytest.approx(10 * (200 * 3.0 + 30 * 15.0) / 1e6)
    assert est.judges.unpriced == 10
    assert est.total.requests == 10 + 50


# ---------------------------------------------------------------------------- progress bar

_COLOR = re.compile(r"\x1b\[([0-9;]*)m")


def _has_color(text: str) -> bool:
    for params in _COLOR.findall(text):
        codes = [int(p) for p in params.split(";") if p]
        if any(30 <= c <= 38 or 90 <= c <= 97 or 40 <= c <= 48 for c in codes):
            return True
    return False


def test_progress_respects_quiet_and_no_color(tmp_path: Path) -> None:
    write_project(tmp_path, cases=6)
    args = ["run", "--runs-dir", str(tmp_path / "runs")]
    # FORCE_COLOR makes rich treat the pipe as a colour terminal, as a real one would be
    procs = {
        "color": evalh_process(args, tmp_path, {"FORCE_COLOR": "1", "NO_COLOR": ""}),
        "no_color": evalh_process(args, tmp_path, {"FORCE_COLOR": "1", "NO_COLOR": "1"}),
        "quiet": evalh_process([*args, "--quiet"], tmp_path, {"FORCE_COLOR": "1", "NO_COLOR": ""}),
    }
    out = {name: p.communicate(timeout=60) for name, p in procs.items()}
    assert all(p.returncode == 1 for p in procs.values()), out  # two mislabelled cases fail
    assert "6/6" in out["color"][1] and _has_color(out["color"][1]), "sanity: colour is on"
    assert "6/6" in out["no_color"][1] and not _has_color(out["no_color"][1])
    assert not _has_color(out["no_color"][0])
    assert out["quiet"] == ("", ""), "--quiet: no progress, no table, no 'wrote' line"
