"""Error rates of the gate's weak intervals and of its family, by simulation: the table in
bench/gate_results.md (issue 26, items 3 and 6).

Every cell replicates a seeded scenario (`evalh/testing/simulate.py`) through
`compare_runs` and counts how often it says what. Like bench/stats_bench.py it can measure
an older evalh (``--evalh``; the simulation module is loaded from this repository by path
and uses only the run models):

    python bench/gate_bench.py --out bench/gate_after.json
    mkdir -p bench/.work/evalh-before && git archive 44f7108 evalh | tar -x -C bench/.work/evalh-before
    python bench/gate_bench.py --evalh bench/.work/evalh-before --out bench/gate_before.json
    python bench/gate_bench.py --table bench/gate_before.json bench/gate_after.json
    # Tango's interval (the population estimand) for the single-attempt pass/fail cells:
    python bench/gate_bench.py --estimand population --only pass/fail --out bench/gate_after_population.json

``--reps`` scales every cell's replications (1.0 = the committed table). The Monte Carlo
standard error of a share p over R replications is sqrt(p(1 − p)/R).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
Cell = dict[str, Any]


def _load_simulate() -> Any:
    spec = importlib.util.spec_from_file_location("evalh_simulate", ROOT / "evalh/testing/simulate.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _row(cmp: Any, suite: str, name: str) -> Any:
    return next(m for m in cmp.suites[suite].metrics if m.name == name)


def _gated(names: list[str], rows: list[str], weights: dict[str, float] | None = None) -> dict[str, Any]:
    """Both runs' config snapshot: each suite gates on `rows` (and its weight)."""
    return {"suites": {n: {"gate": rows, **({"gate_weight": weights[n]} if weights and n in weights
                                            else {})} for n in names}}


def cells(sim: Any, compare: Callable[..., Any], scale: float, only: str | None = None) -> list[Cell]:
    S = sim.Scenario
    out: list[Cell] = []

    def reps(r: int) -> int:
        return max(20, int(r * scale))

    def share(title: str, claim: str, bound: str, r: int, fn: Callable[[int], bool],
              exact: int | None = None) -> Cell | None:
        if only and only not in title:
            return None
        t0 = time.perf_counter()
        n = exact or reps(r)
        hits = sum(fn(seed) for seed in range(n))
        p = hits / n
        cell = {"title": title, "claim": claim, "bound": bound, "reps": n, "share": p,
                "mc_se": math.sqrt(max(p * (1 - p), 1e-12) / n),
                "seconds": round(time.perf_counter() - t0, 1)}
        out.append(cell)
        print(f"{title}: {p:.3f} ({n} reps)", file=sys.stderr)
        return cell

    # 1. The cost row's 95 % interval on lognormal costs (per-case and per-attempt spread).
    for case_sd in (1.0, 1.5):
        for n in (20, 50, 100, 200):
            sc = S(n, cost_ratio=1.2, cost_case_sd=case_sd, cost_attempt_sd=0.5)

            def covers(seed: int, sc: Any = sc) -> bool:
                row = _row(compare(*sim.run_pair({"s": sc}, 60_000 + seed)), "s", "cost_usd")
                t = sim.true_change(sc, "cost_usd")
                return row.interval is not None and row.interval[0] <= t <= row.interval[1]

            share(f"cost +20 %, lognormal case sd {case_sd:g}, attempt sd 0.5, n={n}: 95 % "
                  "interval covers", "coverage", "93-97 %", 600, covers)

    # 2. Power at the cost row's printed cases_needed (a rise of twice the 25 % allowance).
    title = "cost +50 % (2 x allowance), case sd 1.0: regressed at the cases_needed printed for pilots of n=40"
    if not only or only in title:
        pilot = S(40, cost_ratio=1.5, cost_case_sd=1.0, cost_attempt_sd=0.5)
        cfg = _gated(["s"], ["pass_rate", "cost_usd"])
        printed: list[int] = []
        for seed in range(400):
            row = _row(compare(*sim.run_pair({"s": pilot}, 40_000 + seed, cfg)), "s", "cost_usd")
            if row.verdict == "inconclusive" and row.cases_needed:
                printed.append(row.cases_needed)
            if len(printed) >= max(5, int(40 * scale)):
                break
        per = max(10, int(15 * scale))

        def at_printed(i: int) -> bool:
            sc = replace(pilot, n=printed[i // per])
            return _row(compare(*sim.run_pair({"s": sc}, 50_000 + i, cfg)), "s",
                        "cost_usd").verdict == "regressed"

        cell = share(title, "power at cases_needed", "80 % +- 5", 0, at_printed, exact=per * len(printed))
        if cell is not None:
            cell["detail"] = f"median printed {sorted(printed)[len(printed) // 2]}, {len(printed)} pilots"

    # 3. Single-attempt pass/fail coverage where Newcombe's interval over-covers.
    for label, workload in (("levels 0.8-0.98", "high"), ("reference workload", "reference")):
        for n in (20, 50, 200):
            sc = S(n, delta=-0.03, workload=workload)

            def covers_p(seed: int, sc: Any = sc) -> bool:
                row = _row(compare(*sim.run_pair({"s": sc}, 70_000 + seed)), "s", "pass_rate")
                return row.interval is not None and row.interval[0] <= sc.delta <= row.interval[1]

            share(f"pass/fail, 1 attempt, {label}, n={n}: 95 % interval covers", "coverage",
                  "93-97 %", 800, covers_p)

    # 4. One suite drops by twice the allowance; four unchanged suites beside it.
    ref = S(400, workload="reference", cost_ratio=1.0, latency_ratio=1.0)
    names = [f"s{i}" for i in range(5)]
    drop = replace(ref, delta=-0.10)
    single = share("reference, n=400, drop 2 x allowance, the suite alone: regressed",
                   "single-suite power", "(reference)", 600,
                   lambda seed: _row(compare(*sim.run_pair({"s0": drop}, 80_000 + seed)), "s0",
                                     "pass_rate").verdict == "regressed")
    five = {"s0": drop, **{k: ref for k in names[1:]}}
    for label, cfg in (("", None), (", s0 declared gate_weight 4", _gated(names, ["pass_rate", "mean_score", "error_rate"], {"s0": 4.0}))):
        cell = share(f"reference, n=400, drop 2 x allowance in 1 suite, 4 unchanged suites beside it{label}: regressed",
                     "power beside unchanged suites", ">= 80 % of single-suite", 600,
                     lambda seed, cfg=cfg: _row(compare(*sim.run_pair(five, 80_000 + seed, cfg)), "s0",
                                                "pass_rate").verdict == "regressed")
        if cell is not None and single is not None and single["share"] > 0:
            ratio = cell["share"] / single["share"]
            cell["detail"] = f"{ratio * 100:.1f} % of single-suite power"

    # 5. A drop inside the allowance (0.8 x) is not called regressed.
    for n in (100, 400):
        sc = replace(ref, n=n, delta=-0.04)
        share(f"reference, n={n}, drop 0.8 x allowance: regressed", "false alarm inside the allowance",
              "<= 5 %", 600,
              lambda seed, sc=sc: _row(compare(*sim.run_pair({"s": sc}, 90_000 + seed)), "s",
                                       "pass_rate").verdict == "regressed")

    # 6. Five unchanged suites: the gate fails (family-wise false fail).
    for n in (100, 400):
        sc = replace(ref, n=n)
        share(f"reference, n={n}, 5 unchanged suites: the gate fails", "family-wise false fail",
              "<= 5 %", 600,
              lambda seed, sc=sc: bool(compare(*sim.run_pair({k: sc for k in names}, 100_000 + seed)).fails_gate))
    # 6b. The least favourable null: every suite drops by exactly its allowance.
    edge = replace(ref, n=100, delta=-0.05)
    share("reference, n=100, 5 suites each dropping by exactly the allowance: some suite regressed",
          "family-wise false regressed at the boundary", "<= 2.5 %", 600,
          lambda seed: bool(compare(*sim.run_pair({k: edge for k in names}, 140_000 + seed)).regressed))

    # 7. Graded suites (pass rate and mean score: two dependent rows each), unchanged.
    graded = S(50, graded=True, cost_ratio=1.0, latency_ratio=1.0)
    share("graded, n=50, 5 unchanged suites x pass rate + mean score: the gate fails",
          "family-wise false fail", "<= 5 %", 600,
          lambda seed: bool(compare(*sim.run_pair({k: graded for k in names}, 110_000 + seed)).fails_gate))

    # 8. The printed minimum detectable change, caught with the promised power (after only).
    for label, sc0 in (("reference workload, n=200", S(200, workload="reference")),
                       ("levels 0.35-0.85, n=200", S(200)),
                       ("reference workload, 3 repeats, n=100", S(100, workload="reference", repeats=3))):
        title = f"{label}: a drop of the printed minimum detectable change is regressed"
        if only and only not in title:
            continue
        printed = [getattr(_row(compare(*sim.run_pair({"s": sc0}, 120_000 + seed)), "s", "pass_rate"),
                           "detectable_change", None) for seed in range(max(5, int(20 * scale)))]
        if any(d is None for d in printed):
            continue
        d = sorted(printed)[len(printed) // 2]
        cell = share(title, "power at the minimum detectable change", ">= 80 %", 400,
                     lambda seed, sc0=sc0, d=d: _row(compare(*sim.run_pair({"s": replace(sc0, delta=d)},
                                                                       130_000 + seed)), "s",
                                                     "pass_rate").verdict == "regressed")
        if cell is not None:
            cell["detail"] = f"median printed {d * 100:+.1f} pp over {len(printed)} pilots"
    return out


def measure(args: argparse.Namespace) -> None:
    if args.evalh:
        sys.path.insert(0, str(Path(args.evalh).resolve()))
    import evalh
    from evalh.core.compare.decide import ComparePolicy, compare_runs

    policy = ComparePolicy(estimand=args.estimand) if args.estimand else ComparePolicy()
    sim = _load_simulate()
    t0 = time.perf_counter()
    table = cells(sim, lambda b, c: compare_runs(b, c, policy), args.reps, args.only)
    doc = {"evalh": str(Path(evalh.__file__).parent.parent.name), "reps_scale": args.reps,
           "seconds": round(time.perf_counter() - t0), "cells": table}
    out = Path(args.out)
    if args.only and out.exists():  # measured again: replace those cells, keep the others
        old = json.loads(out.read_text())
        kept = [c for c in old["cells"] if args.only not in c["title"]]
        rank = {c["title"]: i for i, c in enumerate(old["cells"])}
        doc = {**old, "cells": sorted([*kept, *table], key=lambda c: rank.get(c["title"], len(rank)))}
    out.write_text(json.dumps(doc, indent=1) + "\n")


def table(before_path: str, after_path: str) -> None:
    from stats_bench import table_lines  # the one before/after table of the statistics benches

    before = json.loads(Path(before_path).read_text())
    after = json.loads(Path(after_path).read_text())
    print("\n".join(table_lines(before, after)))
    print()
    print(f"Shares with their Monte Carlo standard error and (replications). Before: "
          f"{before['seconds']} s; after: {after['seconds']} s.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--evalh", help="root of the evalh checkout to measure (default: this one)")
    ap.add_argument("--reps", type=float, default=1.0, help="scale of every cell's replications")
    ap.add_argument("--out", default="bench/gate_after.json")
    ap.add_argument("--only", help="measure only the cells whose title contains this, merged into --out")
    ap.add_argument("--estimand", choices=("fixed-suite", "population"),
                    help="the estimand the comparisons use (default: evalh's own default)")
    ap.add_argument("--table", nargs=2, metavar=("BEFORE", "AFTER"), help="print the markdown table")
    args = ap.parse_args()
    if args.table:
        table(*args.table)
    else:
        measure(args)


if __name__ == "__main__":
    main()
