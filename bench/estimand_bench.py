"""The fixed-suite estimand against the population one, through `compare_runs`: bench/estimand_results.md.

At a true drop equal to the allowance (every case's pass probability 5 points lower:
`evalh/testing/simulate.py`, where the fixed-suite and the population change are the same
number), a calibrated interval calls the row `regressed` and `flat` each about 2.5 % of the
time. Both estimands are measured on the same seeded draws.

    python bench/estimand_bench.py            # about 10 min on one core
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalh.core.compare.decide import compare_runs  # noqa: E402
from evalh.core.compare.models import ComparePolicy  # noqa: E402
from evalh.testing.simulate import Scenario, run_pair  # noqa: E402

HERE = Path(__file__).resolve().parent
CELLS = [(30, 1), (100, 1), (100, 3), (400, 1)]
REPS = 1500


def main() -> None:
    t0 = time.time()
    rows = []
    for n, repeats in CELLS:
        for estimand in ("fixed-suite", "population"):
            policy = ComparePolicy(estimand=estimand)
            reg = flat = 0
            method = ""
            for s in range(REPS):
                base, cand = run_pair({"s": Scenario(n=n, delta=-0.05, repeats=repeats)}, 1000 + s)
                row = next(m for m in compare_runs(base, cand, policy).suites["s"].metrics
                           if m.name == "pass_rate")
                reg += row.verdict == "regressed"
                flat += row.verdict == "flat"
                method = row.method
            rows.append((n, repeats, estimand, reg / REPS, flat / REPS, method))
            print(rows[-1], file=sys.stderr)

    def pct(p: float) -> str:
        return f"{100 * p:.1f} % ± {100 * math.sqrt(p * (1 - p) / REPS):.1f}"

    lines = [
        "# Fixed-suite against population intervals at the allowance",
        "",
        f"Reproduce: `python bench/estimand_bench.py` ({round(time.time() - t0)} s on one core). "
        "Scenario (`evalh/testing/simulate.py`): per-case pass probabilities uniform on "
        "0.35–0.85, the candidate's 5 points lower on every case (a drop equal to the default "
        f"allowance); {REPS} seeded replications a cell, the same draws for both estimands. "
        "Calibrated: `regressed` and `flat` each about 2.5 %. ± one Monte Carlo standard error.",
        "",
        "| cases | repeats a side | estimand | `regressed` | `flat` | interval |",
        "| ---: | ---: | --- | ---: | ---: | --- |",
    ]
    for n, repeats, estimand, reg, flat, method in rows:
        lines.append(f"| {n} | {repeats} | {estimand} | {pct(reg)} | {pct(flat)} | {method} |")
    (HERE / "estimand_results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
