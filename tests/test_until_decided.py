"""`evalh run --compare-baseline --until-decided` end to end, through the CLI, on the reference
workload (docs/methodology.md, "Deciding in rounds"): a python target drawing each case's
pass from its own probability (seeded by the run's seed, case and attempt), three baseline
runs of three repeats pooled, then the candidate in rounds. The target counts its own calls.

The seeds are fixed, so each test is one deterministic draw: with them the unchanged
candidate is `flat` after round 2 (150 calls). How often that happens over many draws (96 %
at the default budget, at a median of 250 calls) is measured by `bench/sequential_bench.py`, not here."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from evalh.cli.main import app

TOML = """\
[evalh]
concurrency = 4
timeout_s = 5

[suites.ref]
dataset = "data/ref.jsonl"
target = "refwork_target:answer"
regime = "stochastic"
scorers = [{ type = "exact", field = "verdict" }]
"""

TARGET = '''
import hashlib
import os
from pathlib import Path

from evalh.context import current

CALLS = Path(__file__).with_name("calls.txt")


def answer(inp):
    """Right with the case's probability `p` (lowered by `drop` when EVALH_TEST_DROP is set),
    drawn from a hash of the attempt's seed (from the run's `--seed`), the case and the
    attempt: another draw each time, the same in every test run."""
    ctx = current()
    with CALLS.open("a") as fh:
        fh.write(f"{ctx.run_id} {ctx.case_id} {ctx.attempt}\\n")
    p = inp["p"] - (inp.get("drop", 0.0) if os.environ.get("EVALH_TEST_DROP") else 0.0)
    h = hashlib.sha256(f"{ctx.seed}/{ctx.case_id}/{ctx.attempt}".encode()).digest()
    u = int.from_bytes(h[:8], "big") / 2**64
    return {"verdict": "right" if u < p else "wrong"}
'''


def _cases() -> list[dict[str, Any]]:
    """The reference workload: 60 cases at 0.98, 15 at 0.02, 25 uniform on 0.2-0.8; with
    EVALH_TEST_DROP, 40 of the 0.98 cases fall to 0.48 (20 pp in all, four times the
    allowance, concentrated on two fifths of the cases)."""
    rng = random.Random(26)
    probs = [0.98] * 60 + [0.02] * 15 + [rng.uniform(0.2, 0.8) for _ in range(25)]
    return [{"id": f"c{i:03d}", "input": {"p": p, "drop": 0.5 if i < 40 else 0.0},
             "expected": "right"} for i, p in enumerate(probs)]


@pytest.fixture
def ref(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "evalh.toml").write_text(TOML)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ref.jsonl").write_text(
        "\n".join(json.dumps(c) for c in _cases()) + "\n")
    (tmp_path / "refwork_target.py").write_text(TARGET)
    yield tmp_path
    sys.modules.pop("refwork_target", None)


def cli(project: Path, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--config", str(project / "evalh.toml"),
                                    "--runs-dir", str(project / "runs")])


def _baseline(project: Path) -> list[str]:
    for seed in (1, 2, 3):
        r = cli(project, "run", "-q", "--repeats", "3", "--seed", str(seed))
        assert r.exit_code in (0, 1), r.output
    ids = sorted(p.stem for p in (project / "runs").glob("*.json"))
    assert len(ids) == 3
    assert cli(project, "baseline", "set", *ids).exit_code == 0
    assert cli(project, "baseline", "noise").exit_code == 0
    (project / "calls.txt").unlink()
    return ids


def _candidate(project: Path, base: list[str], *args: str) -> tuple[Result, dict[str, Any]]:
    r = cli(project, "run", "--compare-baseline", "--until-decided", "--seed", "8", "--json", *args)
    new = [p for p in (project / "runs").glob("*.json") if p.stem not in base]
    assert len(new) == 1, r.output
    return r, json.loads(new[0].read_bytes())


def _calls(project: Path) -> list[str]:
    return (project / "calls.txt").read_text().splitlines()


def test_unchanged_candidate_is_flat_within_the_budget_and_every_round_is_recorded(ref: Path) -> None:
    base = _baseline(ref)
    r, doc = _candidate(ref, base)
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    row = next(m for m in out["comparison"]["suites"]["ref"]["metrics"] if m["name"] == "pass_rate")
    assert row["verdict"] == "flat" and row["estimand"] == "fixed-suite"
    assert row["rounds"] == len(doc["rounds"]) and "confidence sequence" in row["method"]
    assert out["rounds"] == doc["rounds"]
    calls = _calls(ref)
    results = doc["suites"]["ref"]["cases"]
    # Every call the target saw is one result of the run, and the rounds add up to them.
    assert len(calls) == len(results) == doc["rounds"][-1]["calls_so_far"]
    assert sum(rd["calls"] for rd in doc["rounds"]) == len(calls)
    assert 100 <= len(calls) <= 800  # never above the default budget, 8 x the cases
    for k, rd in enumerate(doc["rounds"], start=1):
        assert rd["round"] == k and rd["plain_run_calls"] == 100
        assert rd["fixed_design_calls"] == rd["suites"]["ref"]["planned_attempts"] == 800
        # the looks fall at 1, 1.5, 2, ... attempts a case: 100, 150, 200, ... calls
        assert rd["calls_so_far"] == [100, 150, 200, 250, 300, 400, 500, 600, 800][k - 1]
        assert (rd["suites"]["ref"]["rho"], rd["suites"]["ref"]["rho_flat"]) == (3.0, 1.0)
    last = doc["rounds"][-1]
    assert last["suites"]["ref"]["decided_at"] == len(doc["rounds"])
    assert last["suites"]["ref"]["rows"]["pass_rate"] == "flat"
    # More attempts went to the cases whose baseline varied: the 0.98 and 0.02 cases that
    # never varied got fewer than the unstable ones.
    per_case: dict[str, int] = {}
    for line in calls:
        per_case[line.split()[1]] = per_case.get(line.split()[1], 0) + 1
    unstable = [per_case[f"c{i:03d}"] for i in range(75, 100)]
    assert max(unstable) > 1 and all(per_case[c] >= 1 for c in per_case)
    # Every output labels the row with its estimand; --estimand population asks the other.
    # A later `evalh compare` of the run decides with the run's own sequence, not fixed-n.
    again = json.loads(cli(ref, "compare", "--json").stdout)
    row = next(m for m in again["suites"]["ref"]["metrics"] if m["name"] == "pass_rate")
    assert row["verdict"] == "flat" and row["rounds"] == len(doc["rounds"])
    md = cli(ref, "compare", "--format", "markdown")
    assert md.exit_code == 0 and "estimand: fixed-suite" in md.stdout
    pop = json.loads(cli(ref, "compare", "--json", "--estimand", "population").stdout)
    row = next(m for m in pop["suites"]["ref"]["metrics"] if m["name"] == "pass_rate")
    assert row["estimand"] == "population" and row["rounds"] is None
    bad = cli(ref, "compare", "--estimand", "sample")
    assert bad.exit_code == 2 and "--estimand" in bad.stderr


def test_a_concentrated_drop_is_regressed_and_exits_1(ref: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = _baseline(ref)
    monkeypatch.setenv("EVALH_TEST_DROP", "1")
    r, doc = _candidate(ref, base)
    assert r.exit_code == 1, r.output
    suite = json.loads(r.stdout)["comparison"]["suites"]["ref"]
    assert suite["verdict"] == "regressed"
    assert len(_calls(ref)) == doc["rounds"][-1]["calls_so_far"] <= 800
    assert doc["rounds"][-1]["suites"]["ref"]["rows"]["pass_rate"] == "regressed"


def test_until_decided_needs_compare_baseline(ref: Path) -> None:
    r = cli(ref, "run", "--until-decided")
    assert r.exit_code == 2
    assert "--compare-baseline" in r.stderr and "Traceback" not in r.output
    r = cli(ref, "run", "--until-decided", "--compare-baseline", "--repeats", "3")
    assert r.exit_code == 2 and "--repeats" in r.stderr
    assert not (ref / "runs").exists() or not list((ref / "runs").glob("*.json"))


STOP = '''

_real_answer = answer
_one_at_a_time = __import__("threading").Lock()


def answer(inp):  # noqa: F811
    """Ctrl-C at the STOP_AT-th call (as a person would, mid-round). The calls count and
    log one at a time: two calls in flight reading the count together would both miss it."""
    stop = os.environ.get("EVALH_TEST_STOP_AT")
    with _one_at_a_time:
        if stop and CALLS.is_file() and len(CALLS.read_text().splitlines()) + 1 == int(stop):
            with CALLS.open("a") as fh:  # appended: a rewrite would drop a line another call wrote meanwhile
                fh.write("interrupted\\n")
            raise KeyboardInterrupt
        return _real_answer(inp)
'''


def _interrupted(ref: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[list[str], Path]:
    """The reference project's baseline, then a run in rounds (seed 8, `args` added)
    interrupted by Ctrl-C at the 125th call, mid-round 2: the baseline's run ids and the
    partial run's document."""
    with (ref / "refwork_target.py").open("a") as fh:
        fh.write(STOP)
    base = _baseline(ref)
    monkeypatch.setenv("EVALH_TEST_STOP_AT", "125")
    r = cli(ref, "run", "-q", "--compare-baseline", "--until-decided", *args, "--seed", "8")
    assert r.exit_code == 130, r.output
    (partial,) = [p for p in (ref / "runs").glob("*.json") if p.stem not in base]
    monkeypatch.delenv("EVALH_TEST_STOP_AT")
    return base, partial


def test_an_interrupted_run_resumes_at_its_round_and_reaches_the_same_decision(
    ref: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted in round 2 (call 125 of the round's 100-150), then `--resume`d: the
    schedule is rebuilt from the same baseline, round 2 is finished with its finished
    attempts kept, and the looks fall at the same rounds, so the decision, the rounds and
    the results are those of the uninterrupted run of the same seed (the first test: flat
    after round 2, at 150 calls)."""
    _, partial = _interrupted(ref, monkeypatch)
    doc = json.loads(partial.read_bytes())
    assert doc["status"] == "partial" and [rd["round"] for rd in doc["rounds"]] == [1]
    r = cli(ref, "run", "--resume", partial.stem, "--compare-baseline", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(partial.read_bytes())
    assert doc["status"] == "complete"
    assert [rd["round"] for rd in doc["rounds"]] == [1, 2]
    assert doc["rounds"][-1]["suites"]["ref"]["rows"]["pass_rate"] == "flat"
    keys = [(c["case_id"], c["attempt"]) for c in doc["suites"]["ref"]["cases"]]
    assert len(keys) == len(set(keys)) == doc["rounds"][-1]["calls_so_far"]
    # the same results as the uninterrupted run of this seed (150 calls: the first test)
    calls = [line for line in _calls(ref) if line != "interrupted"]
    assert len(set(calls)) == len(keys) == 150
    assert len(calls) - len(set(calls)) <= 4  # at most the calls in flight ran twice


def test_run_fail_on_inconclusive_exits_3_only_when_the_run_passed() -> None:
    from compare_factory import binary_runs

    from evalh.core.compare.decide import compare_runs
    from evalh.core.request.run_request import RunRequest, gate_code

    open_question = compare_runs(*binary_runs(30, 0.8, 0.7, seed=15))
    assert open_question.inconclusive_worse and not open_question.fails_gate
    asked = RunRequest(compare_baseline=True, fail_on_inconclusive=True)
    assert gate_code(0, open_question, asked) == 3
    assert gate_code(0, open_question, RunRequest(compare_baseline=True)) == 0
    assert gate_code(1, open_question, asked) == 1  # the run's own failure stands
    regressed = compare_runs(*binary_runs(2000, 0.8, 0.65, seed=12))
    assert gate_code(0, regressed, asked) == 1


def test_fail_on_inconclusive_needs_compare_baseline(ref: Path) -> None:
    r = cli(ref, "run", "--fail-on-inconclusive")
    assert r.exit_code == 2 and "--compare-baseline" in r.stderr


def test_min_coverage_and_allow_removed_suite_reach_every_round(ref: Path) -> None:
    """--allow-removed-suite and --min-coverage are the comparison's settings with or
    without rounds: each round looks with them (they were dropped in rounds: a suite left
    out on purpose failed the gate)."""
    (ref / "evalh.toml").write_text(TOML + TOML.split("[suites.ref]")[1].join(["\n[suites.two]", ""]))
    base = _baseline(ref)
    r, _ = _candidate(ref, base, "--suite", "ref")
    assert r.exit_code == 1 and "allow-removed-suite two" in r.stdout
    for p in (ref / "runs").glob("*.json"):
        if p.stem not in base:
            p.unlink()
    r, _ = _candidate(ref, base, "--suite", "ref", "--allow-removed-suite", "two", "--min-coverage", "0.95")
    out = json.loads(r.stdout)
    assert out["comparison"]["policy"]["min_coverage"] == 0.95
    assert out["comparison"]["policy"]["allow_removed_suites"] == ["two"]
    assert r.exit_code == 0, r.stdout
    assert out["comparison"]["suites"]["two"]["verdict"] == "removed"


def test_the_calls_an_unchanged_candidate_is_expected_to_spend_are_shown_up_front(ref: Path) -> None:
    """Issue 26, item 4: `run --dry-run`, `baseline noise` and compare say how many calls
    --until-decided expects to spend on an unchanged candidate (from the allocation and the
    rounds' boundaries, `stats.sequential.unchanged_calls`), within its budget."""
    base = _baseline(ref)
    dry = cli(ref, "run", "--dry-run", "--compare-baseline", "--until-decided", "--json")
    assert dry.exit_code == 0, dry.output
    exp = json.loads(dry.stdout)["suites"][0]["until_decided"]
    assert exp["plain"] == 100 and exp["budget"] == 800
    assert 100 <= exp["median_calls"] <= 250  # the goal: an unchanged candidate, ≤ 2.5x
    # the plan's rows are the budget's: 800 items (it counted one attempt a case, 100)
    planned = json.loads(dry.stdout)["suites"][0]
    assert planned["budget"] is True and planned["items"] == 800
    assert planned["repeats"] >= 2  # the most attempts any case gets
    assert planned["detectable"]["candidate_attempts"] == 8.0
    text = cli(ref, "run", "--dry-run", "--compare-baseline", "--until-decided").stdout
    line = (f"--until-decided: an unchanged candidate is expected to stop after "
            f"{exp['median_calls']:.0f} calls (median")
    assert line in text and "never above 800" in text
    assert "100x1x1.." in text and "the whole budget" in " ".join(text.split())
    capped = json.loads(cli(ref, "run", "--dry-run", "--compare-baseline", "--until-decided",
                            "--max-attempts", "150", "--json").stdout)["suites"][0]["until_decided"]
    assert capped["budget"] == 150 and capped["median_calls"] <= 150
    plain = cli(ref, "run", "--dry-run", "--compare-baseline")  # not in rounds: not said
    assert plain.exit_code == 0 and "until-decided" not in plain.stdout
    noise = json.loads(cli(ref, "baseline", "noise", "--json").stdout)
    assert noise["suites"]["ref"]["until_decided"] == exp  # one plan, one figure
    assert line in cli(ref, "baseline", "noise").stdout.replace("\n", " ")
    r, doc = _candidate(ref, base)
    assert r.exit_code == 0 and doc["rounds"][-1]["calls_so_far"] <= exp["budget"]
    shown = cli(ref, "compare").stdout
    assert "expected to stop after" in " ".join(shown.split())
    doc = json.loads(cli(ref, "compare", "--json").stdout)
    assert doc["baseline_noise"]["suites"]["ref"]["until_decided"] == exp
    assert line in " ".join(cli(ref, "compare", "--format", "markdown").stdout.split())


def test_a_budget_below_the_cases_is_refused_before_anything_runs(ref: Path) -> None:
    """--max-attempts 50 over 100 cases cannot be kept (every case gets one attempt): it
    was raised to 100 silently and the run spent twice the budget it was given."""
    base = _baseline(ref)
    r = cli(ref, "run", "--compare-baseline", "--until-decided", "--max-attempts", "50")
    assert r.exit_code == 2
    assert "--max-attempts 50 is below suite ref's 100 cases" in r.stderr
    assert not (ref / "calls.txt").exists()
    assert sorted(p.stem for p in (ref / "runs").glob("*.json")) == sorted(base)
    dry = cli(ref, "run", "--dry-run", "--compare-baseline", "--until-decided", "--max-attempts", "50")
    assert dry.exit_code == 2 and "--max-attempts 50" in dry.stderr
    ok = cli(ref, "run", "--compare-baseline", "--until-decided", "--max-attempts", "100", "-q")
    assert ok.exit_code in (0, 1, 3) and len(_calls(ref)) == 100


def test_a_declared_gating_row_that_nothing_measured_is_said(ref: Path) -> None:
    """`gate = ["pass_rate", "cost_usd"]` on a target that reports no cost: the cost row
    never exists, so it never gates — the comparison says so instead of passing silently."""
    (ref / "evalh.toml").write_text(TOML + 'gate = ["pass_rate", "cost_usd"]\n')
    for seed in ("1", "2"):
        assert cli(ref, "run", "-q", "--seed", seed).exit_code in (0, 1)
    first = sorted(p.stem for p in (ref / "runs").glob("*.json"))[0]
    assert cli(ref, "baseline", "set", first).exit_code == 0
    r = cli(ref, "compare", "--json")
    assert r.exit_code == 0, r.output
    line = "suite ref: gate names cost_usd, which neither run measured (no comparison row): not gated"
    assert line in json.loads(r.stdout)["warnings"]
    assert line in " ".join(cli(ref, "compare").stdout.split())
    (ref / "evalh.toml").write_text(TOML)  # the default gate: a pass/fail suite has no score row
    before = set(p.stem for p in (ref / "runs").glob("*.json"))
    assert cli(ref, "run", "-q", "--seed", "3").exit_code in (0, 1)
    third = (set(p.stem for p in (ref / "runs").glob("*.json")) - before).pop()
    assert cli(ref, "baseline", "set", third).exit_code == 0
    assert cli(ref, "run", "-q", "--seed", "4").exit_code in (0, 1)
    assert "gate names" not in " ".join(cli(ref, "compare").stdout.split())


def test_a_run_in_rounds_says_how_old_its_baseline_is(ref: Path) -> None:
    """`run --compare-baseline` says the baseline's age (`baseline_age`), as `evalh compare`
    does; in rounds it did not."""
    base = _baseline(ref)
    r, _ = _candidate(ref, base)
    out = json.loads(r.stdout)
    plain = json.loads(cli(ref, "compare", "--json").stdout)
    assert out["comparison"]["baseline_age"] == plain["baseline_age"]
    assert out["comparison"]["baseline_age"]["run_id"] in base


def test_a_run_recorded_before_the_flat_side_had_its_own_spending_is_decided_as_it_was() -> None:
    """`Run.rounds` of a run made when both sides spent α·t³ has no `rho_flat`: a later
    compare reads ρ = 3 for both, not today's α·t for `flat` (which would move its verdict)."""
    from evalh.core.compare.models import recorded_looks

    old = [{"round": 2, "suites": {"ref": {"look": 2, "fractions": {"default": [0.5, 1.0]}}}}]
    new = [{"round": 2, "suites": {"ref": {"look": 2, "fractions": {"default": [0.5, 1.0]},
                                           "rho": 3.0, "rho_flat": 1.0}}}]
    looks_old, looks_new = recorded_looks(old), recorded_looks(new)
    assert looks_old is not None and looks_new is not None
    assert (looks_old["ref"].rho, looks_old["ref"].rho_flat) == (3.0, 3.0)
    assert (looks_new["ref"].rho, looks_new["ref"].rho_flat) == (3.0, 1.0)


def test_a_row_the_confidence_sequence_cannot_decide_is_not_decided_by_a_fixed_n_interval_after_peeking(
    ref: Path,
) -> None:
    """A suite whose estimand is `population` (also: clustered cases, fewer than 8 varying
    cases) has its gating rows outside the rounds' confidence sequence. Looking at their
    fixed-n 95 % interval after every round and stopping at the first decision is peeking:
    each of the 9 looks spends the whole α again. They are held to α / 9 at each look
    (Bonferroni over the planned looks: valid whatever the looks' correlation)."""
    toml = (ref / "evalh.toml").read_text()
    (ref / "evalh.toml").write_text(toml + 'estimand = "population"\n')
    base = _baseline(ref)
    r, doc = _candidate(ref, base)
    assert r.exit_code == 0, r.output
    row = next(m for m in json.loads(r.stdout)["comparison"]["suites"]["ref"]["metrics"]
               if m["name"] == "pass_rate")
    assert row["estimand"] == "population"
    assert "Bonferroni over 9 looks" in row["method"], row["method"]
    # its interval is the one at α / 9 a side: wider than the fixed-n 95 % one
    plain = json.loads(cli(ref, "compare", "--json", "--estimand", "population").stdout)
    again = next(m for m in plain["suites"]["ref"]["metrics"] if m["name"] == "pass_rate")
    assert again["verdict"] == row["verdict"] and again["interval"] == row["interval"]
    lo, hi = row["interval"]
    assert hi - lo > 0
    # what the run recorded after each round is what compare says of it now
    assert doc["rounds"][-1]["suites"]["ref"]["rows"]["pass_rate"] == row["verdict"]


def test_a_dry_run_in_rounds_without_a_baseline_that_loads_is_refused_as_the_run_would_be(
    ref: Path,
) -> None:
    """The real run refuses (exit 2) when BASELINE is unset or names a run that is gone; the
    dry run said "100 requests" and exited 0: one attempt a case, an eighth of what the run
    would spend once a baseline is set, for a run that cannot start."""
    for args in ((), ("--json",)):
        dry = cli(ref, "run", "--dry-run", "--compare-baseline", "--until-decided", *args)
        assert dry.exit_code == 2, dry.output
        assert "no BASELINE" in dry.stderr and "Traceback" not in dry.output
    base = _baseline(ref)
    (ref / "runs" / f"{base[0]}.json").unlink()
    real = cli(ref, "run", "--compare-baseline", "--until-decided")
    dry = cli(ref, "run", "--dry-run", "--compare-baseline", "--until-decided", "--json")
    assert real.exit_code == dry.exit_code == 2, dry.output
    assert base[0] in dry.stderr and dry.stderr.strip() == real.stderr.strip()
    assert not (ref / "calls.txt").exists()


def test_cases_added_after_the_baseline_get_one_attempt_not_the_most(ref: Path) -> None:
    """Ten cases added to the dataset after the baseline cannot be compared (no baseline
    mean), yet each took 3 attempts by round 3 and would take 16 by the budget: planned at
    p = 0.5, the noisiest there is. They get one attempt, as in a plain run."""
    base = _baseline(ref)
    with (ref / "data" / "ref.jsonl").open("a") as fh:
        for i in range(100, 110):
            fh.write(json.dumps({"id": f"c{i:03d}", "input": {"p": 0.98}, "expected": "right"}) + "\n")
    r, doc = _candidate(ref, base, "--max-attempts", "1100")
    assert r.exit_code == 0, r.output
    per_case: dict[str, int] = {}
    for line in _calls(ref):
        per_case[line.split()[1]] = per_case.get(line.split()[1], 0) + 1
    assert [per_case[f"c{i}"] for i in range(100, 110)] == [1] * 10
    assert doc["rounds"][-1]["calls_so_far"] == len(_calls(ref)) <= 1100
    # the dry run plans the same: the new cases at one attempt, inside the same budget
    dry = json.loads(cli(ref, "run", "--dry-run", "--compare-baseline", "--until-decided",
                         "--max-attempts", "1100", "--json").stdout)["suites"][0]
    assert dry["items"] <= 1100 and dry["until_decided"]["budget"] <= 1100
    assert dry["until_decided"]["plain"] == 110


def test_resume_refuses_a_new_max_attempts_rather_than_spending_the_old_one(
    ref: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resumed run keeps its own schedule (its looks and boundaries are what its error
    guarantee rests on), so `--resume RUN --max-attempts 120` ran on to the old budget
    and spent more than the 120 calls asked for, saying nothing. It is refused, exit 2."""
    _, partial = _interrupted(ref, monkeypatch)
    before = partial.read_bytes()
    r = cli(ref, "run", "--resume", partial.stem, "--compare-baseline", "--max-attempts", "120")
    assert r.exit_code == 2 and "--max-attempts" in r.stderr, r.output
    assert partial.read_bytes() == before


def test_a_dry_run_of_resuming_a_run_in_rounds_plans_the_runs_own_budget(
    ref: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --dry-run --resume RUN --compare-baseline` of a run in rounds said "0 to run" and
    "never above 800" (the default budget), while the resume then ran on to the run's own
    budget (--max-attempts 300 when it started): what is left is up to 300 − done."""
    _, partial = _interrupted(ref, monkeypatch, "--max-attempts", "300")
    dry = cli(ref, "run", "--dry-run", "--resume", partial.stem, "--compare-baseline", "--json")
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.stdout)["suites"][0]
    assert planned["budget"] is True and planned["items"] + planned["done"] == 300
    assert planned["until_decided"]["budget"] == 300
    resumed = cli(ref, "run", "--resume", partial.stem, "--compare-baseline", "-q")
    assert resumed.exit_code == 0, resumed.output
    doc = json.loads(partial.read_bytes())
    assert doc["rounds"][-1]["calls_so_far"] <= planned["items"] + planned["done"]


PRICED = '''

_free_answer = answer


def answer(inp):  # noqa: F811
    """The same answer at one cent a call, so --max-cost can stop a round part-way."""
    from evalh.targets.base import TargetOutput

    return TargetOutput(output=_free_answer(inp), tokens_in=10, tokens_out=5, cost_usd=0.01,
                        model="fixture-model")
'''


def test_a_round_stopped_by_max_cost_is_looked_at_again_once_resumed(ref: Path) -> None:
    """--max-cost stops round 2 after 25 of its 50 calls. That part-round was recorded as
    round 2, so `--resume` went on to round 3 and never looked at round 2 complete: the
    resumed run decided at other looks than the uninterrupted run of the same seed (flat
    after round 2, at 150 calls). The part-round is recorded as such and the resume
    finishes it and looks at it."""
    with (ref / "refwork_target.py").open("a") as fh:
        fh.write(PRICED)
    base = _baseline(ref)
    r = cli(ref, "run", "-q", "--compare-baseline", "--until-decided", "--seed", "8",
            "--max-cost", "1.25")
    (partial,) = [p for p in (ref / "runs").glob("*.json") if p.stem not in base]
    doc = json.loads(partial.read_bytes())
    assert doc["status"] == "partial", r.output
    assert [rd["round"] for rd in doc["rounds"]] == [1, 2] and doc["rounds"][-1]["partial"] is True
    r = cli(ref, "run", "--resume", partial.stem, "--compare-baseline", "--max-cost", "20", "-q")
    assert r.exit_code == 0, r.output
    doc = json.loads(partial.read_bytes())
    assert doc["status"] == "complete"
    assert [(rd["round"], rd["calls_so_far"]) for rd in doc["rounds"]] == [(1, 100), (2, 150)]
    assert doc["rounds"][-1]["suites"]["ref"]["rows"]["pass_rate"] == "flat"
    assert not any(rd.get("partial") for rd in doc["rounds"])
