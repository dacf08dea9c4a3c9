"""`evalh merge RUN…`: the shards of one sharded run (`evalh run --shard K/N`) put back
together as the run document one unsharded `evalh run` would have written.

The shards must belong together, or nothing is written (exit 2, one line naming why):
every run is a shard of the same N, each shard 1 … N is there exactly once, they share
one config snapshot (the shard itself and the budgets `--max-cost` / `--max-tokens`
aside: each shard may have its own, and the merged run keeps one only when all agree), seed, suites, dataset digests and git
commit, no case is in two shards, every case is on the shard its id hashes to, and a
complete shard holds every case of its share of the dataset. The datasets are read from
the project (as `--resume` reads them): their digests must be the ones the shards ran on,
and they give the order the document lists results in (dataset order, then arm, then
attempt, as the runner writes them).

What the merged run holds: every shard's results, unchanged; the aggregates recomputed
by `evalh.core.results.aggregate` over all of them (suite, arms, summary); the suite figures the
scorers compute after a suite (`finalize`: judge counts, pairwise consistency,
classification confusion) and the suite's metrics and contrasts recomputed over all the
results, with no model called; what
the scorers set up before a suite (a judge's calibration) kept as the shards recorded
it — the same on every shard, or each shard's under `by_shard` when they differ.
`merged_from` lists the shard run ids. A shard that is `partial` (or `failed`) makes the
merged run `partial` (`failed`), and its reason says which shard: resume that shard
(`evalh run --resume ID`) and merge again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalh.core.analysis.contrasts import suite_claims
from evalh.core.analysis.sweep import suite_sweep
from evalh.core.results.aggregate import aggregate
from evalh.core.results.outcome import summarize
from evalh.core.run.shard import Shard, parse_shard, shard_of
from evalh.errors import EvalhError
from evalh.models import CaseResult, DatasetInfo, Run, SuiteResult, canonical_json, first_difference

if TYPE_CHECKING:
    from evalh.config import Config
    from evalh.core.run.plan import SuitePlan


class MergeRefused(EvalhError):
    """The runs given are not the complete, disjoint shards of one run (exit 2)."""


@dataclass(frozen=True)
class ShardRun:
    run: Run
    shard: Shard

    @property
    def name(self) -> str:
        return f"shard {self.shard} (run {self.run.run_id})"


BUDGETS = ("max_cost_usd", "max_tokens")
"""Run options each shard may have of its own (a shard resumed with a larger budget): they
bound how much of a shard runs, not what a case yields."""


def unsharded_config(run: Run, *, budgets: bool = True) -> dict[str, Any]:
    """A shard's config snapshot without its shard (and without its budgets, unless
    `budgets`): what every shard of one run shares."""
    config = {k: v for k, v in run.config.items() if k != "shard"}
    if not budgets and isinstance(config.get("run_options"), dict):
        options = {k: v for k, v in config["run_options"].items() if k not in BUDGETS}
        config["run_options"] = options
        if not options:
            del config["run_options"]
    return config


def merged_config(runs: Sequence[Run]) -> dict[str, Any]:
    """The merged run's config: the shards' shared snapshot; a budget is kept only when
    every shard had the same one."""
    configs = [unsharded_config(r) for r in runs]
    config = configs[0]
    options = dict(config.get("run_options") or {})
    for key in BUDGETS:
        if len({canonical_json((c.get("run_options") or {}).get(key)) for c in configs}) > 1:
            options.pop(key, None)
    if options:
        config["run_options"] = options
    else:
        config.pop("run_options", None)
    return config


def check_shards(runs: Sequence[Run]) -> list[ShardRun]:
    """The runs as shards 1 … N in order, or `MergeRefused` naming the first reason they do
    not belong together (different config, a missing or duplicated shard, …)."""
    if not runs:
        raise MergeRefused("evalh merge: give the shard runs to merge (evalh merge RUN RUN…)")
    shards: list[ShardRun] = []
    for run in runs:
        if run.shard is None:
            raise MergeRefused(f"run {run.run_id} is not a shard (it was not run with --shard K/N): nothing to merge")
        shards.append(ShardRun(run, parse_shard(run.shard, where=f"run {run.run_id}: shard")))
    first = shards[0]
    counts = sorted({s.shard.count for s in shards})
    if len(counts) > 1:
        other = next(s for s in shards if s.shard.count != first.shard.count)
        raise MergeRefused(f"different shard counts: {first.name} and {other.name} are not shards of one run")
    by_index: dict[int, ShardRun] = {}
    for s in shards:
        if s.shard.index in by_index:
            raise MergeRefused(f"duplicated shard {s.shard}: runs {by_index[s.shard.index].run.run_id} and "
                               f"{s.run.run_id} are both shard {s.shard}")
        by_index[s.shard.index] = s
    for s in shards[1:]:
        if s.run.seed != first.run.seed:
            raise MergeRefused(f"different seeds: {first.name} has seed {first.run.seed}, {s.name} has "
                               f"{s.run.seed}; run every shard with the same --seed")
        where = first_difference(unsharded_config(first.run, budgets=False), unsharded_config(s.run, budgets=False))
        if where is not None:
            raise MergeRefused(f"different config: {first.name} and {s.name} differ at config.{where}; "
                               "the shards of one run share one config")
        if list(s.run.suites) != list(first.run.suites):
            raise MergeRefused(f"different suites: {first.name} ran {', '.join(first.run.suites) or 'none'}, "
                               f"{s.name} ran {', '.join(s.run.suites) or 'none'}")
        for name, suite in s.run.suites.items():
            if suite.dataset.sha256 != first.run.suites[name].dataset.sha256:
                raise MergeRefused(f"different datasets: {first.name} and {s.name} ran suite {name!r} on "
                                   f"different contents of {suite.dataset.path}")
        if s.run.git.sha != first.run.git.sha:
            raise MergeRefused(f"different commits: {first.name} ran at {first.run.git.sha or 'no commit'}, "
                               f"{s.name} at {s.run.git.sha or 'no commit'}")
    missing = [i for i in range(1, first.shard.count + 1) if i not in by_index]
    if missing:
        have = ", ".join(str(by_index[i].shard) for i in sorted(by_index))
        raise MergeRefused(f"missing shard {missing[0]}/{first.shard.count}"
                           + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                           + f": got {have}; a merge needs every shard")
    ordered = [by_index[i] for i in range(1, first.shard.count + 1)]
    _check_cases(ordered)
    return ordered


def _check_cases(shards: list[ShardRun]) -> None:
    """No case in two shards; every case on the shard its id hashes to."""
    seen: dict[tuple[str, str], ShardRun] = {}
    for s in shards:
        for suite_name, suite in s.run.suites.items():
            ids = {r.case_id for r in suite.cases}
            for case_id in sorted(ids):
                key = (suite_name, case_id)
                if key in seen:
                    raise MergeRefused(f"overlapping cases: case {case_id!r} of suite {suite_name!r} is in "
                                       f"{seen[key].name} and {s.name}")
                seen[key] = s
            for case_id in sorted(ids):
                if shard_of(suite_name, case_id, s.shard.count) != s.shard.index:
                    raise MergeRefused(f"case {case_id!r} of suite {suite_name!r} is in {s.name}, but its id "
                                       f"hashes to shard {shard_of(suite_name, case_id, s.shard.count)}"
                                       f"/{s.shard.count}")


def _plans(config: Config, shards: list[ShardRun]) -> dict[str, SuitePlan]:
    """Each suite planned from the project (dataset and scorers; no target is built), its
    dataset checked against the digest the shards ran on, its config against theirs."""
    from evalh.core.run.plan import build_suite_plan, config_snapshot

    run = shards[0].run
    plans: dict[str, SuitePlan] = {}
    for name, suite in run.suites.items():
        if name not in config.suites:
            raise MergeRefused(f"suite {name!r} of the shards is not in {config.path}: merge in the "
                               "project the shards ran in")
        plan = build_suite_plan(config, config.suite(name), with_targets=False)
        if plan.dataset.sha256 != suite.dataset.sha256:
            raise MergeRefused(f"dataset {suite.dataset.path} of suite {name!r} changed since the shards ran: "
                               "merge in the checkout they ran in")
        plans[name] = plan
    now = config_snapshot(config, run.seed or 0)
    for name in run.suites:
        where = first_difference((run.config.get("suites") or {}).get(name), (now.get("suites") or {}).get(name))
        if where is not None:
            raise MergeRefused(f"{config.path} changed since the shards ran (at suites.{name}.{where}): "
                               "merge in the checkout they ran in")
    return plans


def _check_cover(shards: list[ShardRun], plans: dict[str, SuitePlan]) -> None:
    """A complete shard has every (case, arm, attempt) of its share of every suite."""
    for s in shards:
        if s.run.status != "complete":
            continue
        for name, plan in plans.items():
            got = {(r.case_id, r.arm, r.attempt) for r in s.run.suites[name].cases}
            arms = list(s.run.suites[name].arms) or ["default"]
            repeats = (s.run.config.get("run_options") or {}).get("repeats") or plan.repeats
            for case in plan.cases:
                if not s.shard.holds(name, case.id):
                    continue
                for arm in arms:
                    for attempt in range(repeats):
                        if (case.id, arm, attempt) not in got:
                            raise MergeRefused(f"{s.name} is complete but has no result for case {case.id!r} "
                                               f"(arm {arm}, attempt {attempt}) of suite {name!r}: not a "
                                               "complete cover of the dataset")


def _services(config: Config) -> Any:
    """Services under a zero budget: a scorer's `finalize` may count, never call a model."""
    from evalh.services import Budget, RunServices

    return RunServices(root=config.root, budget=Budget(max_cost_usd=0.0, max_tokens=0))


def _finalized(plan: SuitePlan, results: list[CaseResult], services: Any) -> dict[str, dict[str, Any]]:
    """What each scorer's `finalize` says over all the results (as the runner asks it once
    a suite is done)."""
    out: dict[str, dict[str, Any]] = {}

    async def each() -> None:
        for scorer in plan.scorers:
            finalize = getattr(scorer, "finalize", None)
            if finalize is None:
                continue
            info = await finalize(plan, results, services)
            if info:
                out[scorer.config.display_name] = dict(info)

    asyncio.run(each())
    return out


def _details(shards: list[ShardRun], suite: str, finalized: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The suite's details: what scorers set up before the suite as the shards recorded it
    (per shard under `by_shard` where they differ), then the recomputed figures."""
    keys: list[str] = []
    for s in shards:
        keys += [k for k in s.run.suites[suite].details if k not in keys]
    keys += [k for k in finalized if k not in keys]
    details: dict[str, Any] = {}
    for key in keys:
        fresh = finalized.get(key, {})
        parts: list[tuple[ShardRun, Any]] = []
        for s in shards:
            value = s.run.suites[suite].details.get(key)
            if isinstance(value, dict):
                value = {k: v for k, v in value.items() if k not in fresh}
            parts.append((s, value))
        values = [v for _, v in parts]
        same = all(canonical_json(v) == canonical_json(values[0]) for v in values)
        if same:
            merged = values[0]
        else:
            base = next((v for v in values if v is not None), None)
            merged = dict(base) if isinstance(base, dict) else {"value": base}
            merged["by_shard"] = {str(s.shard): v for s, v in parts}
        if fresh:
            merged = {**(merged if isinstance(merged, dict) else {}), **fresh}
        if merged is not None:
            details[key] = merged
    return details


def _status(shards: list[ShardRun]) -> tuple[str, str | None]:
    failed = [s for s in shards if s.run.status == "failed"]
    unfinished = [s for s in shards if s.run.status not in ("complete", "failed")]
    if not failed and not unfinished:
        return "complete", None
    reasons = [f"{s.name} is {s.run.status}: {s.run.status_reason or 'no reason recorded'}"
               for s in failed + unfinished]
    hint = "; resume it with evalh run --resume RUN_ID and merge again" if len(reasons) == 1 else \
        "; resume them with evalh run --resume RUN_ID and merge again"
    return ("failed" if failed else "partial"), "; ".join(reasons) + hint


def merge_runs(runs: Sequence[Run], config: Config, *, label: str | None = None) -> Run:
    """One run document from the shards of one run (checked by `check_shards`), as an
    unsharded run would have written it. Nothing is written here: `RunStore.write` it."""
    from evalh.store import new_run_id, now_iso

    shards = check_shards(runs)
    plans = _plans(config, shards)
    _check_cover(shards, plans)
    first = shards[0].run
    labels = {s.run.label for s in shards}
    if label is None:
        if len(labels) > 1:
            shown = ", ".join(sorted(repr(x) for x in labels))
            raise MergeRefused(f"the shards have different labels ({shown}): give the merged run one with --label")
        label = first.label
    services = _services(config)
    suites: dict[str, SuiteResult] = {}
    for name, plan in plans.items():
        parts = [s.run.suites[name] for s in shards]
        order = {c.id: i for i, c in enumerate(plan.cases)}
        results = sorted((r for p in parts for r in p.cases),
                         key=lambda r: (order.get(r.case_id, len(order)), r.arm, r.attempt))
        arm_names = list(parts[0].arms)
        finalized = _finalized(plan, results, services)
        metrics, contrasts = suite_claims(config.suite(name), results, config.root)
        suites[name] = SuiteResult(
            regime=parts[0].regime, target=parts[0].target,
            dataset=DatasetInfo(path=parts[0].dataset.path, sha256=parts[0].dataset.sha256,
                                cases=sum(p.dataset.cases for p in parts)),
            aggregate=aggregate(results),
            arms={a: aggregate(r for r in results if r.arm == a) for a in arm_names},
            baseline_arm=parts[0].baseline_arm,
            details=_details(shards, name, finalized),
            metrics=metrics,
            contrasts=contrasts,
            sweep=suite_sweep(name, config.suite(name), results, parts[0].baseline_arm),
            cases=results,
        )
    status, reason = _status(shards)
    finished = [t for s in shards if (t := s.run.finished_at or s.run.stopped_at)]
    stamp = max(finished) if finished else now_iso()
    run = Run(
        run_id=new_run_id(), label=label, status=status,  # type: ignore[arg-type]
        status_reason=reason, started_at=min(s.run.started_at for s in shards),
        finished_at=stamp if status == "complete" else None, stopped_at=None if status == "complete" else stamp,
        git=first.git,
        environment=first.environment, config=merged_config([s.run for s in shards]), seed=first.seed,
        merged_from=[s.run.run_id for s in shards], limits=first.limits, suites=suites,
    )
    run.summary = summarize(run)
    return run
