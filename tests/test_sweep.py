"""Policy sweep: grids, strict wins, honest ties, no incumbent favour, bounded candidates;
then `evalh sweep` on a stored run through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.core.analysis.sweep import (
    Observation,
    SweepConfig,
    SweepError,
    grid_values,
    observe,
    resolve_spec,
    sweep,
    sweep_run,
)
from evalh.models import CaseResult, DatasetInfo, EnvironmentInfo, Run, SuiteResult
from evalh.store import RunStore


def binary(**kw: Any) -> SweepConfig:
    return SweepConfig(positive="bad", **kw)


def obs(*pairs: tuple[float | None, str | None]) -> list[Observation]:
    return [Observation(f"c{i}", 0, v, lab) for i, (v, lab) in enumerate(pairs)]


# Scores of two bad and two good cases: any threshold in (0.4, 0.6] separates them perfectly.
SEPARABLE = obs((0.1, "not bad"), (0.4, "not bad"), (0.6, "bad"), (0.9, "bad"))


# ----------------------------------------------------------------------------- grids


def test_grid_ranges_are_exact_decimals() -> None:
    assert grid_values("t", "0.3:0.9:0.1") == [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert grid_values("k", "1:5") == [1, 2, 3, 4, 5]
    assert grid_values("k", "3,1,2") == [1, 2, 3]
    assert grid_values("k", [2, 1.5]) == [1.5, 2]


@pytest.mark.parametrize("spec", ["a:b", "5:1", "1:5:0", "1:2:3:4", "x"])
def test_bad_grids_are_refused(spec: str) -> None:
    with pytest.raises(SweepError, match="grid t"):
        grid_values("t", spec)


def test_spec_shape_is_validated_with_a_one_line_message() -> None:
    with pytest.raises(SweepError, match="exactly one of"):
        resolve_spec({}, {})
    with pytest.raises(SweepError, match="needs `otherwise`"):
        resolve_spec({"tiers": ["a"]}, {})
    with pytest.raises(SweepError, match="count_value"):
        resolve_spec({"positive": "bad", "measure": "count:lenses"}, {})
    with pytest.raises(SweepError, match="unknown parameter"):
        resolve_spec({"positive": "bad", "grid": {"k": "1:2"}}, {})
    # the command line switches the policy family cleanly
    spec = resolve_spec({"positive": "bad"}, {"tiers": ["hi", "lo"], "otherwise": "ok"})
    assert spec.params == ["hi", "lo"] and spec.positive is None


# ----------------------------------------------------------------------------- ranking


def test_strict_win_is_recommended() -> None:
    res = sweep(binary(grid={"threshold": "0.2,0.5,0.7"}), SEPARABLE).to_dict()
    assert res["recommended"] == {"threshold": 0.5}
    assert res["tied_top"] == []
    assert res["candidates"][0]["correct"] == 4 and res["candidates"][1]["correct"] == 3
    assert res["verdict"].startswith("strict win")


def test_tie_lists_tied_top_and_recommends_nothing() -> None:
    res = sweep(binary(grid={"threshold": "0.45,0.5,0.55"}), SEPARABLE).to_dict()
    assert res["recommended"] is None
    assert res["tied_top"] == [{"threshold": 0.45}, {"threshold": 0.5}, {"threshold": 0.55}]
    assert [r["rank"] for r in res["candidates"]] == [1, 1, 1]
    assert "does not discriminate" in res["verdict"] and res["undetermined"] == {"threshold": [0.45, 0.5, 0.55]}


def test_incumbent_is_marked_never_favoured() -> None:
    grid = {"threshold": "0.45,0.5,0.55"}
    plain = sweep(binary(grid=grid), SEPARABLE).to_dict()
    for current in (0.45, 0.55):
        res = sweep(binary(grid=grid, current={"threshold": current}), SEPARABLE).to_dict()
        # same order, same (absent) recommendation whichever candidate is the incumbent
        assert [r["params"] for r in res["candidates"]] == [r["params"] for r in plain["candidates"]]
        assert res["recommended"] is None and len(res["tied_top"]) == 3
        assert [r["params"] for r in res["candidates"] if r["current"]] == [{"threshold": current}]
        assert res["current"]["rank"] == 1
    # a worse incumbent does not get to win
    res = sweep(binary(grid={"threshold": "0.2,0.5"}, current={"threshold": 0.2}), SEPARABLE).to_dict()
    assert res["recommended"] == {"threshold": 0.5} and res["current"]["rank"] == 2


def test_incumbent_outside_the_grid_is_scored_like_any_candidate() -> None:
    res = sweep(binary(grid={"threshold": "0.2"}, current={"threshold": 0.5}), SEPARABLE).to_dict()
    assert {json.dumps(r["params"]) for r in res["candidates"]} == {'{"threshold": 0.2}', '{"threshold": 0.5}'}
    assert res["recommended"] == {"threshold": 0.5}


def test_candidates_are_bounded_by_the_greatest_observed_value() -> None:
    res = sweep(binary(grid={"threshold": "0.5,0.95,1.5"}, current={"threshold": 2}), SEPARABLE).to_dict()
    assert [r["params"]["threshold"] for r in res["candidates"]] == [0.5]
    assert res["left_out"]["above_observed"] == 2 and res["left_out"]["max_observed"] == 0.9
    assert res["current"]["rank"] is None and "no observed value reaches" in res["current"]["note"]
    assert res["verdict"].startswith("only one candidate") and res["recommended"] is None
    with pytest.raises(SweepError, match="no candidate left"):
        sweep(binary(grid={"threshold": "1,2"}), SEPARABLE)


def test_tier_policies_need_strictly_decreasing_thresholds_and_rank_under_calls_when_declared() -> None:
    spec = SweepConfig(tiers=["block", "review"], otherwise="ok", grid={"block": "1:3", "review": "1:3"},
                       tie_break="fewer_under_calls")
    data = obs((3, "block"), (2, "review"), (2, "block"), (0, "ok"), (1, "review"))
    res = sweep(spec, data).to_dict()
    assert res["left_out"]["not_decreasing"] == 6  # of the 9 pairs, only (2,1), (3,1), (3,2) are ordered
    assert len(res["candidates"]) == 3
    by = {tuple(r["params"].values()): r for r in res["candidates"]}
    # (2,1) and (3,1) both get 4 of 5 right, but (2,1) errs by over-calling, (3,1) by under-calling
    assert by[(2, 1)]["correct"] == by[(3, 1)]["correct"] == 4
    assert (by[(2, 1)]["under_calls"], by[(3, 1)]["under_calls"]) == (0, 1)
    assert res["recommended"] == {"block": 2, "review": 1} and res["won_on"] == "fewer_under_calls"
    # undeclared, the same counts are a tie on accuracy
    plain = sweep(spec.model_copy(update={"tie_break": None}), data).to_dict()
    assert plain["recommended"] is None and len(plain["tied_top"]) == 2


def test_undecided_and_unlabelled_observations_are_counted_not_scored() -> None:
    data = [*SEPARABLE, *obs((None, "bad"), (0.3, None))]
    res = sweep(binary(grid={"threshold": "0.5"}), data).to_dict()
    o = res["observations"]
    assert (o["total"], o["scored"], o["undecided"], o["unlabelled"]) == (6, 4, 1, 1)
    assert res["candidates"][0]["n"] == 4


# ----------------------------------------------------------------------------- from a stored run


def _run(cases: list[CaseResult]) -> Run:
    return Run(
        run_id="20260101T000000000Z-abcdef", started_at="2026-01-01T00:00:00Z", status="complete",
        environment=EnvironmentInfo(evalh="0", python="3", platform="test"),
        suites={"s": SuiteResult(regime="stochastic", dataset=DatasetInfo(path="d", sha256="x", cases=len(cases)),
                                 cases=cases)},
    )


def _case(cid: str, lenses: dict[str, Any], severity: str | None, status: str = "passed") -> CaseResult:
    return CaseResult(case_id=cid, status=status, output={"lenses": lenses} if status != "errored" else None,  # type: ignore[arg-type]
                      expected={"severity": severity})


def test_sweep_run_counts_lens_verdicts_and_refuses_labels_outside_the_vocabulary() -> None:
    spec = SweepConfig(measure="count:lenses", count_value="refuted", label="severity",
                       tiers=["block"], otherwise="ok", grid={"block": "1:2"})
    run = _run([
        _case("a", {"x": "refuted", "y": {"verdict": "refuted"}}, "block"),
        _case("b", {"x": "refuted", "y": "survived"}, "ok"),
        _case("c", {}, "block", status="errored"),
        _case("d", {"x": "refuted"}, None, status="skipped"),
    ])
    res = sweep_run(run, "s", spec).to_dict()
    o = res["observations"]
    assert (o["undecided"], o["errored"], o["unlabelled"], o["max"]) == (1, 1, 0, 2)
    assert res["recommended"] == {"block": 2}
    bad = _run([_case("a", {"x": "refuted"}, "maybe")])
    with pytest.raises(SweepError, match="case a: label 'maybe'"):
        sweep_run(bad, "s", spec)
    with pytest.raises(SweepError, match="no suite 'nope'"):
        sweep_run(run, "nope", spec)


def test_observe_maps_binary_labels_by_the_positive_value() -> None:
    spec = SweepConfig(positive=True, label="bad", measure="score")
    results = [CaseResult(case_id="a", status="passed", score=0.2, expected={"bad": True}),
               CaseResult(case_id="b", status="passed", score=0.2, expected={"bad": False})]
    assert [o.label for o in observe(spec, results, "w")] == ["true", "not true"]
    from_cli = resolve_spec({}, {"positive": "true", "label": "bad"})  # a command-line string
    assert [o.label for o in observe(from_cli, results, "w")] == ["true", "not true"]


# ----------------------------------------------------------------------------- CLI


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_cli_sweeps_the_panel_run_from_its_config_table(repo_root: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    cfg = str(repo_root / "evalh.toml")
    ran = invoke("run", "--suite", "panel", "--config", cfg, "--runs-dir", str(runs), "--quiet")
    assert ran.exit_code == 0, ran.output  # stochastic: imperfect lenses do not fail the run
    run_id = next(runs.glob("*.json")).stem
    result = invoke("sweep", run_id, "--suite", "panel", "--config", cfg, "--runs-dir", str(runs), "--json")
    assert result.exit_code == 0, result.output
    res = json.loads(result.stdout)
    # panel.evidence_unavailable's evidence lens failed: its count is not known, so it is left out
    assert res["params"] == ["structural", "sharpen", "note"] and res["observations"]["scored"] == 14
    assert res["observations"]["errored"] == 1 and res["errored"] == "exclude"
    assert res["current"]["params"] == {"structural": 3, "sharpen": 2, "note": 1}
    if res["recommended"] is None:
        assert len(res["tied_top"]) > 1 and "does not discriminate" in res["verdict"]
    assert all(r["params"]["structural"] <= res["observations"]["max"] for r in res["candidates"])
    # without evalh.toml (the test runs in an empty directory) the run's config snapshot serves
    alone = invoke("sweep", run_id, "--runs-dir", str(runs), "--json")
    assert alone.exit_code == 0, alone.output
    assert json.loads(alone.stdout)["candidates"] == res["candidates"]
    table = invoke("sweep", run_id, "--suite", "panel", "--config", cfg, "--runs-dir", str(runs),
                   "--grid", "structural=2:4", "--objective", "balanced_accuracy")
    assert table.exit_code == 0, table.output
    assert "current" in table.stdout and "Advisory only" in table.stdout


def test_cli_bad_grid_is_one_line_on_stderr_exit_2(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    run = _run([_case("a", {"x": "refuted"}, "block")])
    store.write(run)
    result = invoke("sweep", run.run_id, "--runs-dir", str(tmp_path / "runs"), "--measure", "count:lenses",
                    "--count-value", "refuted", "--label", "severity", "--tiers", "block",
                    "--otherwise", "ok", "--grid", "block=oops")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == ["error: grid block: 'oops' is not a number"]
    assert result.stdout == ""
    nothing = invoke("sweep", run.run_id, "--runs-dir", str(tmp_path / "runs"))
    assert nothing.exit_code == 2 and "no [suites.s.sweep] table" in nothing.stderr


# ----------------------------------------------------------------------------- issue 19: ties and errors


# Tier policies on three nodes: (3,2,1) and (3,1,0) each get 2 of 3 right, (3,2,1) with one
# under-call, (3,1,0) with none. The objective alone cannot tell them apart.
TIED_ON_ACCURACY = obs((3, "structural"), (1, "sharpen"), (1, "note"))
TIERS = {"tiers": ["structural", "sharpen", "note"], "otherwise": "none"}


def test_equal_objective_is_a_tie_not_broken_by_under_calls_unless_declared() -> None:
    grid = {"structural": "3", "sharpen": "1,2", "note": "0,1"}
    res = sweep(SweepConfig(**TIERS, grid=grid, current={"structural": 3, "sharpen": 2, "note": 1}),
                TIED_ON_ACCURACY).to_dict()
    by = {tuple(r["params"].values()): r for r in res["candidates"]}
    assert by[(3, 2, 1)]["objective"] == by[(3, 1, 0)]["objective"]
    assert by[(3, 2, 1)]["under_calls"] != by[(3, 1, 0)]["under_calls"]
    assert res["recommended"] is None and res["won_on"] is None
    assert {"structural": 3, "sharpen": 1, "note": 0} in res["tied_top"]
    assert {"structural": 3, "sharpen": 2, "note": 1} in res["tied_top"]
    assert by[(3, 2, 1)]["rank"] == by[(3, 1, 0)]["rank"] == 1
    assert "does not discriminate" in res["verdict"] and "under-calls" not in res["verdict"].split(".")[0]
    assert res["ranking"].startswith("accuracy; equal")
    assert res["pinned"] == {"structural": 3}


def test_a_declared_tie_break_may_decide_and_is_named_as_the_reason() -> None:
    grid = {"structural": "3", "sharpen": "1,2", "note": "0,1"}
    spec = SweepConfig(**TIERS, grid=grid, tie_break="fewer_under_calls")
    res = sweep(spec, TIED_ON_ACCURACY).to_dict()
    assert res["recommended"] == {"structural": 3, "sharpen": 1, "note": 0}
    assert res["won_on"] == "fewer_under_calls"
    assert "declared tie-break" in res["verdict"] and "fewer under-calls" in res["verdict"]
    assert "accuracy 0.667" in res["verdict"]
    # a win on the objective itself names the objective
    strict = sweep(binary(grid={"threshold": "0.2,0.5"}, tie_break="fewer_under_calls"), SEPARABLE).to_dict()
    assert strict["won_on"] == "accuracy" and strict["verdict"].startswith("strict win on accuracy")
    with pytest.raises(SweepError, match="tie_break"):
        resolve_spec({"positive": "bad", "tie_break": "incumbent"}, {})


def _panel_spec(**kw: Any) -> SweepConfig:
    return SweepConfig(measure="count:lenses", count_value="refuted", label="severity",
                       tiers=["block"], otherwise="ok", grid={"block": "1:2"}, **kw)


ERRORED_LENS_RUN = [
    _case("a", {"x": "refuted", "y": "refuted"}, "block"),
    _case("b", {"x": "refuted", "y": "survived"}, "ok"),
    # the second lens got an HTTP 500: its node is not one that merely had one refutation
    _case("c", {"x": "refuted", "y": {"error": "HTTP 500"}}, "block"),
    _case("d", {"x": "survived", "y": "survived"}, "ok"),
]


def test_an_errored_lens_is_excluded_by_default_never_a_silent_survive() -> None:
    res = sweep_run(_run(ERRORED_LENS_RUN), "s", _panel_spec()).to_dict()
    o = res["observations"]
    assert (o["total"], o["scored"], o["errored"], o["undecided"]) == (4, 3, 1, 0)
    assert res["errored"] == "exclude"
    for row in res["candidates"]:
        assert row["n"] == 3 and row["errored"] == 1
    # block=2 gets all three scored nodes right; c is not read as a one-refutation "ok"
    assert res["recommended"] == {"block": 2}
    assert next(r for r in res["candidates"] if r["params"] == {"block": 2})["correct"] == 3


def test_errored_miss_counts_an_errored_observation_wrong_for_every_candidate() -> None:
    res = sweep_run(_run(ERRORED_LENS_RUN), "s", _panel_spec(errored="miss")).to_dict()
    assert res["errored"] == "miss" and res["observations"]["scored"] == 4
    for row in res["candidates"]:
        assert row["n"] == 4 and row["errored"] == 1
    best = next(r for r in res["candidates"] if r["params"] == {"block": 2})
    assert (best["correct"], best["accuracy"]) == (3, 0.75)
    assert best["correct"] + best["under_calls"] + best["over_calls"] + best["errored"] == best["n"]


def test_a_failed_target_and_a_judge_error_are_errored_not_undecided() -> None:
    spec = SweepConfig(positive=True, label="bad", measure="scorer:rubric", grid={"threshold": "0.5"})
    from evalh.models import Score

    results = [
        CaseResult(case_id="a", status="passed", expected={"bad": True},
                   scores=[Score(scorer="rubric", value=0.9, passed=True)]),
        CaseResult(case_id="b", status="judge_error", expected={"bad": True},
                   scores=[Score(scorer="rubric", value=0.0, passed=False, error="HTTP 500")]),
        CaseResult(case_id="c", status="errored", expected={"bad": False}),
        CaseResult(case_id="d", status="skipped", expected={"bad": False}),
    ]
    assert [o.errored for o in observe(spec, results, "w")] == [False, True, True, False]
    res = sweep(spec, observe(spec, results, "w")).to_dict()
    assert (res["observations"]["errored"], res["observations"]["undecided"]) == (2, 1)


def test_cli_names_the_errored_rule_and_the_tie_break(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    run = _run(ERRORED_LENS_RUN)
    store.write(run)
    args = ["sweep", run.run_id, "--runs-dir", str(tmp_path / "runs"), "--measure", "count:lenses",
            "--count-value", "refuted", "--label", "severity", "--tiers", "block", "--otherwise", "ok",
            "--grid", "block=1:2"]
    table = invoke(*args)
    assert table.exit_code == 0, table.output
    assert "1 with an errored input excluded" in " ".join(table.stdout.split())
    missed = invoke(*args, "--errored", "miss", "--tie-break", "fewer_under_calls", "--json")
    assert missed.exit_code == 0, missed.output
    res = json.loads(missed.stdout)
    assert res["errored"] == "miss" and res["tie_break"] == "fewer_under_calls"
    bad = invoke(*args, "--errored", "survive")
    assert bad.exit_code == 2 and "errored" in bad.stderr


# ----------------------------------------------------------------------------- issue 17: is the win beyond noise?


def _scores(n_bad: int, n_good: int, flipped: int) -> list[Observation]:
    """Bad cases score 0.8, good ones 0.2, except `flipped` good ones at 0.6: threshold 0.7
    gets every case right, 0.5 misses the flipped ones."""
    pairs = [(0.8, "bad")] * n_bad + [(0.6, "not bad")] * flipped + [(0.2, "not bad")] * (n_good - flipped)
    return obs(*pairs)


def test_a_strict_win_by_one_case_is_within_noise_with_the_newcombe_interval() -> None:
    from evalh.core.stats.intervals import mcnemar, newcombe_paired_interval

    res = sweep(binary(grid={"threshold": "0.5,0.7"}), _scores(5, 5, 1)).to_dict()
    assert res["recommended"] == {"threshold": 0.7} and res["within_noise"] is True
    [m] = res["margins"]
    assert m["against"] == "runner-up" and m["other"] == {"threshold": 0.5}
    assert (m["top_only"], m["other_only"], m["results"], m["cases"]) == (1, 0, 10, 10)
    assert m["difference"] == pytest.approx(0.1)
    # both: 9 right with either, base = runner-up, candidate = top
    assert (m["low"], m["high"]) == pytest.approx(newcombe_paired_interval(9, 0, 1, 0))
    assert m["low"] < 0 < m["high"] and m["p_value"] == pytest.approx(mcnemar(0, 1).p_mid)
    assert "the win is within noise (95% CI" in res["verdict"]


def test_a_strict_win_by_many_cases_is_beyond_noise_and_says_it_is_still_optimistic() -> None:
    res = sweep(binary(grid={"threshold": "0.5,0.7"}, current={"threshold": 0.5}), _scores(20, 20, 12)).to_dict()
    assert res["recommended"] == {"threshold": 0.7} and res["within_noise"] is False
    [m] = res["margins"]  # the runner-up is the current policy: one comparison, not two
    assert m["other_current"] is True and m["top_only"] == 12 and m["low"] > 0
    assert "beyond noise" in res["verdict"] and "picked on these same results" in res["verdict"]
    from evalh.report.figures import sweep as sweep_figure

    fig = sweep_figure(res)  # a current policy beaten beyond noise is a flag (it reaches the summary)
    assert fig.flags == [f"policy sweep: threshold=0.7 beats the current threshold=0.5 beyond noise (accuracy +0.300, "
                         f"95% CI {m['low']:+.3f} to {m['high']:+.3f})"]
    assert fig.notes[0] == "winner: threshold=0.7, a strict win on accuracy, beyond noise"
    within = sweep_figure(sweep(binary(grid={"threshold": "0.5,0.7"}, current={"threshold": 0.5}), _scores(5, 5, 1)).to_dict())
    assert within.flags == [] and within.notes[0] == "winner: threshold=0.7, a strict win on accuracy, within noise of the runner-up"


def test_a_tie_at_the_top_has_no_win_to_judge_but_is_compared_with_the_current_policy() -> None:
    res = sweep(binary(grid={"threshold": "0.45,0.5,0.55"}, current={"threshold": 0.2}), SEPARABLE).to_dict()
    assert res["recommended"] is None and res["within_noise"] is None
    [m] = res["margins"]
    assert m["against"] == "current" and m["top"] == {"threshold": 0.45} and m["other"] == {"threshold": 0.2}
    assert "the first of the tied top beats it by +0.250 accuracy, within noise" in res["verdict"]


def test_a_win_on_the_declared_tie_break_is_equal_on_the_objective() -> None:
    res = sweep(SweepConfig(**TIERS, grid={"structural": 3, "sharpen": "1:2", "note": "0:1"},
                            tie_break="fewer_under_calls"), TIED_ON_ACCURACY).to_dict()
    assert res["won_on"] == "fewer_under_calls" and res["within_noise"] is None  # no win on the objective
    [m] = res["margins"]
    assert m["difference"] == 0 and m["within_noise"] is True and m["note"] == "equal on accuracy"


def test_repeats_of_a_case_are_one_unit_not_independent_trials() -> None:
    from evalh.core.stats.intervals import clustered_mean

    single = _scores(6, 6, 3)
    repeated = [Observation(o.case_id, a, o.value, o.label) for o in single for a in range(4)]
    one = sweep(binary(grid={"threshold": "0.5,0.7"}), single).to_dict()["margins"][0]
    four = sweep(binary(grid={"threshold": "0.5,0.7"}), repeated).to_dict()["margins"][0]
    assert four["results"] == 48 and four["cases"] == 12 and "jackknife" in four["method"]
    diffs = [1.0 if o.value == 0.6 else 0.0 for o in repeated]
    est = clustered_mean(diffs, [o.case_id for o in repeated])
    assert est is not None and (four["low"], four["high"]) == pytest.approx(est.interval(0.95))
    # four copies of each case carry no more information than one: the interval does not shrink by half
    assert four["high"] - four["low"] > 0.8 * (one["high"] - one["low"])


def test_balanced_accuracy_is_judged_by_a_jackknife_of_its_own_difference() -> None:
    data = _scores(4, 12, 4)  # 4 bad, 12 good of which 4 flipped
    res = sweep(binary(grid={"threshold": "0.5,0.7"}, objective="balanced_accuracy"), data).to_dict()
    [m] = res["margins"]
    top, other = res["candidates"][0], res["candidates"][1]
    assert m["difference"] == pytest.approx(top["balanced_accuracy"] - other["balanced_accuracy"])
    assert "balanced-accuracy difference" in m["method"] and m["low"] is not None and m["high"] is not None
    # by hand: leave one case out, recompute both balanced accuracies
    import math

    def bal(keep: list[Observation], t: float) -> float:
        per: dict[str, list[int]] = {}
        for o in keep:
            right = ("bad" if o.value >= t else "not bad") == o.label  # type: ignore[operator]
            per.setdefault(str(o.label), [0, 0])
            per[str(o.label)][0] += right
            per[str(o.label)][1] += 1
        return sum(c / n for c, n in per.values()) / len(per)

    loo = [bal(data[:i] + data[i + 1:], 0.7) - bal(data[:i] + data[i + 1:], 0.5) for i in range(len(data))]
    g, mean_loo = len(loo), sum(loo) / len(loo)
    se = math.sqrt((g - 1) / g * sum((x - mean_loo) ** 2 for x in loo))
    from evalh.core.stats.intervals import t_quantile

    half = t_quantile(0.975, g - 1) * se
    assert (m["low"], m["high"]) == pytest.approx((m["difference"] - half, m["difference"] + half))


# ----------------------------------------------------------------------------- issue 17: the run keeps its ranking


def test_evalh_run_stores_the_configured_sweep_and_every_surface_draws_it(repo_root: Path, tmp_path: Path) -> None:
    from evalh.report import build_report, to_html, to_json, to_markdown
    from evalh.report.render import terminal_text

    runs = tmp_path / "runs"
    cfg = str(repo_root / "evalh.toml")
    assert invoke("run", "--suite", "panel", "--config", cfg, "--runs-dir", str(runs), "--quiet").exit_code == 0
    run_id = next(runs.glob("*.json")).stem
    run = RunStore(runs).load(run_id)
    stored = run.suites["panel"].sweep
    assert stored is not None and stored["schema"] == "evalh.sweep/1" and stored["suite"] == "panel"
    swept = json.loads(invoke("sweep", run_id, "--runs-dir", str(runs), "--json").stdout)
    assert stored["candidates"] == swept["candidates"] and stored["candidates_total"] == len(swept["candidates"])
    assert stored["margins"] == swept["margins"] and stored["verdict"] == swept["verdict"]
    report = build_report([run])
    [fig] = [f for f in report.suites[0].figures if f.kind == "sweep"]
    assert fig.columns[:4] == ["rank", "structural", "sharpen", "note"] and "accuracy (right/n)" in fig.columns
    assert fig.rows[0][4].endswith(f"({swept['candidates'][0]['correct']}/{swept['candidates'][0]['n']})")
    assert any(r[-1].endswith("current") for r in fig.rows)
    headline = fig.notes[0]
    assert headline.startswith("winner:") or headline.startswith("no winner:")
    assert any("within noise" in n or "beyond noise" in n for n in fig.notes)
    doc = json.loads(to_json(report))
    assert [f["kind"] for f in doc["suites"][0]["figures"]].count("sweep") == 1
    for text in (to_markdown(report), terminal_text(report), to_html(report)):
        assert "policy sweep" in text and headline.split(":")[0] in text and "Advisory only" in text
    shown = invoke("show", run_id, "--runs-dir", str(runs))
    assert shown.exit_code == 0 and "policy sweep" in shown.stdout and "accuracy (right/n)" in shown.stdout


def test_a_stored_sweep_keeps_the_first_candidates_and_the_current_one() -> None:
    from evalh.core.analysis.sweep import stored_sweep

    grid = {"threshold": "0.1:0.9:0.1"}
    res = sweep(binary(grid=grid, current={"threshold": 0.1}), SEPARABLE)
    doc = stored_sweep(res, keep=2)
    assert doc["candidates_total"] == len(res.candidates) > 3
    assert [c["params"] for c in doc["candidates"]][:2] == [c.params for c in res.candidates[:2]]
    assert doc["candidates"][-1]["current"] and len(doc["candidates"]) == 3
    from evalh.report.figures import sweep as sweep_figure

    fig = sweep_figure(doc)
    assert fig.rows[2][0] == "…" and fig.rows[3][-1] == "current"
    assert f"3 of {len(res.candidates)} candidates shown" in " ".join(fig.notes)


def test_a_sweep_that_cannot_rank_is_stored_as_an_error_and_flagged_never_a_failed_run() -> None:
    from evalh.config import SuiteConfig
    from evalh.core.analysis.sweep import suite_sweep
    from evalh.report.figures import sweep as sweep_figure

    hostile = "<img src=x onerror=alert(1)>"
    suite_cfg = SuiteConfig.model_construct(sweep=SweepConfig(
        measure="count:lenses", count_value="refuted", label="severity", tiers=["block"], otherwise="ok",
        grid={"block": "1:2"}))
    stored = suite_sweep("s", suite_cfg, [_case("a", {"x": "refuted"}, hostile)], None)
    assert stored is not None and hostile in stored["error"] and "label" in stored["error"]
    fig = sweep_figure(stored)
    assert fig.kind == "sweep" and fig.flags == [f"policy sweep: not ranked: {stored['error']}"]
    assert suite_sweep("s", SuiteConfig.model_construct(sweep=None), [], None) is None
    assert suite_sweep("s", None, [], None) is None


def test_counts_by_bisection_equal_deciding_each_result() -> None:
    import random

    from evalh.core.analysis.sweep import ObservedValues, decide

    rng = random.Random(5)
    decisions = ["structural", "sharpen", "note", "none"]
    data = [Observation(f"c{i}", 0, float(rng.randint(0, 6)), rng.choice(decisions)) for i in range(300)]
    index = ObservedValues(decisions, data)
    for _ in range(50):
        params = tuple(sorted(rng.sample(range(0, 8), 3), reverse=True))
        want = {d: dict.fromkeys(decisions, 0) for d in decisions}
        for o in data:
            want[str(o.label)][decide(tuple(map(float, params)), decisions, o.value)] += 1  # type: ignore[arg-type]
        assert index.confusion(tuple(map(float, params))) == want
    assert index.confusion((2.0, 2.0, 1.0))["none"] == {d: sum(1 for o in data if o.label == "none" and
                                                                decide((2.0, 2.0, 1.0), decisions, o.value) == d)  # type: ignore[arg-type]
                                                            for d in decisions}


def test_a_non_finite_measure_is_undecided_as_in_the_stored_document() -> None:
    """A target's NaN (or inf) is written as null in the run document: the ranking `evalh
    run` stores from the results in memory must be the one `evalh sweep` gives over that
    document, so such a case is undecided, never counted as flagged or passed."""
    import math

    import orjson

    from evalh.config import SuiteConfig
    from evalh.core.analysis.sweep import suite_sweep

    results = []
    for i in range(20):
        bad = i % 2 == 0
        value = math.nan if i % 5 == 0 else math.inf if i == 7 else (0.7 if bad else 0.2) + i / 100
        results.append(CaseResult(case_id=f"c{i}", status="passed", output={"risk": value},
                                  score=value, expected={"label": "bad" if bad else "good"}))
    stored = [CaseResult.model_validate(orjson.loads(orjson.dumps(r.model_dump(mode="json")))) for r in results]
    for measure in ("output:risk", "score"):
        cfg = SuiteConfig.model_construct(sweep=SweepConfig(positive="bad", label="label", measure=measure,
                                                            grid={"threshold": "0.1:0.9:0.1"}))
        in_memory, from_document = suite_sweep("s", cfg, results, None), suite_sweep("s", cfg, stored, None)
        assert in_memory is not None and "error" not in in_memory
        assert in_memory == from_document
