"""A BASELINE of one run vs several pooled: how much do verdicts on unchanged code depend on
which baseline run you happened to get?

    python bench/baseline_pool_bench.py            # writes bench/baseline_pool_results.md
    python bench/baseline_pool_bench.py --quick    # fewer baselines and candidates

Simulation (fixed seed): one stochastic suite of `n` cases, pass/fail, one attempt a case
per run; each case has its own pass probability (uniform 0.3–1.0, so cases differ as real
ones do). A baseline is `k` runs of that product pooled with `evalh.core.compare.pool.pool_runs`;
each baseline is compared with the one `compare_runs` against `M` fresh runs of the *same*
product (A/A: every verdict other than `flat` is noise). Per baseline we record the share
of candidates that are `regressed`, `inconclusive` with the estimate on the worse side
(what `--fail-on-inconclusive` fails), and `flat`; the table gives their mean over
baselines and the 95th percentile over baselines (how bad a lucky-high baseline is), and
the sd of the baseline's own pass rate around the truth.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from compare_factory import fast_result, make_run, suite  # noqa: E402

from evalh.core.compare.decide import compare_runs  # noqa: E402
from evalh.core.compare.pool import pool_runs  # noqa: E402


def simulate(n: int, ks: list[int], baselines: int, candidates: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    p = [rng.uniform(0.3, 1.0) for _ in range(n)]
    truth = statistics.fmean(p)
    counter = iter(range(10**9))

    def one_run():
        i = next(counter)
        rs = []
        for c in range(n):
            ok = rng.random() < p[c]
            rs.append(fast_result(f"c{c}", "passed" if ok else "failed", float(ok)))
        return make_run(f"r{i:08d}", {"s": suite(rs, "stochastic")})

    out = []
    for k in ks:
        shares = {"regressed": [], "worse": [], "flat": []}
        base_err = []
        for _ in range(baselines):
            runs = [one_run() for _ in range(k)]
            base = runs[0] if k == 1 else pool_runs(runs)
            cases = base.suites["s"].cases
            base_err.append(sum(r.status == "passed" for r in cases) / len(cases) - truth)
            got = {"regressed": 0, "worse": 0, "flat": 0}
            for _ in range(candidates):
                cmp = compare_runs(base, one_run())
                row = cmp.suites["s"].metrics[0]
                got["regressed"] += row.verdict == "regressed"
                got["worse"] += row.verdict == "inconclusive" and (row.change or 0) < 0
                got["flat"] += row.verdict == "flat"
            for key in shares:
                shares[key].append(got[key] / candidates)
        row = {"n": n, "k": k, "baselines": baselines, "candidates": candidates,
               "base_sd_pp": statistics.pstdev(base_err) * 100}
        for key, vals in shares.items():
            vals = sorted(vals)
            row[f"{key}_mean"] = statistics.fmean(vals)
            row[f"{key}_p95"] = vals[min(len(vals) - 1, int(0.95 * len(vals)))]
            row[f"{key}_p5"] = vals[int(0.05 * len(vals))]
        out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args()
    baselines, candidates = (10, 10) if args.quick else (30, 20)
    t0 = time.time()
    rows = []
    for n in (50, 200):
        rows += simulate(n, [1, 3, 5], baselines, candidates, args.seed + n)
    took = time.time() - t0
    lines = [
        "# A BASELINE of one run vs several pooled (A/A)",
        "",
        f"`python bench/baseline_pool_bench.py` (seed {args.seed}; {baselines} baselines × "
        f"{candidates} unchanged candidates per setting; {took:.0f} s). One stochastic suite, "
        "pass/fail, per-case pass probability uniform 0.3–1.0, default allowance (5 pp). "
        "`k` = baseline runs pooled. Shares are of candidates per baseline: mean over "
        "baselines, and the 95th percentile over baselines (a lucky-high baseline; for "
        "`flat`, the 5th). "
        "`worse` = inconclusive with the estimate on the worse side (fails with "
        "`--fail-on-inconclusive`). Monte Carlo error of a mean share ≈ "
        f"±{100 * (0.25 / (baselines * candidates)) ** 0.5:.1f} points at worst (binomial, "
        "ignoring the clustering by baseline, which the p95 column shows).",
        "",
        "| cases | k | sd of the baseline's pass rate | regressed mean | regressed p95 "
        "| worse mean | worse p95 | flat mean | flat p5 |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['k']} | {r['base_sd_pp']:.1f} pp | {r['regressed_mean']:.1%} | "
            f"{r['regressed_p95']:.0%} | {r['worse_mean']:.1%} | {r['worse_p95']:.0%} | "
            f"{r['flat_mean']:.1%} | {r['flat_p5']:.0%} |"
        )
    text = "\n".join(lines) + "\n"
    if not args.quick:
        (HERE / "baseline_pool_results.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
