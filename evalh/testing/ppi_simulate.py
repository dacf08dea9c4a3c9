"""Seeded simulation of a biased judge corrected by a random labelled subset (PPI++).

Used by ``tests/test_stats_ppi.py`` (a few hundred replications) and ``bench/ppi_bench.py``
(the table in ``bench/ppi_results.md``). Each replication draws `judged` items whose
human-scale outcome passes with probability `p`; the judge passes a human fail with
probability `false_pass` and fails a human pass with probability `false_fail`; humans
label a uniformly random `labelled` of them (the first ones: the items are i.i.d.).

Three estimates of the human-scale pass rate are scored against the true `p`:

- **judge alone**: the judge's pass rate over every judged item, Wilson interval;
- **humans alone**: the labelled items' pass rate, Wilson interval (what `label report`
  gives without a judge);
- **corrected**: the PPI++ estimate and its 95 % normal interval (`evalh.core.stats.ppi`).

A second run at `p − drop` (its own items, its own labelled sample) measures power: the
share of replications whose 95 % interval of the difference lies wholly below zero (the
`regressed` rule of `evalh compare` with a zero allowance). Humans alone use Newcombe's
hybrid score interval for two independent proportions. With `drop = 0` the same count is
the false-regression rate.
"""

from __future__ import annotations

import math
import random
from typing import Any

from evalh.core.stats.intervals import wilson_interval
from evalh.core.stats.ppi import ppi_difference, ppi_mean


def _items(rng: random.Random, p: float, m: int, fp: float, fn: float) -> tuple[list[float], list[float]]:
    ys, js = [], []
    for _ in range(m):
        y = rng.random() < p
        j = (rng.random() >= fn) if y else (rng.random() < fp)
        ys.append(float(y))
        js.append(float(j))
    return ys, js


def _newcombe_diff(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
    """Newcombe (1998) method 10: interval of p2 − p1 from two Wilson intervals."""
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1)  # type: ignore[misc]
    l2, u2 = wilson_interval(k2, n2)  # type: ignore[misc]
    d = p2 - p1
    return d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2), d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)


def _share(hits: int, reps: int) -> dict[str, float]:
    p = hits / reps
    return {"value": p, "mc_se": math.sqrt(p * (1 - p) / reps)}


def _mean_se(xs: list[float]) -> dict[str, float]:
    m = math.fsum(xs) / len(xs)
    var = math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1)
    return {"value": m, "mc_se": math.sqrt(var / len(xs))}


def simulate(
    *, reps: int, seed: int, p: float = 0.7, drop: float = 0.10, judged: int = 1000, labelled: int = 100,
    false_pass: float = 0.15, false_fail: float = 0.05,
) -> dict[str, Any]:
    """Coverage, mean width and power of the three estimates (see the module doc), each
    with its Monte Carlo standard error (`<measure>_mc_se`)."""
    cover = {"judge": 0, "human": 0, "ppi": 0}
    widths: dict[str, list[float]] = {"judge": [], "human": [], "ppi": []}
    detect = {"human": 0, "ppi": 0}
    for r in range(reps):
        rng = random.Random(seed * 1_000_003 + r)
        runs = []
        for q in (p, p - drop):
            ys, js = _items(rng, q, judged, false_pass, false_fail)
            runs.append((ys[:labelled], js[:labelled], js[labelled:], sum(js)))
        (ya, ja, ua, ka), (yb, jb, ub, _) = runs
        judge_iv = wilson_interval(int(ka), judged)
        human_iv = wilson_interval(int(sum(ya)), labelled)
        est_a = ppi_mean(ya, ja, ua)
        for name, iv in (("judge", judge_iv), ("human", human_iv), ("ppi", est_a.interval)):
            assert iv is not None
            cover[name] += iv[0] <= p <= iv[1]
            widths[name].append(iv[1] - iv[0])
        diff = ppi_difference(est_a, ppi_mean(yb, jb, ub))
        detect["ppi"] += diff.interval[1] < 0
        detect["human"] += _newcombe_diff(int(sum(ya)), labelled, int(sum(yb)), labelled)[1] < 0
    out: dict[str, Any] = {"reps": reps, "seed": seed, "p": p, "drop": drop, "judged": judged,
                           "labelled": labelled, "false_pass": false_pass, "false_fail": false_fail}
    for name in ("judge", "human", "ppi"):
        cov, wid = _share(cover[name], reps), _mean_se(widths[name])
        out[name] = {"coverage": cov["value"], "coverage_mc_se": cov["mc_se"],
                     "width": wid["value"], "width_mc_se": wid["mc_se"]}
        if name in detect:
            pw = _share(detect[name], reps)
            out[name].update(power=pw["value"], power_mc_se=pw["mc_se"])
    h, c = out["human"], out["ppi"]
    out["width_ratio"] = c["width"] / h["width"]
    if h["power"] > 0 and c["power"] > 0:
        ratio = c["power"] / h["power"]
        out["power_ratio"] = ratio
        out["power_ratio_mc_se"] = ratio * math.hypot(c["power_mc_se"] / c["power"], h["power_mc_se"] / h["power"])
    return out
