"""Pure statistics for deciding over the same fixed cases, and for deciding as rounds come in.

No I/O, deterministic. Three pieces (the method and its measured error rates are in
``docs/methodology.md``, "The fixed-suite estimand" and "Deciding in rounds"):

- `fixed_suite_estimate`: the change of a mean of per-case figures over the *same fixed
  cases*, whose only randomness is the attempts' (conditional, finite-population
  inference). Its variance sums each case's own attempt noise; the spread of the per-case
  effects is not noise under this estimand.
- `allocate`, `plan_looks`: how many candidate attempts each case gets, fixed from the
  baseline's per-case attempts only (so every per-case mean stays unbiased): water-filling
  of Neyman's allocation, one attempt at least; `plan_looks` cuts the same greedy order at
  `LOOKS` multiples of the cases, so every look's attempts are themselves Neyman's
  allocation for what has been spent by then.
- `spending_boundaries` (Lan & DeMets 1983 error spending; Jennison & Turnbull 1989
  repeated confidence intervals): per-round multipliers that keep every interval of every
  round valid at once, however often one looks; `mixture_multiplier` is the
  continuous-monitoring normal-mixture boundary (Robbins 1970; Howard et al. 2021), wider,
  kept to measure what continuous validity would cost.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from functools import lru_cache
from statistics import NormalDist

from evalh.core.stats.intervals import Estimate

DEFAULT_BUDGET = 8.0
"""Candidate attempts per case, on average, that a suite may spend by default (800 target
calls for 100 cases). Most of it is for a candidate that looks worse: on the reference
workload an unchanged candidate is settled `flat` at a median of 2.5× the calls of a plain
run, while a drop of twice the allowance needs about 5× to be called `regressed` 80 % of
the time (no design does it at 3×: bench/sequential_results.md, "The frontier")."""

LOOKS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)
"""Where the rounds look, in attempts per case (cut at the budget, which is always a look):
close together where an unchanged candidate settles, wider apart after."""

RHO_FLAT = 1.0
"""Exponent of the error spending α·t^ρ of the `flat` side: α·t, spent evenly over the
information (Lan & DeMets's Pocock-type function), earlier than the `regressed` side, so an
unchanged candidate settles in the first looks. Its error (`flat` when the change is a drop
of the allowance or more) is still at most α."""

RHO_REGRESSED = 3.0
"""Exponent of the `regressed` side's spending: close to O'Brien & Fleming's boundary,
little spent early and nearly the fixed-n multiplier at the end."""

MOST_PER_CASE = 16
"""The most attempts any one case gets."""

MIN_VARYING = 8
"""Fewest cases with a nonzero variance term the fixed-suite interval needs: below it the
variance estimate rests on too few cases (zero when every case agreed), and the caller
falls back to the population interval."""

_N = NormalDist()
_GRID = 301
"""Grid points of the Brownian sub-density (±10 sd): boundaries within 0.003 of a grid 4×
finer, crossing probabilities within 1 % of α by simulation (tests/test_stats_sequential.py)."""


# --------------------------------------------------------------------------- the estimand


def case_variance(diff: float, within: float | None) -> float:
    """Variance term of one case's difference d = (candidate mean − base mean).

    `within`: the unbiased variance of d from each side's own attempts (s²/m on each side,
    Bessel-corrected) when both sides have two attempts or more; None when a side has one
    attempt, whose variance no single attempt can show. Then d² is used: its expectation is
    Var(d) + (q − p)², never below the variance, and equal to it on a case the change left
    alone (q = p). Conservative only on changed cases, and only by their own effect."""
    if within is not None:
        return max(within, 0.0)
    return diff * diff


def fixed_suite_estimate(
    diffs: Sequence[float], variances: Sequence[float], *, min_varying: int = MIN_VARYING
) -> Estimate | None:
    """Mean of per-case differences over the fixed cases, with SE² = Σ Vᵢ / n² (Vᵢ from
    `case_variance`) and Student's t at Satterthwaite's degrees of freedom counting one per
    variance term, (Σ Vᵢ)² / Σ Vᵢ² (conservative: a Bessel-corrected term has more).
    None when fewer than `min_varying` cases have a nonzero term."""
    n = len(diffs)
    if n == 0 or n != len(variances):
        return None
    total = math.fsum(variances)
    varying = sum(1 for v in variances if v > 0)
    if varying < min_varying or total <= 0:
        return None
    se = math.sqrt(total) / n
    df = max(1.0, total * total / math.fsum(v * v for v in variances))
    return Estimate(math.fsum(diffs) / n, se, df, "abs", n)


def bernoulli_within(passed: int, attempts: int) -> float | None:
    """Unbiased variance of the mean of `attempts` pass/fail attempts (None below two)."""
    if attempts < 2:
        return None
    p = passed / attempts
    return p * (1.0 - p) / (attempts - 1)


# --------------------------------------------------------------------------- allocation


def planning_variance(passed: int, attempts: int) -> float:
    """A case's per-attempt variance for planning, from the baseline's attempts of it:
    p̃(1 − p̃) with p̃ = (passed + ½)/(attempts + 1), never zero (nine passes of nine do
    not prove a case cannot fail)."""
    p = (passed + 0.5) / (attempts + 1.0)
    return p * (1.0 - p)


def allocate(variances: Sequence[float], budget: int, *, most: int = 16) -> list[int]:
    """Attempts per case: one each, then each further attempt to the case whose variance
    of the mean it lowers most (σ²/m − σ²/(m + 1)), until `budget` attempts in all or
    every case has `most`. This is Neyman's allocation (variance ∝ Σ σᵢ²/mᵢ minimised at
    mᵢ ∝ σᵢ) in integers. It reads the baseline only, never the candidate, so every
    case's attempt count is fixed before its first candidate attempt and its mean is
    unbiased."""
    n = len(variances)
    m = [1] * n
    spend = budget - n
    heap = [(-(v / 2.0), i) for i, v in enumerate(variances) if most > 1]
    heapq.heapify(heap)
    while spend > 0 and heap:
        _, i = heapq.heappop(heap)
        m[i] += 1
        spend -= 1
        if m[i] < most:
            v = variances[i]
            heapq.heappush(heap, (-(v / m[i] - v / (m[i] + 1)), i))
    return m


def plan_looks(variances: Sequence[float], budget: int, *, most: int = 16,
               looks: Sequence[float] = LOOKS) -> list[list[int]]:
    """Attempts per case at every look: `allocate` at min(k·n, `budget`) attempts for each k
    of `looks` below the budget, then at the budget. The greedy order is the same at every
    budget, so the looks are nested (a case never loses an attempt) and each is Neyman's
    allocation for its own spend. Looks that add nothing (every case at `most`) are dropped,
    and so is a look within a tenth of an attempt a case of the budget: the budget's look
    would add almost no information and spend what α it has left on it (at 101 attempts over
    100 cases, a round of one call whose multiplier is 2.10 where one look needs 1.96)."""
    n = len(variances)
    if n == 0:
        return []
    budget = max(budget, n)
    spends = sorted({min(round(k * n), budget) for k in looks if 10 * k * n <= 10 * budget - n}
                    | {budget})
    out: list[list[int]] = []
    for b in spends:
        m = allocate(variances, b, most=most)
        if not out or m != out[-1]:
            out.append(m)
    return out


def planned_variance(variances: Sequence[float], attempts: Sequence[int],
                     base_variances: Sequence[float]) -> float:
    """Σ (σᵢ²/mᵢ + bᵢ) / n²: the variance of the change planned for `attempts`, with
    `base_variances` bᵢ the variance of each case's baseline mean."""
    n = len(variances)
    return math.fsum(v / max(m, 1) + b for v, m, b in zip(variances, attempts, base_variances,
                                                          strict=True)) / (n * n)


def information_fractions(variances: Sequence[float], looks: Sequence[Sequence[int]],
                          base_variances: Sequence[float]) -> list[float]:
    """Information fraction of each look (`plan_looks`): planned variance at the last look
    over planned variance at this one. Fixed from the baseline before the candidate runs,
    so the looks' boundaries are too."""
    if not looks:
        return []
    final = planned_variance(variances, looks[-1], base_variances)
    out = []
    for m in looks:
        at = planned_variance(variances, m, base_variances)
        out.append(min(1.0, final / at) if at > 0 else 1.0)
    out[-1] = 1.0
    return out


# --------------------------------------------------------------------------- boundaries


def spent(t: float, alpha: float, rho: float) -> float:
    """Error spent by information fraction t: α·t^ρ (Kim & DeMets 1987; ρ = 3 is close to
    O'Brien & Fleming's boundary: little spent early, nearly the fixed-n multiplier at the
    end)."""
    return alpha * min(1.0, max(0.0, t)) ** rho


def spending_boundaries(fractions: Sequence[float], alpha: float, rho: float = 3.0) -> list[float]:
    """One-sided multipliers c₁..c_K for looks at information fractions t₁ < … < t_K:
    a standardised statistic Z_k crosses c_k at some look with probability at most α
    when there is no effect, the k-th look spending α(t_k) − α(t_{k−1}) (Lan & DeMets
    1983). Computed by recursive numerical integration of the Brownian motion's
    sub-density (Armitage, McPherson & Rowe 1969) on a grid. A look that spends
    nothing gets +inf (it cannot decide)."""
    key = tuple(round(t, 4) for t in fractions)
    return list(_boundaries(key, round(alpha, 10), rho))


@lru_cache(maxsize=4096)
def _boundaries(fractions: tuple[float, ...], alpha: float, rho: float) -> tuple[float, ...]:
    import numpy as np
    from scipy.optimize import brentq
    from scipy.special import ndtr, ndtri

    out: list[float] = []
    grid = None
    dens = None
    prev_t = 0.0
    prev_spent = 0.0
    for t in fractions:
        if t <= prev_t + 1e-9:  # no information since the last look: nothing to spend
            out.append(math.inf)
            continue
        target = spent(t, alpha, rho) - prev_spent
        if grid is None:
            c = float(ndtri(1.0 - target)) if target > 0 else math.inf
            b = c * math.sqrt(t)
            lo = -10.0 * math.sqrt(t)
            grid = np.linspace(lo, min(b, 10.0 * math.sqrt(t)), _GRID)
            dens = np.exp(-grid * grid / (2 * t)) / math.sqrt(2 * math.pi * t)
        else:
            assert dens is not None
            sd = math.sqrt(t - prev_t)
            weights = np.full(grid.size, grid[1] - grid[0])
            weights[0] *= 0.5
            weights[-1] *= 0.5
            mass = dens * weights

            def crossing(b: float, mass: np.ndarray = mass, sd: float = sd, grid: np.ndarray = grid) -> float:
                return float(np.sum(mass * (1.0 - ndtr((b - grid) / sd))))

            if target <= 0:
                b = math.inf
                c = math.inf
            else:
                hi = grid[-1] + 12 * sd
                lo_b = grid[0] - 12 * sd
                if crossing(hi) >= target:
                    b = hi
                elif crossing(lo_b) <= target:
                    b = lo_b
                else:
                    b = brentq(lambda x, goal=target: crossing(x) - goal, lo_b, hi, xtol=1e-7)
                c = b / math.sqrt(t)
            top = min(b, 10.0 * math.sqrt(t))
            new = np.linspace(-10.0 * math.sqrt(t), top, _GRID)
            diff = new[:, None] - grid[None, :]
            kern = np.exp(-diff * diff / (2 * sd * sd)) / (sd * math.sqrt(2 * math.pi))
            dens = kern @ mass
            grid = new
        out.append(c)
        prev_t = t
        prev_spent += max(target, 0.0)
    return tuple(out)


def student_multiplier(c: float, df: float) -> float:
    """A normal multiplier c carried to Student's t at `df` degrees of freedom (the same
    tail probability): the standard error is itself estimated."""
    if not math.isfinite(c) or math.isinf(df):
        return c
    from evalh.core.stats.intervals import t_quantile

    tail = _N.cdf(-c)
    if tail <= 0:
        return c
    return t_quantile(1.0 - tail, df)


def look_multipliers(fractions: Sequence[float], k: int, alpha: float, family: float,
                     df: float, rho: float = RHO_REGRESSED,
                     rho_flat: float = RHO_FLAT) -> tuple[float, float]:
    """(c_flat, c_regressed) at look k (1-based) of rounds at information `fractions`:
    error-spending boundaries spending α (for `flat`, one-sided, exponent `rho_flat`) and
    α/`family` (for `regressed`, Bonferroni over the family's rows; a weighted row passes
    1/its share; exponent `rho`), carried to Student's t at `df`. The two sides test
    different hypotheses (a drop of the allowance or more; a drop of less), each at its own
    α, so each may spend on its own schedule. What `compare.family.apply_rounds` and the
    simulation both use."""
    k = min(k, len(fractions))  # c_k depends on t_1..t_k only: the whole schedule is cached
    c_flat = spending_boundaries(fractions, alpha, rho_flat)[k - 1]
    c_reg = spending_boundaries(fractions, alpha / max(family, 1), rho)[k - 1]
    return student_multiplier(c_flat, df), student_multiplier(c_reg, df)


def mixture_multiplier(t: float, alpha: float, ratio: float = 10.0) -> float:
    """One-sided normal-mixture confidence-sequence multiplier at information fraction t
    (valid at every attempt, not only between rounds): the boundary
    √(2(V + ρ) log(√((V + ρ)/ρ)/α)) of Howard et al. (2021, eq. 14; Robbins 1970) divided
    by √V, with ρ = V_final / `ratio` (tightest near the end of the budget)."""
    r = ratio * max(t, 1e-9)
    return math.sqrt(2.0 * (1.0 + 1.0 / r) * math.log(math.sqrt(1.0 + r) / alpha))


def sequential_verdict(
    estimate: float, se: float, allowance: float, c_flat: float, c_regressed: float
) -> str:
    """`regressed` when estimate + c_regressed·se < −allowance, `improved` when
    estimate − c_flat·se > allowance, `flat` when estimate − c_flat·se ≥ −allowance, else
    `inconclusive` (a change oriented so that a gain is positive)."""
    lo, hi = estimate - c_flat * se, estimate + c_regressed * se
    eps = 1e-12
    if hi < -allowance - eps:
        return "regressed"
    if lo > allowance + eps:
        return "improved"
    if lo >= -allowance - eps:
        return "flat"
    return "inconclusive"


def z_quantile(p: float) -> float:
    """Standard-normal quantile."""
    return _N.inv_cdf(p)


def unchanged_calls(variances: Sequence[float], looks: Sequence[Sequence[int]],
                    base_variances: Sequence[float], allowance: float, alpha: float,
                    rho_flat: float = RHO_FLAT, draws: int = 4000, seed: int = 26) -> dict[str, float]:
    """What rounds at `looks` (`plan_looks`) are expected to spend on an unchanged candidate
    (true change 0, per-attempt variances `variances`, baseline-mean variances
    `base_variances`): the change at look k is the candidate's mean over its first mᵢₖ
    attempts less the baseline's, so its path is Gaussian with Cov(k, j) = B + C_max(k,j)
    (B the baseline's variance of the mean, C_k the candidate's at look k; the looks are
    nested). A seeded draw of `draws` such paths stops each at its first `flat` (or
    `improved`) look with the `flat` multipliers of `spending_boundaries` at the looks'
    information fractions. Returns the median and mean calls, the share settled `flat`,
    the budget (the last look's attempts) and a plain run's calls (one a case). Normal, not
    Student: a plan, not a decision."""
    import numpy as np

    n = len(variances)
    rounds = len(looks)
    if n == 0 or rounds == 0:
        return {"median_calls": 0.0, "mean_calls": 0.0, "flat": 0.0, "budget": 0.0, "plain": float(n)}
    fractions = information_fractions(variances, looks, base_variances)
    c_flat = spending_boundaries(fractions, alpha, rho_flat)
    b = math.fsum(base_variances) / (n * n)
    c = [math.fsum(v / m for v, m in zip(variances, look, strict=True)) / (n * n) for look in looks]
    calls = [sum(look) for look in looks]
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((draws, rounds))
    cand = np.empty((draws, rounds))  # built backwards: the last look's mean, then earlier ones
    cand[:, -1] = z[:, -1] * math.sqrt(c[-1])
    for k in range(rounds - 2, -1, -1):
        cand[:, k] = cand[:, k + 1] + z[:, k] * math.sqrt(max(c[k] - c[k + 1], 0.0))
    est = cand - rng.standard_normal((draws, 1)) * math.sqrt(b)
    se = np.sqrt(b + np.asarray(c))
    settled = est - np.asarray(c_flat) * se >= -allowance
    first = np.where(settled.any(axis=1), settled.argmax(axis=1), rounds - 1)
    spent = np.asarray(calls)[first]
    return {"median_calls": float(np.median(spent)), "mean_calls": float(spent.mean()),
            "flat": float(settled.any(axis=1).mean()), "budget": float(calls[-1]),
            "plain": float(n)}


def suite_budget(cases: int, budget: int | None) -> int:
    """A suite's attempts in all: `budget`, else `DEFAULT_BUDGET` × its cases; never below
    one a case."""
    return max(budget or round(DEFAULT_BUDGET * cases), cases)


def paired_positions(ids: Sequence[str], arms: Sequence[str],
                     counts: dict[tuple[str, str], tuple[int, int]]) -> list[int]:
    """Positions in `ids` of the cases some arm of the baseline attempted (`counts`): the
    others cannot be paired with the baseline."""
    return [i for i, cid in enumerate(ids) if any((cid, a) in counts for a in arms)]


def plan_suite(ids: list[str], arms: list[str], counts: dict[tuple[str, str], tuple[int, int]],
               budget: int | None) -> tuple[list[list[int]], dict[str, list[float]], tuple[list[float], list[float]]]:
    """A suite's looks (`plan_looks` within `budget` attempts, default `DEFAULT_BUDGET` × its
    cases), each arm's information fractions at them, and the per-case planning and
    baseline-mean variances (the arms' mean) — from the baseline's (case, arm) → (passed,
    attempts) `counts` only. A case no arm of the baseline attempted cannot be paired (the
    comparison leaves it out), so it gets one attempt at every look and no part in the
    allocation or the fractions; the variances returned are the paired cases'."""
    known = paired_positions(ids, arms, counts)
    paired = [ids[i] for i in known]
    per_arm: dict[str, tuple[list[float], list[float]]] = {}
    for arm in arms:
        plan_var, base_var = [], []
        for cid in paired:
            passed, k = counts.get((cid, arm), (0, 0))
            v = planning_variance(passed, k) if k else 0.25
            plan_var.append(v)
            base_var.append(v / k if k else 0.0)
        per_arm[arm] = (plan_var, base_var)
    joint = [sum(per_arm[a][0][i] for a in arms) / len(arms) for i in range(len(paired))]
    joint_base = [sum(per_arm[a][1][i] for a in arms) / len(arms) for i in range(len(paired))]
    part = plan_looks(joint, suite_budget(len(ids), budget) - (len(ids) - len(paired)),
                      most=MOST_PER_CASE)
    fractions = {a: information_fractions(pv, part, bv) for a, (pv, bv) in per_arm.items()}
    looks = []
    for m in part or ([[]] if ids else []):
        full = [1] * len(ids)
        for i, a in zip(known, m, strict=True):
            full[i] = a
        looks.append(full)
    return looks, fractions, (joint, joint_base)
