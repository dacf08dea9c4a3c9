"""Simulation of the gate on the reference workload, through evalh's own decision functions.

The reference workload (issue 26, named in docs/methodology.md): a suite of 100 cases whose
per-case pass probabilities are 0.98 for 60 %, 0.02 for 15 % and uniform on 0.2–0.8 for 25 %;
a baseline of 3 runs × 3 repeats pooled per case (9 attempts a case); an allowance of 5 pp.

Two designs are simulated, each with the functions the CLI uses:

- `before`: today's single-attempt candidate against the pooled baseline, the population
  interval (`stats.clustered_mean` over the per-case differences, Student's t) and the
  family's Holm level — what `evalh run --compare-baseline` did before this version;
- `rounds`: `evalh run --compare-baseline --until-decided`: looks planned from the
  baseline (`stats.sequential.plan_looks`), run in rounds (round k brings every case to its
  attempts at look k), the fixed-suite interval (`stats.sequential.fixed_suite_estimate`)
  with the round's error-spending multipliers, stopping once the row is decided.

Pure numpy + the standard library; seeded, so every share is reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from evalh.core.stats import intervals as stats
from evalh.core.stats.sequential import (
    DEFAULT_BUDGET,
    MOST_PER_CASE,
    RHO_FLAT,
    RHO_REGRESSED,
    bernoulli_within,
    case_variance,
    fixed_suite_estimate,
    information_fractions,
    look_multipliers,
    mixture_multiplier,
    plan_looks,
    planning_variance,
    sequential_verdict,
    student_multiplier,
)

ALLOWANCE = 0.05
BASE_ATTEMPTS = 9  # 3 runs × 3 repeats, pooled per case


def reference_probs(rng: np.random.Generator, n: int = 100) -> np.ndarray:
    """Per-case pass probabilities of the reference workload (shares rounded to cases)."""
    stable = round(0.60 * n)
    failing = round(0.15 * n)
    rest = n - stable - failing
    return np.concatenate([np.full(stable, 0.98), np.full(failing, 0.02),
                           rng.uniform(0.2, 0.8, rest)])


Change = Callable[[np.ndarray, np.random.Generator], np.ndarray]


def unchanged(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return p.copy()


def spread_drop(size: float) -> Change:
    """Every case's pass probability scaled down so the mean falls by exactly `size`."""
    def change(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return p * (1.0 - size / float(p.mean()))
    return change


def concentrated_drop(size: float, cases: int = 20) -> Change:
    """`cases` near-always-passing cases fall by size·n/cases each (10 pp on 20 of 100 cases:
    0.98 → 0.48); the others are unchanged."""
    def change(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        q = p.copy()
        high = np.flatnonzero(p >= 0.9)
        hit = rng.choice(high, size=cases, replace=False)
        q[hit] = p[hit] - size * len(p) / cases
        return q
    return change


@dataclass(frozen=True)
class Outcome:
    verdict: str
    calls: int
    rounds: int
    truth: float


def _base(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return rng.binomial(BASE_ATTEMPTS, p)


def before(p: np.ndarray, q: np.ndarray, rng: np.random.Generator, *, family: int = 1,
           confidence: float = 0.95) -> Outcome:
    """One candidate attempt a case against the pooled baseline, as evalh decided before:
    the paired t interval over per-case differences, regressed at the family's level."""
    from evalh.core.compare.metrics import decide

    xb = _base(p, rng) / BASE_ATTEMPTS
    y = rng.binomial(1, q).astype(float)
    diffs = list(y - xb)
    est = stats.clustered_mean(diffs)
    truth = float(q.mean() - p.mean())
    if est is None:
        return Outcome("inconclusive", len(p), 1, truth)
    iv = est.interval(confidence)
    verdict = decide(est.value, iv, ALLOWANCE, "higher")
    alpha = (1 - confidence) / 2 / family  # Holm's first step; the others are unchanged
    if verdict == "regressed" and est.p_below(-ALLOWANCE) > alpha:
        verdict = "inconclusive"
    return Outcome(verdict, len(p), 1, truth)


@dataclass
class _Planned:
    """One suite planned as `--until-decided` plans it: the baseline's pooled per-case means
    and their within-variances, the looks with their information fractions, and the
    candidate's attempts drawn up front (attempt j of case i is used once a look gives
    case i more than j)."""

    xb: np.ndarray
    within_b: list[float]
    looks: list[np.ndarray]
    fractions: list[float]
    draws: np.ndarray
    truth: float

    def estimate(self, k: int) -> stats.Estimate | None:
        """The fixed-suite estimate of the change at look k (1-based)."""
        taken = self.looks[k - 1]
        passed_c = (self.draws & (np.arange(self.draws.shape[1])[None, :] < taken[:, None])).sum(axis=1)
        diffs = passed_c / taken - self.xb
        variances = []
        for i in range(len(taken)):
            wc = bernoulli_within(int(passed_c[i]), int(taken[i]))
            # both sides' own variances when each has two attempts or more (the base has 9)
            variances.append(case_variance(float(diffs[i]), None if wc is None else wc + self.within_b[i]))
        return fixed_suite_estimate(list(diffs), variances)


def _plan(p: np.ndarray, q: np.ndarray, rng: np.random.Generator, budget: float, most: int) -> _Planned:
    """The baseline drawn from `p`, the looks planned from it alone, the candidate's
    attempts drawn from `q`."""
    passed_b = _base(p, rng)
    plan_var = [planning_variance(int(k), BASE_ATTEMPTS) for k in passed_b]
    plan = plan_looks(plan_var, int(round(budget * len(p))), most=most)
    fractions = information_fractions(plan_var, plan, [v / BASE_ATTEMPTS for v in plan_var])
    looks = [np.asarray(m) for m in plan]
    draws = rng.random((len(p), int(looks[-1].max()))) < q[:, None]
    within_b = [bernoulli_within(int(k), BASE_ATTEMPTS) or 0.0 for k in passed_b]
    return _Planned(passed_b / BASE_ATTEMPTS, within_b, looks, fractions, draws, float(q.mean() - p.mean()))


def rounds(p: np.ndarray, q: np.ndarray, rng: np.random.Generator, *, budget: float = DEFAULT_BUDGET,
           family: int = 1, confidence: float = 0.95, boundary: str = "spending",
           rho: float = RHO_REGRESSED, rho_flat: float = RHO_FLAT, most: int = MOST_PER_CASE,
           peek: bool = True) -> Outcome:
    """`--until-decided` on one suite: allocation from the baseline, rounds, a look after
    each (`peek`; else one look at the end), stop once decided. `boundary`: `spending`
    (the default, error spending over the rounds), `mixture` (a normal-mixture confidence
    sequence, valid at every attempt) or `fixed` (the fixed-n t multiplier: no correction
    for peeking — only with `peek=False` is it valid)."""
    planned = _plan(p, q, rng, budget, most)
    fractions, looks = planned.fractions, planned.looks
    alpha_f = (1 - confidence) / 2
    alpha_r = alpha_f / family
    if boundary == "spending":  # computed per look below, as compare does
        c_f = c_r = []
    elif boundary == "mixture":
        c_f = [mixture_multiplier(t, alpha_f) for t in fractions]
        c_r = [mixture_multiplier(t, alpha_r) for t in fractions]
    else:
        c_f = [stats.z_for(1 - 2 * alpha_f)] * len(fractions)
        c_r = [stats.z_for(1 - 2 * alpha_r)] * len(fractions)
    verdict = "inconclusive"
    k_stop = len(looks)
    for k in range(1, len(looks) + 1):
        if not peek and k < len(looks):
            continue
        est = planned.estimate(k)
        if est is None:
            continue
        if boundary == "spending":  # compare.family.apply_rounds's multipliers
            c_flat, c_reg = look_multipliers(fractions, k, alpha_f, family, est.df, rho, rho_flat)
        else:
            c_flat = student_multiplier(c_f[k - 1], est.df)
            c_reg = student_multiplier(c_r[k - 1], est.df)
        if boundary == "fixed" and not peek:
            c_flat = stats.t_quantile(1 - alpha_f, est.df)
            c_reg = stats.t_quantile(1 - alpha_r, est.df)
        v = sequential_verdict(est.value, est.se, ALLOWANCE, c_flat, c_reg)
        if v in ("flat", "regressed", "improved"):
            verdict, k_stop = v, k
            break
    calls = int(looks[k_stop - 1].sum())
    return Outcome(verdict, calls, k_stop, planned.truth)


def share(outcomes: list[Outcome], verdict: str) -> float:
    return sum(o.verdict == verdict for o in outcomes) / len(outcomes)


def mc_error(p: float, reps: int) -> float:
    return math.sqrt(max(p * (1 - p), 0.0) / reps) if reps else math.nan


def family_rounds(ps: list[np.ndarray], qs: list[np.ndarray], rng: np.random.Generator, *,
                  budget: float = DEFAULT_BUDGET, confidence: float = 0.95,
                  rho: float = RHO_REGRESSED, rho_flat: float = RHO_FLAT,
                  most: int = MOST_PER_CASE, select: float | None = None) -> list[Outcome]:
    """`--until-decided` on several suites of one run, as the merged compare decides them:
    after every round each suite's pass-rate row is looked at with its share of the family's
    level — weighted Holm's first share (`compare.family.first_shares`), conditionalized on
    p_worse ≤ `select` (compare's SELECT across two suites or more) and recomputed at every
    look from every suite's current p_worse — and a suite stops taking attempts once decided
    (its look stays at that round, its verdict is what the last round's compare says)."""
    from evalh.core.compare.family import first_shares

    alpha_f = (1 - confidence) / 2
    suites = [_plan(p, q, rng, budget, most) for p, q in zip(ps, qs, strict=True)]

    decided: list[int | None] = [None] * len(suites)
    verdicts = ["inconclusive"] * len(suites)
    last = max(len(s.looks) for s in suites)
    for k in range(1, last + 1):
        at = [min(d or k, len(s.looks)) for d, s in zip(decided, suites, strict=True)]
        ests = [s.estimate(look) for s, look in zip(suites, at, strict=True)]
        tested = [i for i, e in enumerate(ests) if e is not None]
        pw = [ests[i].p_below(-ALLOWANCE) for i in tested]  # type: ignore[union-attr]
        shares = first_shares(pw, [1.0] * len(tested), select)
        for i, share in zip(tested, shares, strict=True):
            est = ests[i]
            assert est is not None
            c_flat, c_reg = look_multipliers(suites[i].fractions, at[i], alpha_f, 1.0 / share, est.df, rho,
                                             rho_flat)
            verdicts[i] = sequential_verdict(est.value, est.se, ALLOWANCE, c_flat, c_reg)
            if decided[i] is None and verdicts[i] in ("flat", "regressed", "improved"):
                decided[i] = k
        if all(d is not None for d in decided):
            break
    return [Outcome(verdicts[i], int(s.looks[min(decided[i] or last, len(s.looks)) - 1].sum()),
                    decided[i] or last, s.truth)
            for i, s in enumerate(suites)]
