"""The minimum detectable change, through the CLI on real runs: `evalh baseline noise`,
`evalh run --dry-run` and every `evalh compare` format say which pass-rate drop the suite
catches with 80 % power, and each figure is recomputed here from the run documents."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest
from test_baseline_pool import _docs, cli, make_runs, noisy  # noqa: F401 - the fixture

from evalh.core.stats.intervals import t_quantile


def _solve(se0: float, cases: int, attempts: float, allowance: float, alpha: float,
           already: float = 0.0) -> float:
    """d = a + (t₁₋α + t₀.₈)·SE(d), SE(d)² = SE₀² + x(1 − x)/(attempts·cases) with x the
    drop beyond the one observed: by fixed-point iteration (the library bisects)."""
    k = t_quantile(1 - alpha, cases - 1) + t_quantile(0.8, cases - 1)
    d = allowance
    for _ in range(200):
        x = max(0.0, d - already)
        d = allowance + k * math.sqrt(se0 ** 2 + x * (1 - x) / (attempts * cases))
    return d


def _expected_drop(docs: list[dict[str, Any]], cases: int, cand_attempts: int, allowance: float,
                   alpha: float) -> float:
    """The drop solved from SE₀ of each case's pooled pass fraction (unbiased p(1 − p))."""
    per_case: dict[str, list[bool]] = {}
    for d in docs:
        for r in d["suites"]["noisy"]["cases"]:
            per_case.setdefault(r["case_id"], []).append(r["status"] == "passed")
    var = [statistics.fmean(v) * (1 - statistics.fmean(v)) * len(v) / (len(v) - 1)
           for v in per_case.values()]
    m = statistics.fmean(len(v) for v in per_case.values())
    se = math.sqrt(statistics.fmean(var) * (1 / m + 1 / cand_attempts) / cases)
    return _solve(se, cases, cand_attempts, allowance, alpha)


def test_noise_and_dry_run_say_what_the_suite_can_detect(noisy: Path) -> None:  # noqa: F811
    # Without a baseline: the worst case (p = 0.5 on every case), said so.
    dry = cli(noisy, "run", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    d = next(s for s in json.loads(dry.stdout)["suites"] if s["name"] == "noisy")["detectable"]
    worst = _solve(math.sqrt(0.25 * 2 / 30), 30, 1, 0.05, 0.025)
    assert d["change"] == pytest.approx(-worst, abs=1e-9) and d["noise"].startswith("worst")
    text = cli(noisy, "run", "--dry-run").stdout
    assert (f"noisy: with 30 cases, pass-rate drops ≥ {worst * 100:.1f} pp are caught 80 % of "
            "the time (noise not measured: at worst, p = 0.5 on every case)") in text
    smoke = next(s for s in json.loads(dry.stdout)["suites"] if s["name"] == "smoke")
    assert smoke["detectable"] is None  # deterministic: by case name

    ids = make_runs(noisy, 3)
    assert cli(noisy, "baseline", "set", *ids).exit_code == 0
    expected = _expected_drop(_docs(noisy, ids), 30, 1, 0.05, 0.025)
    result = cli(noisy, "baseline", "noise", "--json")
    assert result.exit_code == 0, result.output
    det = json.loads(result.stdout)["suites"]["noisy"]["detectable"]
    assert det["change"] == pytest.approx(-expected, abs=1e-9)
    assert (det["cases"], det["candidate_attempts"], det["base_attempts"]) == (30, 1, 3)
    # Per gating row: the median of what each A/A pair, compared on its own, can detect.
    rows = json.loads(result.stdout)["suites"]["noisy"]["rows"]
    pairs = [(ids[0], ids[1]), (ids[0], ids[2]), (ids[1], ids[2])]
    per_pair = [next(m for m in json.loads(cli(noisy, "compare", a, b, "--format", "json").stdout)
                     ["suites"]["noisy"]["metrics"] if m["name"] == "pass_rate")["detectable_change"]
                for a, b in pairs]
    rate = next(r for r in rows if r["name"] == "pass_rate")
    assert rate["gating"] and rate["detectable_change"] == pytest.approx(statistics.median(per_pair))
    assert all(r["detectable_change"] is None for r in rows if not r["gating"])
    line = (f"with 30 cases and this noise, pass-rate drops ≥ {expected * 100:.1f} pp are "
            "caught 80 % of the time")
    assert line in cli(noisy, "baseline", "noise").stdout
    # The dry run plans with the baseline's noise now: the same figure for the same shape.
    d = next(s for s in json.loads(cli(noisy, "run", "--dry-run", "--json").stdout)["suites"]
             if s["name"] == "noisy")["detectable"]
    assert d["change"] == pytest.approx(-expected, abs=1e-9)
    assert f"noisy: {line}" in cli(noisy, "run", "--dry-run").stdout
    # Three repeats a case: smaller noise, a smaller drop caught.
    d3 = next(s for s in json.loads(cli(noisy, "run", "--dry-run", "--json", "--repeats", "3").stdout)
              ["suites"] if s["name"] == "noisy")["detectable"]
    assert d3["change"] == pytest.approx(-_expected_drop(_docs(noisy, ids), 30, 3, 0.05, 0.025), abs=1e-9)
    assert -d3["change"] < expected


def test_every_compare_format_says_what_each_gating_row_can_detect(noisy: Path) -> None:  # noqa: F811
    ids = make_runs(noisy, 3)
    assert cli(noisy, "baseline", "set", *ids).exit_code == 0
    make_runs(noisy, 1)
    # The default (fixed-suite) row says what it can detect too, on the worse side.
    result = cli(noisy, "compare", "--format", "json")
    assert result.exit_code == 0, result.output
    fixed = next(m for m in json.loads(result.stdout)["suites"]["noisy"]["metrics"]
                 if m["name"] == "pass_rate")
    assert fixed["estimand"] == "fixed-suite" and fixed["gating"] and fixed["detectable_change"] < 0
    # The population row's, recomputed from its own interval (Student's t at clusters − 1).
    result = cli(noisy, "compare", "--format", "json", "--estimand", "population")
    assert result.exit_code == 0, result.output
    row = next(m for m in json.loads(result.stdout)["suites"]["noisy"]["metrics"]
               if m["name"] == "pass_rate")
    # Recomputed from the row's own interval: SE = half-width / t₀.₉₇₅, level α × its weight.
    lo, hi = row["interval"]
    df = row["clusters"] - 1
    se = (hi - lo) / 2 / t_quantile(0.975, df)
    alpha = 0.025 * row["weight"]
    drop = _solve(se, row["n"], 1, row["allowance"], alpha, max(0.0, -row["change"]))
    assert row["gating"] and row["detectable_change"] == pytest.approx(-drop, rel=1e-9)
    text = f"with 30 cases and this noise, drops ≥ {drop * 100:.1f} pp are caught 80 % of the time"
    for fmt in ("table", "markdown"):
        out = cli(noisy, "compare", "--format", fmt, "--estimand", "population").stdout.replace("\\", "")
        assert text in " ".join(out.split()), out


def test_a_single_attempt_row_says_what_tangos_test_can_detect(noisy: Path) -> None:  # noqa: F811
    from evalh.core.stats.paired import tango_detectable

    base, cand = make_runs(noisy, 2)
    # Tango's score test is the population estimand's, for one pass/fail attempt a side.
    result = cli(noisy, "compare", base, cand, "--format", "json", "--estimand", "population")
    assert result.exit_code == 0, result.output
    row = next(m for m in json.loads(result.stdout)["suites"]["noisy"]["metrics"]
               if m["name"] == "pass_rate")
    assert row["method"].startswith("Tango")
    # The 2×2 table counted from the two run documents.
    b_doc, c_doc = _docs(noisy, [base, cand])
    xb = {r["case_id"]: r["status"] == "passed" for r in b_doc["suites"]["noisy"]["cases"]}
    xc = {r["case_id"]: r["status"] == "passed" for r in c_doc["suites"]["noisy"]["cases"]}
    table = [sum(1 for k in xb if (xb[k], xc[k]) == cell)
             for cell in ((True, True), (True, False), (False, True), (False, False))]
    expected = tango_detectable(*table, -0.05, -1.0, 0.025 * row["weight"], 0.8)
    assert expected is not None and row["detectable_change"] == pytest.approx(expected, abs=1e-12)
    text = (f"with 30 cases and this noise, drops ≥ {-expected * 100:.1f} pp are caught 80 % "
            "of the time")
    out = cli(noisy, "compare", base, cand, "--estimand", "population").stdout
    assert text in " ".join(out.split())
