"""The measured noise floor of a BASELINE of several runs: how far runs of unchanged code
move against each other.

Pure (no I/O). Every pair of baseline runs is compared with the one `compare_runs` (an A/A
comparison: nothing changed between them), and each suite's cases are counted directly:

- per-case flips: a (case, arm) flips between two runs when its outcome differs (its
  status when every attempt agrees, `mixed` otherwise), over the cases both runs have;
- per metric row: the spread of `change` over the pairs (min, max, mean, sd), how many
  A/A pairs came out `regressed`, `inconclusive`, …, and for a gating row the median of
  the pairs' `detectable_change` (what one run against another can detect);
- per stochastic suite, `detectable`: the pass-rate drop a candidate run like these
  catches against all of them pooled (`detectable_pass_rate`); `until_decided`: the calls
  `--until-decided` is expected to spend on an unchanged candidate against them
  (`expected_unchanged`).

The document (`evalh.baseline-noise/1`) is what `evalh baseline noise --json` prints and
what is stored beside the marker as `BASELINE.noise.json`; `evalh compare` shows one line
per suite from it (`noise_line`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any

from evalh.models import Run, SuiteResult

if TYPE_CHECKING:
    from evalh.core.compare.models import ComparePolicy

NOISE_SCHEMA = "evalh.baseline-noise/1"
MAX_FLIPPED_NAMED = 100
"""Flipped cases named per suite in the document (the count is always whole)."""

_RATES = ("pass_rate", "error_rate")


def case_outcomes(sr: SuiteResult) -> dict[tuple[str, str], str]:
    """(case_id, arm) → the case's outcome in one run: the status its attempts agree on,
    `mixed` when they do not. Skipped attempts do not count; a case with only skipped
    attempts is left out."""
    seen: dict[tuple[str, str], set[str]] = {}
    for r in sr.cases:
        if r.status != "skipped":
            seen.setdefault((r.case_id, r.arm), set()).add(r.status)
    return {k: next(iter(v)) if len(v) == 1 else "mixed" for k, v in seen.items()}


def _spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"min": None, "max": None, "mean": None, "sd": None}
    return {
        "min": min(values), "max": max(values), "mean": math.fsum(values) / len(values),
        "sd": statistics.stdev(values) if len(values) > 1 else None,
    }


def measure_noise(
    runs: Sequence[Run], policy: ComparePolicy | None = None, *, measured_at: str | None = None
) -> dict[str, Any]:
    """The noise-floor document of `runs` (two or more runs of one configuration).

    Pairs are (earlier, later) in the order given, each compared as base → candidate.
    Raises `ValueError` with fewer than two runs.
    """
    from evalh.core.compare.decide import compare_runs

    if len(runs) < 2:
        raise ValueError("the noise floor needs at least two runs")
    ids = [r.run_id for r in runs]
    pairs = list(combinations(range(len(runs)), 2))
    comparisons = {(i, j): compare_runs(runs[i], runs[j], policy) for i, j in pairs}
    names: list[str] = []
    for r in runs:
        names += [n for n in r.suites if n not in names]
    suites: dict[str, Any] = {}
    for name in names:
        having = [i for i, r in enumerate(runs) if name in r.suites]
        outcomes = {i: case_outcomes(runs[i].suites[name]) for i in having}
        suite_pairs = [(i, j) for i, j in pairs if i in outcomes and j in outcomes]
        pair_docs: list[dict[str, Any]] = []
        rows: dict[tuple[str, str], dict[str, Any]] = {}  # (arm, row name) → over the pairs
        for i, j in suite_pairs:
            oi, oj = outcomes[i], outcomes[j]
            common = [k for k in oi if k in oj]
            flipped = sum(oi[k] != oj[k] for k in common)
            sc = comparisons[(i, j)].suites[name]
            pair_docs.append({
                "base": ids[i], "candidate": ids[j], "verdict": sc.verdict,
                "cases": len(common), "flipped": flipped,
                "flip_rate": flipped / len(common) if common else None,
            })
            for m in sc.metrics:
                scorer = getattr(m, "scorer", None)  # rows of one named scorer
                label = f"{m.name} {scorer}" if scorer else m.name
                row = rows.setdefault((m.arm, label), {
                    "arm": m.arm, "name": label, "unit": m.unit, "allowance": m.allowance,
                    "changes": [], "verdicts": {}, "detectable": [], "gating": m.gating,
                })
                if m.change is not None:
                    row["changes"].append(m.change)
                if m.detectable_change is not None:
                    row["detectable"].append(m.detectable_change)
                row["verdicts"][m.verdict] = row["verdicts"].get(m.verdict, 0) + 1
        by_case: dict[tuple[str, str], set[str]] = {}
        runs_with: dict[tuple[str, str], int] = {}
        for i in having:
            for k, o in outcomes[i].items():
                by_case.setdefault(k, set()).add(o)
                runs_with[k] = runs_with.get(k, 0) + 1
        shared = [k for k in by_case if runs_with[k] >= 2]
        flips = [k for k in shared if len(by_case[k]) > 1]
        rates = [p["flip_rate"] for p in pair_docs if p["flip_rate"] is not None]
        suites[name] = {
            "detectable": _suite_detectable(runs, having, name, comparisons, policy),
            "until_decided": _suite_rounds(runs, having, name, comparisons, policy),
            "regime": runs[having[0]].suites[name].regime,
            "runs": [ids[i] for i in having],
            "pairs": len(suite_pairs),
            "cases": {
                "compared": len(shared), "flipped": len(flips),
                "flip_rate": len(flips) / len(shared) if shared else None,
                "flipped_cases": [
                    {"case_id": k[0], "arm": k[1],
                     "outcomes": {ids[i]: outcomes[i][k] for i in having if k in outcomes[i]}}
                    for k in flips[:MAX_FLIPPED_NAMED]
                ],
                "pair_flip_rate": _spread(rates),
            },
            "rows": [
                {**{k: v for k, v in row.items() if k not in ("changes", "detectable")},
                 "pairs": len(row["changes"]), "change": _spread(row["changes"]),
                 "changes": row["changes"],
                 # one baseline run against another: what such a pair of runs can detect
                 "detectable_change": (statistics.median(row["detectable"])
                                       if row["detectable"] else None)}
                for row in rows.values()
            ],
            "pair_results": pair_docs,
        }
    return {
        "schema": NOISE_SCHEMA,
        "baseline_runs": ids,
        "pairs": len(pairs),
        "measured_at": measured_at,
        "policy": (policy.model_dump(mode="json") if policy is not None else None),
        "suites": suites,
    }


# --------------------------------------------------------------------------- detectable


def _suite_detectable(
    runs: Sequence[Run], having: list[int], name: str, comparisons: dict[tuple[int, int], Any],
    policy: ComparePolicy | None,
) -> dict[str, Any] | None:
    """What a candidate run like one of these, compared against all of them pooled, can
    detect on the suite's pass rate (`detectable_pass_rate`); None for a deterministic
    suite or without a gating pass-rate row."""
    if len(having) < 2 or runs[having[0]].suites[name].regime != "stochastic":
        return None
    first = next(c for (i, j), c in comparisons.items() if i in having and j in having)
    sc = first.suites[name]
    gating = [m for m in sc.metrics if m.gating and m.interval is not None]
    rate = next((m for m in gating if m.name == "pass_rate"), None)
    if rate is None:
        return None
    pooled = [runs[i] for i in having]
    variances, base_attempts = case_variances(pooled, name)
    _, one = case_variances([pooled[-1]], name)
    family = {s for s, x in first.suites.items()
              if x.regime == "stochastic" and any(m.gating and m.interval for m in x.metrics)}
    return detectable_pass_rate(
        variances, cases=rate.n, base_attempts=base_attempts, cand_attempts=one or 1.0,
        allowance=rate.allowance, policy=policy, suites=len(family), rows=len(gating),
    )




def _suite_rounds(
    runs: Sequence[Run], having: list[int], name: str, comparisons: dict[tuple[int, int], Any],
    policy: ComparePolicy | None,
) -> dict[str, float] | None:
    """What `--until-decided` is expected to spend on an unchanged candidate of a stochastic
    suite against these runs pooled (`expected_unchanged`)."""
    if len(having) < 2 or runs[having[0]].suites[name].regime != "stochastic":
        return None
    first = next(c for (i, j), c in comparisons.items() if i in having and j in having)
    rate = next((m for m in first.suites[name].metrics if m.gating and m.name == "pass_rate"), None)
    if rate is None or rate.allowance is None:
        return None
    confidence = policy.confidence if policy is not None else 0.95
    return expected_unchanged([runs[i] for i in having], name, rate.allowance, confidence=confidence)


def case_variances(runs: Sequence[Run], suite: str) -> tuple[list[float], float]:
    """Per (case, arm) of `suite` with two attempts or more over `runs` pooled: the
    unbiased p(1 − p) of its pass/fail attempts; and the mean attempts a case has there
    (the base's attempts when these runs are the pooled baseline)."""
    from evalh.core.stats.power import case_variance

    counts: dict[tuple[str, str], list[int]] = {}
    for run in runs:
        sr = run.suites.get(suite)
        for r in sr.cases if sr is not None else []:
            if r.status in ("passed", "failed"):
                c = counts.setdefault((r.case_id, r.arm), [0, 0])
                c[0] += r.status == "passed"
                c[1] += 1
    variances = [v for k, m in counts.values() if (v := case_variance(k, m)) is not None]
    mean_attempts = math.fsum(m for _, m in counts.values()) / len(counts) if counts else 0.0
    return variances, mean_attempts


def detectable_pass_rate(
    variances: Sequence[float], *, cases: int, base_attempts: float, cand_attempts: float,
    allowance: float, policy: ComparePolicy | None = None, suites: int = 1, rows: int = 1,
    bound: bool = False,
) -> dict[str, Any] | None:
    """The pass-rate drop a comparison of `cases` cases catches with the policy's power:
    the candidate with `cand_attempts` a case against a base of `base_attempts`, with the
    per-case noise `variances` (`case_variances`). The level is the family's α split over
    the suite's `rows` gating rows, times τ (`compare.SELECT`) when `suites` ≥ 2 (the
    level a regressed suite gets while the unchanged ones step out). `bound`: the
    variances are the worst case, not measured. None without variances or cases."""
    from evalh.core.compare.decide import SELECT
    from evalh.core.compare.models import ComparePolicy
    from evalh.core.stats.power import detectable_rate, pass_rate_se

    if not variances or cases < 1 or base_attempts <= 0 or cand_attempts <= 0:
        return None
    policy = policy or ComparePolicy()
    alpha = (1.0 - policy.confidence) / 2.0 / max(rows, 1) * (SELECT if suites >= 2 else 1.0)
    se = pass_rate_se(variances, cases, base_attempts, cand_attempts)
    drop = detectable_rate(se, cases, cand_attempts, allowance, alpha, policy.power,
                           df=max(cases - 1, 1))
    return {
        "row": "pass_rate", "change": -drop if drop is not None else None, "power": policy.power,
        "alpha": alpha, "cases": cases, "candidate_attempts": cand_attempts,
        "base_attempts": base_attempts, "allowance": allowance, "se": se,
        "noise": "worst case (p = 0.5 on every case)" if bound else "measured on the baseline runs",
    }


def detectable_line(d: dict[str, Any]) -> str:
    """"with 100 cases and this noise, pass-rate drops ≥ 7.0 pp are caught 80 % of the
    time" (with the attempts when there are several; the worst case said so)."""
    attempts = d["candidate_attempts"]
    shape = f"{d['cases']} cases" + (f" x {attempts:g} attempts" if attempts != 1 else "")
    worst = str(d["noise"]).startswith("worst")
    power = f"{d['power'] * 100:g} %"
    if d["change"] is None:
        return f"with {shape}, no pass-rate drop is caught {power} of the time"
    drop = f"{-d['change'] * 100:.1f} pp"
    if worst:
        return (f"with {shape}, pass-rate drops ≥ {drop} are caught {power} of the time "
                "(noise not measured: at worst, p = 0.5 on every case)")
    return f"with {shape} and this noise, pass-rate drops ≥ {drop} are caught {power} of the time"


def expected_unchanged(runs: Sequence[Run], suite: str, allowance: float, *,
                       budget: int | None = None, confidence: float = 0.95,
                       cases: list[str] | None = None, arms: list[str] | None = None,
                       ) -> dict[str, float] | None:
    """What `--until-decided` (`core.run.rounds`) is expected to spend on an unchanged
    candidate of `suite` against `runs` (the baseline, pooled): the looks the run would
    plan from their attempts (of `cases` × `arms`, a planned run's; default the ones the runs
    attempted), then `stats.sequential.unchanged_calls` — the median and mean target calls
    (every arm), the budget and a plain run's calls. None without a case the runs attempted."""
    from evalh.core.stats.sequential import (
        paired_positions,
        plan_suite,
        suite_budget,
        unchanged_calls,
    )

    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for run in runs:
        sr = run.suites.get(suite)
        for r in sr.cases if sr is not None else []:
            if r.status in ("passed", "failed"):
                p0, k0 = counts.get((r.case_id, r.arm), (0, 0))
                counts[(r.case_id, r.arm)] = (p0 + (r.status == "passed"), k0 + 1)
    if not counts:
        return None
    ids = cases if cases is not None else list(dict.fromkeys(cid for cid, _ in counts))
    arms = arms if arms is not None else list(dict.fromkeys(arm for _, arm in counts))
    # cases the baseline never attempted take one attempt at every look (`plan_suite`)
    paired = [ids[i] for i in paired_positions(ids, arms, counts)]
    added = len(ids) - len(paired)
    looks, _, (joint, joint_base) = plan_suite(paired, arms, counts, suite_budget(len(ids), budget) - added)
    out = unchanged_calls(joint, looks, joint_base, allowance, (1.0 - confidence) / 2.0)
    return {k: v if k == "flat" else (v + added) * len(arms) for k, v in out.items()}


def expected_line(e: dict[str, float]) -> str:
    """"--until-decided: an unchanged candidate is expected to stop after 300 calls (median;
    3.0x a plain run of 100; never above 800)"."""
    return (f"--until-decided: an unchanged candidate is expected to stop after "
            f"{e['median_calls']:.0f} calls (median; {e['median_calls'] / e['plain']:.1f}x a plain "
            f"run of {e['plain']:.0f}; never above {e['budget']:.0f})")


# --------------------------------------------------------------------------- text


def _fmt(name: str, unit: str, x: float) -> str:
    if unit == "pct":
        return f"{x:+.1f}"
    if name in _RATES:
        return f"{x * 100:+.1f}"
    return f"{x:+.3f}"


def _unit(name: str, unit: str) -> str:
    return " %" if unit == "pct" else (" pp" if name in _RATES else "")


def row_span(row: dict[str, Any]) -> tuple[str, str] | None:
    """(`pass_rate` or `pass_rate [arm]`, `-4.0 to +3.0 pp`); None without a change
    measured."""
    ch = row.get("change") or {}
    if ch.get("min") is None:
        return None
    name, unit = row["name"], row["unit"]
    arm = f" [{row['arm']}]" if row.get("arm", "default") != "default" else ""
    return (f"{name}{arm}", f"{_fmt(name, unit, ch['min'])} to {_fmt(name, unit, ch['max'])}"
            f"{_unit(name, unit)}")


def noise_line(doc: dict[str, Any], suite: str) -> str | None:
    """One line for `evalh compare`: the spread of each row's change between the baseline
    runs, the cases that flip, and any A/A pair that came out regressed. None when the
    document has nothing for `suite`."""
    s = (doc.get("suites") or {}).get(suite)
    if not s or not s.get("pairs"):
        return None
    spans = [t for t in (row_span(r) for r in s["rows"]) if t]
    head = f"noise floor ({len(s['runs'])} baseline runs): "
    if spans:
        (name, rng), *rest = spans
        text = head + f"{name} changes between baseline runs span {rng}"
        if rest:
            text += ", " + ", ".join(f"{n} {r}" for n, r in rest)
    else:
        text = head + "no metric changed between baseline runs"
    c = s["cases"]
    text += f"; {c['flipped']} of {c['compared']} cases flip"
    per_pair = [(p["flipped"], p["cases"]) for p in s.get("pair_results") or []]
    if len(per_pair) > 1:
        lo, hi = min(per_pair), max(per_pair)
        text += (f" (between two runs: {lo[0]} of {lo[1]}" +
                 (f" to {hi[0]} of {hi[1]})" if hi != lo else ")"))
    wide = [r["name"] + (f" [{r['arm']}]" if r["arm"] != "default" else "")
            for r in s["rows"] if _wider_than_allowance(r)]
    if wide:
        text += f"; wider than the allowance: {', '.join(wide)}"
    if s.get("detectable"):
        text += "; " + detectable_line(s["detectable"])
    if s.get("until_decided"):
        text += "; " + expected_line(s["until_decided"])
    alarms = [r for r in s["rows"] if r["verdicts"].get("regressed")]
    if alarms:
        named = ", ".join(f"{r['name']} {r['verdicts']['regressed']} of {s['pairs']}" for r in alarms)
        text += f"; A/A pairs called regressed: {named}"
    return text


def _wider_than_allowance(row: dict[str, Any]) -> bool:
    ch = row.get("change") or {}
    if ch.get("min") is None or not row.get("allowance"):
        return False
    return max(abs(ch["min"]), abs(ch["max"])) > row["allowance"]
