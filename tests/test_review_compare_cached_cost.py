"""Review of issue 10: a cached result is recorded with ``cost_usd = 0.0`` ("no cost",
`evalh.core.run.runner`), and compare's cost row averages it as a real cost. The latency row
leaves cached results out; the cost row does not, so a base run that was half served from
the response cache makes an identical, uncached candidate "regress" on cost by +100 %."""

from __future__ import annotations

from compare_factory import make_run, suite

from evalh.core.compare.decide import compare_runs
from evalh.models import CaseResult


def _result(i: int, cached: bool) -> CaseResult:
    cost = 0.01 * (1 + (i % 3) * 0.1)
    return CaseResult(case_id=f"c{i}", case_digest=f"d{i}", status="passed", score=1.0,
                      cost_usd=0.0 if cached else cost, cached=cached, latency_ms=500.0 + i)


def test_cache_hits_in_the_base_do_not_make_an_unchanged_candidate_regress_on_cost() -> None:
    base = [_result(i, cached=i % 2 == 0) for i in range(40)]  # half served from the cache
    cand = [_result(i, cached=False) for i in range(40)]       # same product, cold cache
    cmp = compare_runs(make_run("b", {"s": suite(base, "stochastic")}),
                       make_run("c", {"s": suite(cand, "stochastic")}))
    cost = next(m for m in cmp.suites["s"].metrics if m.name == "cost_usd")
    # Every uncached attempt cost the same on both sides: nothing rose.
    assert cost.verdict != "regressed", (cost.change, cost.interval)
    assert not cmp.fails_gate, cmp.gate_reasons
