"""The family of a comparison (issue 26, item 3): declared gating rows, suite weights
(weighted Holm) and the conditionalized family across suites."""

from __future__ import annotations

from pathlib import Path

import pytest
from compare_factory import binary_runs, make_run, result, suite
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.config import ConfigError, load_config
from evalh.core.compare.decide import SELECT, compare_runs
from evalh.core.stats import intervals as stats


def test_weighted_holm_with_equal_weights_is_holm() -> None:
    p = [0.01, 0.04, 0.03, 0.5, 0.002]
    assert stats.weighted_holm(p, [2.0] * 5)[0] == pytest.approx(stats.holm(p))
    adjusted, shares = stats.weighted_holm(p, [1.0] * 5)
    assert shares[4] == pytest.approx(1 / 5) and shares[0] == pytest.approx(1 / 4)
    # A heavier weight tests its row first and at a larger share of alpha.
    adjusted, shares = stats.weighted_holm([0.02, 0.01], [4.0, 1.0])
    assert shares[0] == pytest.approx(0.8) and adjusted[0] == pytest.approx(0.025)
    with pytest.raises(ValueError):
        stats.weighted_holm([0.1], [0.0])


def test_conditionalized_holm_drops_rows_far_inside_their_null() -> None:
    # Two rows with p near 1 (unchanged, far from the allowance) step out: the one with
    # p = 0.01 is held to alpha·τ, not alpha/3.
    adjusted, shares = stats.weighted_holm([0.01, 0.97, 0.99], [1.0] * 3, select=0.8)
    assert adjusted[0] == pytest.approx(0.01 / 0.8) and adjusted[1:] == [1.0, 1.0]
    assert shares[0] == pytest.approx(0.8)
    # Nothing steps out: each p is divided by τ, the rest is Holm.
    plain = stats.holm([0.01, 0.02])
    assert stats.weighted_holm([0.01, 0.02], [1.0, 1.0], select=0.8)[0] == pytest.approx(
        [x / 0.8 for x in plain])


def test_cost_and_latency_do_not_gate_unless_declared_and_a_change_cannot_loosen_its_gate() -> None:
    base = [result(f"c{i}", "passed", latency_ms=100.0, cost_usd=0.01) for i in range(100)]
    cand = [result(f"c{i}", "passed", latency_ms=100.0, cost_usd=0.03) for i in range(100)]
    declared = {"suites": {"s": {"gate": ["pass_rate", "cost_usd"]}}}
    plain = compare_runs(make_run("b", {"s": suite(base, "stochastic")}),
                         make_run("c", {"s": suite(cand, "stochastic")}))
    assert plain.suites["s"].verdict == "flat" and not plain.fails_gate
    # Declared in the base and dropped by the candidate: still gating (the union).
    cmp = compare_runs(make_run("b", {"s": suite(base, "stochastic")}, config=declared),
                       make_run("c", {"s": suite(cand, "stochastic")},
                                config={"suites": {"s": {"gate": ["pass_rate"]}}}))
    cost = next(m for m in cmp.suites["s"].metrics if m.name == "cost_usd")
    assert cost.gating and cost.verdict == "regressed" and cmp.fails_gate


def test_suite_weights_and_the_conditional_family_are_recorded() -> None:
    b1, c1 = binary_runs(2000, 0.8, 0.8, seed=11)
    b2, c2 = binary_runs(2000, 0.8, 0.6, seed=4)
    config = {"suites": {"a": {"gate_weight": 3}, "b": {}}}
    base = make_run("b", {"a": b1.suites["s"], "b": b2.suites["s"]}, config=config)
    cand = make_run("c", {"a": c1.suites["s"], "b": c2.suites["s"]}, config=config)
    cmp = compare_runs(base, cand)
    assert cmp.family.weights == {"a": 3.0, "b": 1.0} and cmp.family.select == SELECT
    assert "weighted Holm" in cmp.family.method and "conditionalized" in cmp.family.method
    dropped = next(m for m in cmp.suites["b"].metrics if m.name == "pass_rate")
    unchanged = next(m for m in cmp.suites["a"].metrics if m.name == "pass_rate")
    # The unchanged suite steps out: the dropped one is held to alpha·τ alone.
    assert unchanged.p_worse is not None and unchanged.p_worse > SELECT
    assert dropped.verdict == "regressed" and dropped.alpha_adjusted == pytest.approx(0.025 * SELECT)
    # One suite: a plain (weighted) Holm, no selection.
    assert compare_runs(b2, c2).family.select is None


def test_an_unknown_gate_row_is_refused_naming_it(project: Path) -> None:
    cfg = project / "evalh.toml"
    cfg.write_text(cfg.read_text().replace('regime = "deterministic"', 'regime = "stochastic"')
                   + 'gate = ["pass_rate", "latency_p50"]\n')
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert "evalh.toml: suites.smoke.gate[1]: Input should be" in info.value.message
    result_ = CliRunner().invoke(app, ["run", "--dry-run", "--config", str(cfg)])
    assert result_.exit_code == 2 and "gate" in result_.stderr
    assert len(result_.stderr.strip().splitlines()) == 1


def test_gate_and_weight_reach_the_run_document_only_when_set(project: Path) -> None:
    import json

    cfg = project / "evalh.toml"
    runs = project / "runs"

    def snapshot() -> dict[str, object]:
        result_ = CliRunner().invoke(app, ["run", "-q", "--json", "--config", str(cfg),
                                           "--runs-dir", str(runs)])
        assert result_.exit_code == 0, result_.output
        run_id = json.loads(result_.stdout)["run_id"]
        doc = json.loads((runs / f"{run_id}.json").read_bytes())
        return doc["config"]["suites"]["smoke"]  # type: ignore[no-any-return]

    assert "gate" not in snapshot() and "gate_weight" not in (snap := snapshot()) and snap
    cfg.write_text(cfg.read_text().replace('regime = "deterministic"', 'regime = "stochastic"')
                   + 'gate = ["pass_rate", "cost_usd"]\ngate_weight = 4\n')
    snap = snapshot()
    assert snap["gate"] == ["pass_rate", "cost_usd"] and snap["gate_weight"] == 4
