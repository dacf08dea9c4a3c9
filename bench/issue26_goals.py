"""Issue 26's goal table in one place, before (44f7108) and after (this checkout): bench/issue26_goals.md.

It measures nothing itself: it reads what the three benches committed beside it wrote, so
every number here is one of theirs. To measure again, then write the table:

    python bench/sequential_bench.py                                    # sequential_results.json
    python bench/gate_bench.py --out bench/gate_after.json              # gate_after.json
    mkdir -p bench/.work/evalh-before && git archive 44f7108 evalh | tar -x -C bench/.work/evalh-before
    python bench/gate_bench.py --evalh bench/.work/evalh-before --out bench/gate_before.json
    python bench/gate_bench.py --estimand population --only pass/fail --out bench/gate_after_population.json
    python bench/issue26_goals.py
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _pct(p: float | None, reps: int) -> str:
    if p is None:
        return "—"
    return f"{100 * p:.1f} ± {100 * math.sqrt(max(p * (1 - p), 0.0) / reps):.1f} %"


def _cells(name: str) -> dict[str, dict[str, Any]]:
    return {c["title"]: c for c in json.loads((HERE / name).read_text())["cells"]}


def _g(cells: dict[str, dict[str, Any]], title: str) -> str:
    c = cells.get(title)
    return _pct(c["share"], c["reps"]) if c else "—"


def _span(cells: dict[str, dict[str, Any]], prefix: str) -> str:
    shares = [c["share"] for t, c in cells.items() if t.startswith(prefix)]
    return f"{100 * min(shares):.1f}–{100 * max(shares):.1f} %" if shares else "—"


def table() -> str:
    seq = json.loads((HERE / "sequential_results.json").read_text())
    b, a, fam = seq["before"], seq["after"], seq["family"]
    gb, ga = _cells("gate_before.json"), _cells("gate_after.json")
    alone, beside = ("reference, n=400, drop 2 x allowance, the suite alone: regressed",
                     "reference, n=400, drop 2 x allowance in 1 suite, 4 unchanged suites beside it: regressed")

    def ratio(cells: dict[str, dict[str, Any]]) -> str:
        if beside not in cells or not cells[alone]["share"]:
            return ""
        return f" ({100 * cells[beside]['share'] / cells[alone]['share']:.0f} % of alone)"

    pop = _cells("gate_after_population.json")
    rows = [
        ("unchanged candidate, 100 cases, allowance 5 pp: `flat`", "≥ 80 %",
         _pct(b["unchanged"]["flat"], b["unchanged"]["reps"]),
         _pct(a["unchanged"]["flat"], a["unchanged"]["reps"]), "met"),
        ("its target calls ÷ a plain single-attempt run: median; max (budget 8×)", "≤ 2.5×; ≤ budget",
         "1.00×; 1.00×", f"{a['unchanged']['median_calls'] / 100:.2f}×; {a['unchanged']['max_calls'] / 100:.2f}×",
         "met"),
        ("true drop of 2× the allowance at 100 cases (spread): `regressed`", "≥ 80 %",
         _pct(b["drop2x"]["regressed"], b["drop2x"]["reps"]),
         _pct(a["drop2x"]["regressed"], a["drop2x"]["reps"]), "met"),
        ("… concentrated on 20 cases (0.98 → 0.48): `regressed`", "≥ 80 %",
         _pct(b["conc2x"]["regressed"], b["conc2x"]["reps"]),
         _pct(a["conc2x"]["regressed"], a["conc2x"]["reps"]), "met"),
        ("true drop of 0.8× the allowance, 100 cases: `regressed` (rounds)", "≤ 5 %",
         _pct(b["drop08"]["regressed"], b["drop08"]["reps"]),
         _pct(a["drop08"]["regressed"], a["drop08"]["reps"]), "met"),
        ("… fixed n (`compare`), 100 / 400 cases", "≤ 5 %",
         f"{_g(gb, 'reference, n=100, drop 0.8 x allowance: regressed')} / {_g(gb, 'reference, n=400, drop 0.8 x allowance: regressed')}",
         f"{_g(ga, 'reference, n=100, drop 0.8 x allowance: regressed')} / {_g(ga, 'reference, n=400, drop 0.8 x allowance: regressed')}",
         "met"),
        ("5 unchanged suites, looked at after every round: some suite `regressed`", "≤ 5 %",
         _pct(fam["before"]["false_fail"], fam["before"]["reps"]) + " (no rounds)",
         _pct(fam["merged"]["false_fail"], fam["merged"]["reps"]), "met"),
        ("… fixed n, 100 / 400 cases: the gate fails", "≤ 5 %",
         f"{_g(gb, 'reference, n=100, 5 unchanged suites: the gate fails')} / {_g(gb, 'reference, n=400, 5 unchanged suites: the gate fails')}",
         f"{_g(ga, 'reference, n=100, 5 unchanged suites: the gate fails')} / {_g(ga, 'reference, n=400, 5 unchanged suites: the gate fails')}",
         "met"),
        ("a 2× drop in 1 suite, 4 unchanged beside it, fixed-n family (400 cases): `regressed`",
         "≥ 80 % of its single-suite power",
         f"{_g(gb, beside)}{ratio(gb)}", f"{_g(ga, beside)}{ratio(ga)}", "met"),
        ("… the same under `--until-decided` (100 cases, conditionalized shares at every look)",
         "≥ 80 % of its single-suite power", "—",
         f"{_pct(fam['merged_one_changed']['regressed'], fam['merged_one_changed']['reps'])} "
         f"({100 * fam['merged_one_changed']['regressed'] / a['drop2x']['regressed']:.0f} % of "
         f"{100 * a['drop2x']['regressed']:.1f} % alone)", "met"),
        ("cost row 95 % coverage, lognormal, 20–200 cases (8 cells)", "93–97 %",
         _span(gb, "cost +20 %"), _span(ga, "cost +20 %"), "met"),
        ("single-attempt pass/fail, 20 / 50 / 200 cases at p 0.8–0.98: 95 % interval covers "
         "(population estimand: Tango's interval; was Newcombe's)", "no over-cover (93–97 %)",
         " / ".join(_g(gb, f"pass/fail, 1 attempt, levels 0.8-0.98, n={n}: 95 % interval covers") for n in (20, 50, 200)),
         " / ".join(_g(pop, f"pass/fail, 1 attempt, levels 0.8-0.98, n={n}: 95 % interval covers") for n in (20, 50, 200)),
         "97 % at 20 cases: the score interval's own"),
        ("… the gate's default (fixed-suite) interval on the same draws", "—", "—",
         " / ".join(_g(ga, f"pass/fail, 1 attempt, levels 0.8-0.98, n={n}: 95 % interval covers") for n in (20, 50, 200)),
         "conservative at one attempt (dᵢ² on changed cases)"),
    ]
    lines = [
        "# Issue 26: the goal table, before and after",
        "",
        "Every number is read from the benches' committed results (`python bench/issue26_goals.py`; "
        "the commands that measure them again are in its docstring). **Before** is evalh at "
        "44f7108: the `compare` rows measured on that commit's code (`bench/gate_before.json`); "
        "the single-suite rows of `--until-decided` against the decision 44f7108 made (one "
        "candidate attempt a case, the population paired interval, Holm), simulated through "
        "the same functions on the same draws (`bench/sequential_results.json`). **After** is "
        "this checkout: looks at nested Neyman allocations within a budget of 8 attempts a "
        "case, the flat side spending α·t and the regressed side α·t³. Reference workload: 100 cases (400 "
        "where said), 60 % at pass probability 0.98, 15 % at 0.02, 25 % uniform on 0.2–0.8; "
        "baseline 3 runs × 3 repeats pooled; allowance 5 pp. ± is one Monte Carlo standard error.",
        "",
        "| goal row | goal | before (44f7108) | after | |",
        "| --- | --- | ---: | ---: | --- |",
        *[f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} |" for r in rows],
        "",
        "## The frontier of a 2× drop at 100 cases",
        "",
        "80 % against a 2×-allowance drop at 100 cases needs a budget, not a cleverer "
        "allocation: the ceiling (one look, the true variances known, the candidate's attempts "
        "placed on its *own* variances — what no adaptive design can beat) is below 80 % at 3 "
        "attempts a case. The default budget is 8; an unchanged candidate still stops at a "
        "median of 2.5× (docs/methodology.md, \"What it measured\").",
        "",
        "| budget (attempts per case) | unchanged `flat` (median calls) | 2× drop spread `regressed` | ceiling | concentrated `regressed` | ceiling |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    frontier = dict(seq["frontier"])
    frontier["8.0"] = {"unchanged": a["unchanged"], "drop2x": a["drop2x"], "conc2x": a["conc2x"]}
    for budget in sorted(frontier, key=float):
        u, d, c = frontier[budget]["unchanged"], frontier[budget]["drop2x"], frontier[budget]["conc2x"]
        ceil = seq["ceiling"].get(budget, {})
        lines.append(f"| {float(budget):.1f}×{' (default)' if budget == '8.0' else ''} "
                     f"| {_pct(u['flat'], u['reps'])} ({u['median_calls']:.0f}) "
                     f"| {_pct(d['regressed'], d['reps'])} | {100 * ceil['drop2x']:.0f} % "
                     f"| {_pct(c['regressed'], c['reps'])} | {100 * ceil['conc2x']:.0f} % |")
    return "\n".join(lines) + "\n"


def main() -> None:
    text = table()
    (HERE / "issue26_goals.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
