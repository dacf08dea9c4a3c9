"""The measured noise floor of a BASELINE of several runs: how far runs of unchanged code
move against each other.

Pure (no I/O). Every pair of baseline runs is compared with the one `compare_runs` (an A/A
comparison: nothing changed between them), and each suite's cases are counted directly:

- per-case flips: a (case, arm) flips between two runs when its outcome differs (its
  status when every attempt agrees, `mixed` otherwise), over the cases both runs have;
- per metric row: the spread of `change` over the pairs (min, max, mean, sd) and how many
  A/A pairs came out `regressed`, `inconclusive`, ….

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
                    "changes": [], "verdicts": {},
                })
                if m.change is not None:
                    row["changes"].append(m.change)
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
                {**{k: v for k, v in row.items() if k != "changes"}, "pairs": len(row["changes"]),
                 "change": _spread(row["changes"]), "changes": row["changes"]}
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
