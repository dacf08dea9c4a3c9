"""Coverage: did the candidate measure what the base measured?

Pure (no I/O), called by `compare_runs` for every suite. Two questions, one answer each:

- a suite both runs have: the share of the base's (case, arm, attempt) results with a
  trustworthy result (passed or failed) that the candidate measured too, on the same case
  content (`suite_coverage`). Below the suite's minimum (`min_coverage`, else
  `DEFAULT_MIN_COVERAGE`; `--min-coverage` overrides) the suite cannot pass.
- a suite only the base has: why the candidate did not run it (`why_not_run`), and whether
  that was on purpose (its config no longer has it, or the run did not select it) — only
  then may `--allow-removed-suite` let it through. A suite skipped for a missing key or not
  reached by an unfinished run never passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import add
from typing import Any

from evalh.core.compare.facts import SuiteFacts
from evalh.core.compare.metrics import Pairs
from evalh.core.compare.models import CaseRef, ComparePolicy, Coverage
from evalh.core.results.skipped import NOT_RUN_KEY
from evalh.models import Run


def min_coverage_for(name: str, base: Run, cand: Run, policy: ComparePolicy) -> float:
    """The flag's value, else the stricter (larger) of the base's minimum — its snapshot's
    `min_coverage`, else the default — and the candidate's `min_coverage` where it sets one:
    a change cannot loosen its own gate, not even below a default the base left unset."""
    if policy.min_coverage is not None:
        return policy.min_coverage
    from evalh.config import DEFAULT_MIN_COVERAGE

    def snapshot_value(run: Run) -> float | None:
        snap = ((run.config.get("suites") or {}).get(name) or {})
        value = snap.get("min_coverage") if isinstance(snap, dict) else None
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
            return float(value)
        return None

    base_value = snapshot_value(base)
    cand_value = snapshot_value(cand)
    floor = DEFAULT_MIN_COVERAGE if base_value is None else base_value
    return floor if cand_value is None else max(floor, cand_value)


def _trusted(facts: SuiteFacts, pool: int) -> list[int]:
    """Per row: attempts that passed or failed (per pooled run, rounded up)."""
    n = len(facts)
    counts = list(map(add, facts.counts[0][:n], facts.counts[1][:n]))  # passed + failed
    if pool > 1:
        counts = [-(-c // pool) for c in counts]
    return counts


def suite_coverage(
    fb: SuiteFacts, fc: SuiteFacts, pairs: Iterable[Pairs], *, changed: list[CaseRef],
    absent: list[CaseRef], pool: int, minimum: float, per_case: bool = False,
) -> Coverage:
    """Coverage of one suite: `pairs` the compared (case, arm) rows, `changed` and `absent`
    the base's rows that were not compared for those reasons. `per_case`: the candidate
    chose how many attempts each case gets (`--until-decided` gives stable cases one), so a
    (case, arm) counts as measured with one trustworthy attempt, whatever the base had."""
    slots = _trusted(fb, pool)
    trusted_c = _trusted(fc, 1)
    if per_case:
        slots, trusted_c = [min(c, 1) for c in slots], [min(c, 1) for c in trusted_c]
    of = sum(slots)
    measured = 0
    for p in pairs:
        b_rows, c_rows = p.b_rows, p.c_rows
        if isinstance(b_rows, range) and b_rows == c_rows == range(len(slots)) == range(len(trusted_c)):
            measured += sum(map(min, slots, trusted_c))  # row for row (the usual case)
        else:
            measured += sum(map(min, map(slots.__getitem__, b_rows), map(trusted_c.__getitem__, c_rows)))

    def slots_of(refs: list[CaseRef]) -> int:
        rows = fb.rows
        total = 0
        for ref in refs:
            row = (rows.get(ref.arm) or {}).get(ref.case_id)
            if row is not None and ref.base is not None:
                total += slots[row]
        return total

    n_changed, n_absent = slots_of(changed), slots_of(absent)
    share = measured / of if of else None
    return Coverage(
        measured=measured, of=of, share=share, minimum=minimum, absent=n_absent,
        changed=n_changed, untrusted=max(of - measured - n_changed - n_absent, 0),
        below=share is not None and share < minimum,
    )


def absent_why(name: str, base: Run, cand: Run) -> str | None:
    """Why cases of the base may be missing from the candidate, from what the runs record:
    another split filter, another dataset, a shard, an unfinished run."""
    def snap(run: Run) -> dict[str, Any]:
        s = (run.config.get("suites") or {}).get(name)
        return s if isinstance(s, dict) else {}

    sb, sc = snap(base), snap(cand)
    why = []
    if sb.get("splits") != sc.get("splits"):
        def splits(v: Any) -> str:
            return "all" if v is None else repr(v)
        why.append(f"the candidate's splits are {splits(sc.get('splits'))}, the base's "
                   f"{splits(sb.get('splits'))}")
    if sb.get("dataset") != sc.get("dataset"):
        why.append(f"the candidate's dataset is {sc.get('dataset')!r}, the base's {sb.get('dataset')!r}")
    if cand.shard and cand.shard != base.shard:
        why.append(f"the candidate is shard {cand.shard}")
    if cand.status != "complete":
        why.append(f"the candidate run is {cand.status}")
    return "; ".join(why) or None


def why_not_run(name: str, cand: Run) -> tuple[str, bool]:
    """Why the candidate has no result for a suite the base ran, and whether it was left
    out on purpose (only then may `--allow-removed-suite` let it through)."""
    if cand.status != "complete":
        return f"the candidate run is {cand.status}: it did not reach the suite", False
    record = (cand.config.get(NOT_RUN_KEY) or {}).get(name)
    if isinstance(record, dict) and isinstance(record.get("text"), str):
        return str(record["text"]), record.get("cause") == "not_selected"
    suites = cand.config.get("suites")
    if isinstance(suites, dict) and name in suites:
        return "in the candidate's config but not run (the run does not record why)", True
    if isinstance(suites, dict):
        return "removed from the candidate's config", True
    return "not in the candidate", True
