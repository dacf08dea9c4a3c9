"""Error rates of `compare_runs`'s decisions, by simulation: the table in bench/stats_results.md.

Every cell replicates a seeded scenario (`evalh/testing/simulate.py`) and counts how often
compare says what. The same script measures an older evalh: point ``--evalh`` at a checkout
of it (the simulation module is loaded from this repository by path, and uses only the
run models, which have not changed).

    python bench/stats_bench.py --out bench/stats_after.json
    mkdir -p bench/.work/evalh-before && git archive 35ed637~1 evalh | tar -x -C bench/.work/evalh-before
    python bench/stats_bench.py --evalh bench/.work/evalh-before --reps 0.3 \
        --policy '{"bootstrap_resamples": 500}' --out bench/stats_before.json
    python bench/stats_bench.py --table bench/stats_before.json bench/stats_after.json

``--reps`` scales every cell's replications (1.0 = the committed table). The Monte Carlo
standard error of a share p over R replications is sqrt(p(1 − p)/R); the table prints it.
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


def _load_simulate() -> Any:
    spec = importlib.util.spec_from_file_location("evalh_simulate", ROOT / "evalh/testing/simulate.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while it loads
    spec.loader.exec_module(mod)
    return mod


def _fails(cmp: Any) -> bool:
    return bool(getattr(cmp, "fails_gate", cmp.regressed))


def _row(cmp: Any, suite: str, name: str) -> Any:
    return next(m for m in cmp.suites[suite].metrics if m.name == name)


Cell = dict[str, Any]


def cells(sim: Any, compare: Callable[..., Any], scale: float, only: str | None = None) -> list[Cell]:
    S = sim.Scenario
    out: list[Cell] = []
    from evalh.core.compare import models as compare_models

    new = "latency_ms" in str(compare_models.MetricName)  # the row's name before and after

    def reps(r: int) -> int:
        return max(20, int(r * scale))

    def share(title: str, claim: str, bound: str, r: int, fn: Callable[[int], bool],
              exact: int | None = None) -> None:
        if only and only not in title:
            return
        t0 = time.perf_counter()
        n = exact or reps(r)
        hits = sum(fn(seed) for seed in range(n))
        p = hits / n
        out.append({"title": title, "claim": claim, "bound": bound, "reps": n, "share": p,
                    "mc_se": math.sqrt(max(p * (1 - p), 1e-12) / n),
                    "seconds": round(time.perf_counter() - t0, 1)})
        print(f"{title}: {p:.3f} ({n} reps)", file=sys.stderr)

    # 1. A/A: the whole comparison (every row of every suite) fails the gate.
    for k in (1, 3, 5):
        for n in (50, 200, 500):
            sc = {f"s{i}": S(n, graded=True, cost_ratio=1.0, latency_ratio=1.0) for i in range(k)}
            share(f"A/A, {k} suite(s) x 4 rows, n={n}: gate fails", "family false fail",
                  "<= 5 %", 400 if n < 500 else 200,
                  lambda seed, sc=sc: _fails(compare(*sim.run_pair(sc, 10_000 + seed))))
    # 2. A true pass-rate drop inside the allowance (0.8 x 5 points), and at it.
    for frac, bound in ((0.8, "<= 5 %"), (1.0, "<= 5 %")):
        for n in (100, 400, 1600):
            sc = {"s": S(n, delta=-0.05 * frac)}
            share(f"true drop {frac:g} x allowance, n={n}: pass_rate regressed",
                  "false alarm inside the allowance", bound, 400,
                  lambda seed, sc=sc: _row(compare(*sim.run_pair(sc, 20_000 + seed)), "s",
                                           "pass_rate").verdict == "regressed")
    # 3. A true drop at or beyond the allowance must not be called flat.
    for frac in (1.0, 1.5):
        for n in (100, 400, 1600):
            sc = {"s": S(n, delta=-0.05 * frac)}
            share(f"true drop {frac:g} x allowance, n={n}: pass_rate flat",
                  "false flat beyond the allowance", "<= 5 %", 400,
                  lambda seed, sc=sc: _row(compare(*sim.run_pair(sc, 30_000 + seed)), "s",
                                           "pass_rate").verdict == "flat")
    # 4. Power at the printed cases_needed, for the change it names (2 x allowance).
    for n0, kind in ((60, "binary"), (40, "graded x3")):
        if only and only not in f"{kind}: true drop 2 x allowance":
            continue
        pilot = S(n0, delta=-0.10) if kind == "binary" else S(n0, delta=-0.04, graded=True, repeats=3)
        metric = "pass_rate" if kind == "binary" else "mean_score"
        printed: list[int] = []
        for seed in range(200):
            row = _row(compare(*sim.run_pair({"s": pilot}, 40_000 + seed)), "s", metric)
            if row.verdict == "inconclusive" and row.cases_needed:
                printed.append(row.cases_needed)
            if len(printed) >= max(5, int(20 * scale)):
                break
        per = max(10, int(40 * scale))

        def at_printed(i: int, printed: list[int] = printed, pilot: Any = pilot,
                       metric: str = metric, per: int = per) -> bool:
            n = printed[i // per]
            return _row(compare(*sim.run_pair({"s": replace(pilot, n=n)}, 50_000 + i)), "s",
                        metric).verdict == "regressed"

        median = sorted(printed)[len(printed) // 2]
        share(f"{kind}: true drop 2 x allowance, at the cases_needed printed for pilots of "
              f"n={n0}: regressed", "power at cases_needed", "80 % +- 5", 0, at_printed,
              exact=per * len(printed))
        out[-1]["detail"] = f"median printed {median}, {len(printed)} pilots"
    # 5. Interval coverage (95 %) of the true change.
    kinds = {
        "pass/fail, 1 attempt": (lambda n: S(n, delta=-0.03), "pass_rate"),
        "pass/fail, 3 repeats": (lambda n: S(n, delta=-0.03, repeats=3), "pass_rate"),
        "graded, 10 groups with a shared shock": (
            lambda n: S(n, delta=-0.02, graded=True, groups=10, shock=0.03), "mean_score"),
        "cost, +20 %": (lambda n: S(n, graded=True, cost_ratio=1.2), "cost_usd"),
        "latency, +10 %": (lambda n: S(n, graded=True, latency_ratio=1.1),
                           "latency_ms" if new else "latency_ms_p50"),
    }
    for label, (make, metric) in kinds.items():
        for n in (20, 50, 200):
            sc = make(n)

            def covers(seed: int, sc: Any = sc, metric: str = metric) -> bool:
                row = _row(compare(*sim.run_pair({"s": sc}, 60_000 + seed)), "s", metric)
                t = sim.true_change(sc, metric)
                return row.interval is not None and row.interval[0] <= t <= row.interval[1]

            share(f"coverage, {label}, n={n}", "95 % interval covers the true change",
                  "93-97 %", 600, covers)
    # 6. Clustered cases (10 groups of 20 sharing a shock), A/A: graded scores, so the
    # shared shock dominates the per-case noise (a design effect of about 4).
    sc1 = S(200, graded=True, groups=10, shock=0.05)

    def clustered(seed: int) -> Any:
        return _row(compare(*sim.run_pair({"s": sc1}, 70_000 + seed)), "s", "mean_score")

    share("A/A, 10 groups of 20 with a shared shock: mean_score regressed", "false alarm",
          "<= 2.5 %", 600, lambda seed: clustered(seed).verdict == "regressed")
    share("A/A, 10 groups of 20 with a shared shock: interval covers 0", "coverage",
          "93-97 %", 600,
          lambda seed: (lambda r: r.interval is not None and r.interval[0] <= 0 <= r.interval[1])(
              clustered(seed)))
    # 7. A fast target with identical outputs: 4 ms, 12 % jitter.
    for n in (50, 200):
        sc = {"s": S(n, graded=True, latency_ratio=1.0, latency_ms=4.0, latency_jitter=0.12)}
        share(f"A/A, 4 ms target, n={n}: latency row flat", "no noise verdict on latency",
              ">= 95 %", 300,
              lambda seed, sc=sc: _row(compare(*sim.run_pair(sc, 80_000 + seed)), "s",
                                       "latency_ms" if new else "latency_ms_p50").verdict == "flat")
    return out


def measure(args: argparse.Namespace) -> None:
    if args.evalh:
        sys.path.insert(0, str(Path(args.evalh).resolve()))
    import evalh
    from evalh.core.compare.decide import ComparePolicy, compare_runs

    kwargs = json.loads(args.policy) if args.policy else {}
    policy = ComparePolicy(**kwargs)
    sim = _load_simulate()
    t0 = time.perf_counter()
    table = cells(sim, lambda b, c: compare_runs(b, c, policy), args.reps, args.only)
    doc = {"evalh": str(Path(evalh.__file__).parent.parent.name), "policy": kwargs,
           "reps_scale": args.reps, "seconds": round(time.perf_counter() - t0), "cells": table}
    out = Path(args.out)
    if args.only and out.exists():  # measured again: replace those cells, keep the others
        old = json.loads(out.read_text())
        fresh = {c["title"]: c for c in table}
        kept = [c for c in old["cells"] if args.only not in c["title"]]
        doc = {**old, "cells": sorted([*kept, *fresh.values()], key=_order(old["cells"]))}
    out.write_text(json.dumps(doc, indent=1) + "\n")


def _order(cells: list[Cell]) -> Callable[[Cell], int]:
    rank = {c["title"]: i for i, c in enumerate(cells)}
    return lambda c: rank.get(c["title"], len(rank))


def _pct(c: Cell | None) -> str:
    if c is None:
        return "—"
    return f"{c['share'] * 100:.1f} % ± {c['mc_se'] * 100:.1f} ({c['reps']})"


def table_lines(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The markdown table of two results documents' cells, matched by title (every
    statistics bench's before/after table)."""
    old = {c["title"]: c for c in before["cells"]}
    lines = ["| scenario | aim | before | after |", "| --- | --- | ---: | ---: |"]
    for c in after["cells"]:
        b = old.get(c["title"])
        before_text = _pct(b) + (f"; {b['detail']}" if b and b.get("detail") else "")
        after_text = _pct(c) + (f"; {c['detail']}" if c.get("detail") else "")
        lines.append(f"| {c['title']} | {c['bound']} | {before_text} | {after_text} |")
    return lines


def table(before_path: str, after_path: str) -> None:
    before = json.loads(Path(before_path).read_text())
    after = json.loads(Path(after_path).read_text())
    print("\n".join(table_lines(before, after)))
    print()
    print(f"Shares with their Monte Carlo standard error and (replications). Before: "
          f"policy {before['policy'] or 'default'}, {before['seconds']} s; after: "
          f"{after['seconds']} s.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--evalh", help="root of the evalh checkout to measure (default: this one)")
    ap.add_argument("--reps", type=float, default=1.0, help="scale of every cell's replications")
    ap.add_argument("--policy", help="ComparePolicy keyword arguments, as JSON")
    ap.add_argument("--out", default="bench/stats_after.json")
    ap.add_argument("--only", help="measure only the cells whose title contains this, merged into --out")
    ap.add_argument("--table", nargs=2, metavar=("BEFORE", "AFTER"), help="print the markdown table")
    args = ap.parse_args()
    if args.table:
        table(*args.table)
    else:
        measure(args)


if __name__ == "__main__":
    main()
