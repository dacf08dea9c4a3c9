"""`evalh run --compare-baseline --until-decided`: the candidate run in rounds until its
gating rows are decided.

Before anything runs, each stochastic suite the baseline has gets its looks, from the
baseline's per-case attempts only (`stats.sequential.plan_looks`): at 1, 1.5, 2, 2.5, 3,
4, 5, 6 and 8 attempts a case on average (`LOOKS`, cut at the budget: `--max-attempts`, the
suite's `max_attempts`, else `DEFAULT_BUDGET` × its cases), each look Neyman's allocation
for what it has spent — one attempt for every case, more for the cases whose baseline
outcomes vary. Round k runs the attempts that bring every case to its count at look k —
with the one runner, as more attempts of the same run (`SuitePlan.attempts`) — and then the
one `compare_runs` looks, deciding the
suite's fixed-suite gating rows with the round's confidence sequence
(`ComparePolicy.rounds`, `compare.family.apply_rounds`). A suite whose gating rows are all
decided (`flat`, `improved`, `regressed`) gets no more attempts; the run stops when every
suite is decided or its allocation is spent (its rows then `inconclusive`, as today), or
when `--max-cost` stops it.

Each round is recorded in the run document (`Run.rounds`): its calls, the calls so far,
those a fixed design would have spent (the whole allocation) and a plain run (one attempt a
case), and each suite's verdicts after it. The looks and the information fractions
are a function of the baseline alone, so `evalh run --resume` of an interrupted run
rebuilds the same schedule, finishes the round it was in (its finished attempts kept) and
looks at the same rounds: the error guarantee is the uninterrupted run's. A round that
`--max-cost` stopped part-way is recorded with `partial` (its look saw part of its
attempts); the resume finishes it and looks at it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalh.core.stats.sequential import MOST_PER_CASE, RHO_FLAT, RHO_REGRESSED, plan_suite

if TYPE_CHECKING:
    from evalh.core.compare.models import ComparePolicy, Comparison
    from evalh.core.compare.notes import CompareNotes
    from evalh.core.run.items import Observer
    from evalh.core.run.plan import RunPlan
    from evalh.models import Run
    from evalh.run_lock import RunLock
    from evalh.store import RunStore

DECIDED = ("flat", "improved", "regressed")


@dataclass
class SuiteSchedule:
    """One suite's rounds: attempts per case (plan order) at each look and, per arm, the
    information fraction of each look."""

    name: str
    looks: list[list[int]]
    fractions: dict[str, list[float]]
    decided_at: int | None = None

    @property
    def rounds(self) -> int:
        return len(self.looks)

    @property
    def budget(self) -> int:
        """Attempts of the last look: what a fixed design would spend."""
        return sum(self.looks[-1]) if self.looks else 0

    def look(self, k: int) -> int:
        """The look round k is at: the round that decided the suite, else k (at most the last)."""
        return min(self.decided_at or k, self.rounds)


@dataclass
class Rounds:
    schedules: dict[str, SuiteSchedule] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return max((s.rounds for s in self.schedules.values()), default=0)


def _base_counts(base: Run, suite: str) -> dict[tuple[str, str], tuple[int, int]]:
    """(case, arm) → (passed, passed + failed) over the baseline's attempts."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    sr = base.suites.get(suite)
    for r in sr.cases if sr is not None else []:
        if r.status in ("passed", "failed"):
            p, k = out.get((r.case_id, r.arm), (0, 0))
            out[(r.case_id, r.arm)] = (p + (r.status == "passed"), k + 1)
    return out


def schedule(plan: RunPlan, base: Run, *, max_attempts: int | None, every: bool) -> Rounds:
    """The rounds of every stochastic suite of `plan` the baseline has (with `every`; else
    only those whose config sets `until_decided`)."""
    from evalh.datasets import case_ids

    out = Rounds()
    for suite in plan.suites:
        cfg = suite.config
        if suite.regime != "stochastic" or suite.name not in base.suites:
            continue
        if not every and not (cfg is not None and cfg.until_decided):
            continue
        ids = case_ids(suite.cases)
        budget = max_attempts or (cfg.max_attempts if cfg is not None else None)
        looks, fractions, _ = plan_suite(ids, [a.name for a in suite.arms],
                                         _base_counts(base, suite.name), budget)
        out.schedules[suite.name] = SuiteSchedule(suite.name, looks, fractions)
    return out


def settings(plan: RunPlan, max_attempts: int | None, every: bool) -> tuple[int | None, bool]:
    """(max_attempts, every) of the rounds: a resumed run's own, recorded when it started
    (`run_until_decided` keeps them in `plan.options`), else the given `--max-attempts` and
    `--until-decided`."""
    recorded = plan.options.get("until_decided")
    if isinstance(recorded, dict):
        return recorded.get("max_attempts"), bool(recorded.get("every"))
    return max_attempts, every


def set_to_budget(plan: RunPlan, rounds: Rounds) -> None:
    """Give every suite in rounds the attempts of its last look: the most the run can spend
    (`run --dry-run` estimates the requests, tokens and cost of those, an upper bound)."""
    for suite in plan.suites:
        s = rounds.schedules.get(suite.name)
        if s is not None and s.looks:
            suite.repeats = max(suite.repeats, max(s.looks[-1]))
            suite.attempts = list(s.looks[-1])


def _policy(rounds: Rounds, k: int, policy: ComparePolicy | None) -> ComparePolicy:
    """`policy` (the run's --min-coverage, --allow-removed-suite) with round k's looks."""
    from evalh.core.compare.models import ComparePolicy, RoundLook

    looks = {name: RoundLook(round=s.look(k), fractions=s.fractions,
                             rho=RHO_REGRESSED, rho_flat=RHO_FLAT)
             for name, s in rounds.schedules.items()}
    return (policy or ComparePolicy()).model_copy(update={"rounds": looks})


def _calls(run: Run) -> int:
    """Target calls the run holds (results that were not skipped)."""
    return sum(1 for s in run.suites.values() for r in s.cases if r.status != "skipped")


def _record(k: int, calls: int, before: int, fixed: int, plain: int, rounds: Rounds,
            cmp: Comparison) -> dict[str, Any]:
    suites: dict[str, Any] = {}
    for name, s in rounds.schedules.items():
        sc = cmp.suites.get(name)
        rows = {}
        for m in sc.metrics if sc is not None else []:
            if m.gating:
                label = (m.scorer or m.name) + (f" [{m.arm}]" if m.arm != "default" else "")
                rows[label] = m.verdict
        suites[name] = {"verdict": sc.verdict if sc is not None else None, "rows": rows,
                        "decided_at": s.decided_at, "planned_attempts": s.budget,
                        "look": s.look(k), "fractions": s.fractions,
                        "rho": RHO_REGRESSED, "rho_flat": RHO_FLAT}
    return {"round": k, "calls": calls - before, "calls_so_far": calls,
            "fixed_design_calls": fixed, "plain_run_calls": plain,
            "verdict": cmp.verdict, "suites": suites}


def run_until_decided(
    plan: RunPlan, store: RunStore, observer: Observer | None, reference: Any, *,
    lock: RunLock | None, until_decided: bool, max_attempts: int | None, resumed: bool,
    policy: ComparePolicy | None = None,
) -> tuple[Run, Comparison, CompareNotes | None]:
    """Run `plan` in rounds against `reference` (a `LoadedBaseline` with its results) and
    return the run with the last round's comparison and its notes. `until_decided`
    (`--until-decided`): every stochastic suite goes in rounds, else only those whose config
    sets it; `resumed`: the plan finishes an interrupted run (its rounds are read back);
    `policy`: the comparison's settings besides the rounds (every round looks with them)."""
    from evalh.core.run.entry import run_plan

    recorded = plan.options.get("until_decided")  # a resumed run keeps its own schedule
    if isinstance(recorded, dict) and recorded.get("baseline") not in (None, list(reference.ids)):
        from evalh.errors import EvalhError

        raise EvalhError(
            f"run {plan.run_id} went in rounds against the baseline "
            f"{', '.join(recorded['baseline'])}; BASELINE now names {', '.join(reference.ids)}: "
            "its schedule would not be the same (set the baseline back to resume it)")
    max_attempts, every = settings(plan, max_attempts, until_decided)
    rounds = schedule(plan, reference.run, max_attempts=max_attempts, every=every)
    plan.options["until_decided"] = {"max_attempts": max_attempts, "every": every,
                                     "most": MOST_PER_CASE, "baseline": list(reference.ids)}
    fixed = plain = 0
    for suite in plan.suites:
        s = rounds.schedules.get(suite.name)
        plain += len(suite.cases) * len(suite.arms)
        fixed += len(suite.arms) * s.budget if s is not None else suite.total
    set_to_budget(plan, rounds)  # the runner's repeats; each round sets its own attempts
    records: list[dict[str, Any]] = list(plan.rounds)
    if resumed and store.path_for(plan.run_id).is_file():
        # a round a budget stopped part-way was looked at on part of its attempts: it is
        # finished and looked at again, as the uninterrupted run would have
        records = [rec for rec in store.load_header(plan.run_id).rounds if not rec.get("partial")]
        for rec in records:  # suites decided before the interruption stay where they were
            for name, doc in (rec.get("suites") or {}).items():
                if name in rounds.schedules and doc.get("decided_at"):
                    rounds.schedules[name].decided_at = doc["decided_at"]
    run: Run | None = None
    cmp: Comparison | None = None
    notes: CompareNotes | None = None
    before = records[-1]["calls_so_far"] if records else 0
    start = len(records) + 1
    for k in range(start, max(rounds.total, 1) + 1):
        for suite in plan.suites:
            s = rounds.schedules.get(suite.name)
            if s is not None:
                suite.attempts = list(s.looks[s.look(k) - 1])
        plan.rounds = records
        run = run_plan(plan, store, observer, lock=lock, results=True)
        lock = None  # run_plan let go of it; the next round takes it anew
        plan.started_at = run.started_at
        cmp, notes = reference.compare(store.load_facts(run.run_id), _policy(rounds, k, policy))
        for name, s in rounds.schedules.items():
            sc = cmp.suites.get(name)
            gating = [m for m in (sc.metrics if sc is not None else []) if m.gating]
            if s.decided_at is None and gating and all(m.verdict in DECIDED for m in gating):
                s.decided_at = k
        calls = _calls(run)
        records.append(_record(k, calls, before, fixed, plain, rounds, cmp))
        if run.status != "complete":
            records[-1]["partial"] = True  # `--resume` finishes this round and looks again
        before = calls
        run.rounds = list(records)
        store.write(run)
        plan.rounds = records
        if run.status != "complete" or all(s.decided_at for s in rounds.schedules.values()):
            break
        plan.carried = {name: list(sr.cases) for name, sr in run.suites.items()}
    assert run is not None and cmp is not None
    return run, cmp, notes
