"""`evalh rejudge`: judge again the outputs stored in a run, through the one runner core.

The plan is built from the stored run: its cases (input, expected and metadata as
recorded), its arms and attempts, and each arm's outputs as a `core.run.sources.StoredSource`;
the target is never called. Judge scorers (and other model-backed scorers) come from
today's `evalh.toml` — a fixed rubric or judge config is what a rejudge is for — optionally
with another judge model (`judge_model`); every other score is replayed as stored. By
default only results whose judgment is missing or failed are judged again; with
`everything`, all of them. Results of a target that failed are never rescored. The others
are the plan's `carried` results: the runner puts them in the new run as they are.

A NEW run document is written with `derived_from: {run_id, how: "rejudge"}` and the
original is never touched. Its config is the original's snapshot with each rejudged
suite's scorers replaced by what judged now, plus a `rejudge` record. The result carries
each judge's drift on the outputs it judged again, also recorded in the suite's details
under the scorer's name (`rejudge_drift`).

Budget and cache: no budget applies to a rejudge (its run has an unlimited `Budget`; the
stored outputs' costs, spent by the original run, are not charged to it); and a rejudge
asks its judges again rather than replaying cached verdicts, so the response cache is off.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalh.config import Config
from evalh.core.rejudge.drift import Drift
from evalh.core.rejudge.parts import Rejudging, StoredScorer
from evalh.core.run.entry import run_plan
from evalh.core.run.items import Observer
from evalh.core.run.plan import ArmPlan, RunPlan, SuitePlan, resolve_seed
from evalh.core.run.prepare import RunOptions, make_services
from evalh.core.run.sources import ResultKey, StoredSource, target_record
from evalh.datasets import Dataset
from evalh.errors import ConfigError, EvalhError
from evalh.models import Case, CaseMetadata, CaseResult, DerivedFrom, Run, SuiteResult
from evalh.services import Budget
from evalh.snapshot import snapshot
from evalh.store import RunStore, new_run_id


class RejudgeRefused(EvalhError):
    """The run cannot be rejudged as it stands (unfinished, nothing to judge)."""


@dataclass
class RejudgeOptions:
    run: str
    """Run id or path of the run whose outputs are judged again."""
    everything: bool = False
    judge_model: str | None = None
    """Judge with this model instead of the configured judges (one judge)."""
    label: str | None = None
    suites: list[str] | None = None
    seed: int | None = None
    concurrency: int | None = None
    allow_self_judge: bool = False


@dataclass
class SuiteRejudge:
    name: str
    judges: list[Rejudging] = field(default_factory=list)
    note: str | None = None


@dataclass
class SuiteRejudged:
    """What a rejudge did to one suite (its entry in `evalh rejudge --json`'s `suites`:
    the fields in this order)."""

    rescored: int
    """Results judged again (by at least one judge)."""
    carried_over: int
    """Results carried over as they were."""
    judge_error_before: int
    judge_error_after: int | None
    note: str | None
    """Why nothing was judged again in this suite, if so."""
    drift: dict[str, Drift | None]
    """Per judge scorer: its drift on the results it judged again (None: not measured)."""
    judge_error_now: int = 0
    """Of the results judged again, those whose judgment failed again (judge_error)."""


@dataclass
class RejudgeResult:
    run: Run
    source: Run
    path: Path
    suites: dict[str, SuiteRejudged]

    def measured_nothing(self) -> str | None:
        """Why the rejudge measured nothing — every result it judged again has no judgment
        (the judge down) — else None. `evalh rejudge` exits 1 then. (A rejudge with nothing
        to judge again, every judgment already there, changed nothing and says so.)"""
        rescored = sum(s.rescored for s in self.suites.values())
        if not rescored:
            return None
        failed = sum(s.judge_error_now for s in self.suites.values())
        if failed == rescored:
            return (f"every result judged again got no judgment: {failed} of {rescored} judge_error "
                    "(the judge failed); nothing was measured")
        return None


@dataclass(frozen=True)
class _StoredDataset(Dataset):
    """The stored run's dataset: its recorded digest, whatever the file says today."""

    recorded_sha256: str = ""

    @property
    def sha256(self) -> str:
        return self.recorded_sha256


def _case(r: CaseResult) -> Case:
    return Case(id=r.case_id, input=r.input, expected=r.expected, metadata=CaseMetadata.model_validate(r.metadata))


def _arm_targets(source: Run, name: str, stored: SuiteResult, arms: list[str]) -> dict[str, dict[str, Any]]:
    """Each arm's target as the run recorded it (what really answered)."""
    recorded = ((source.config.get("suites") or {}).get(name) or {})
    by_arm = {a.get("name"): a.get("target") for a in recorded.get("arms") or [] if isinstance(a, dict)}
    out = {}
    for arm in arms:
        snap = by_arm.get(arm) or recorded.get("target") or stored.target
        out[arm] = target_record(snap if isinstance(snap, dict) else {})
    return out


def _judge_config(cfg: Any, model: str | None) -> Any:
    """`cfg` judged by `model` instead (one judge, the first one's provider settings)."""
    judges = getattr(cfg, "judges", None)
    if model is None or not judges:
        return cfg
    return cfg.model_copy(update={"judges": [judges[0].model_copy(update={"model": model})]})


def _scorers(config: Config, name: str, stored: dict[ResultKey, CaseResult], opts: RejudgeOptions,
             recorded: list[dict[str, Any]], chosen: bool) -> tuple[list[Any], SuiteRejudge, list[dict[str, Any]]]:
    """The suite's scorers for the runner, what it rejudges, and their config snapshot
    (a suite not `chosen` by --suite keeps every score as stored)."""
    from evalh.imports import ImportFailure
    from evalh.scorers import build_scorer

    info = SuiteRejudge(name)
    stored_names = list(dict.fromkeys(s.scorer for r in stored.values() for s in r.scores))
    judge_named = {s.scorer for r in stored.values() for s in r.scores if s.judge_model}
    recorded_by_name = {(s.get("name") or s.get("type")): s for s in recorded if isinstance(s, dict)}
    judges: dict[str, Rejudging] = {}
    current = config.suites[name].scorers if name in config.suites and chosen else []
    for i, scfg in enumerate(current):
        try:
            built = build_scorer(_judge_config(scfg, opts.judge_model), config.root)
        except (ImportFailure, ValueError, OSError) as exc:
            raise ConfigError(f"{config.path}: suites.{name}.scorers[{i}]: {exc}") from None
        if built.kind == "judge":
            judges[built.config.display_name] = Rejudging(built, stored, opts.everything)
    info.judges = list(judges.values())
    # The stored order of scores, then judges the original run did not have.
    scorers: list[Any] = []
    snaps: list[dict[str, Any]] = []
    for n in [*stored_names, *(n for n in judges if n not in stored_names)]:
        if n in judges:
            scorers.append(judges[n])
            snaps.append(snapshot(judges[n].config))
        else:
            scorers.append(StoredScorer(n, stored, "judge" if n in judge_named else "deterministic"))
            snaps.append(recorded_by_name.get(n, {"name": n, "type": "stored"}))
    if not chosen:
        info.note = "not chosen with --suite: carried over as it was"
    elif name not in config.suites:
        info.note = "not in evalh.toml: carried over as it was"
    elif not info.judges:
        info.note = "no judge scorer in evalh.toml: carried over as it was"
    return scorers, info, snaps


def _suite_plan(config: Config, source: Run, name: str, opts: RejudgeOptions,
                snap: dict[str, Any], chosen: bool) -> tuple[SuitePlan, SuiteRejudge]:
    stored_suite = source.suites[name]
    stored = {(r.case_id, r.arm, r.attempt): r for r in stored_suite.cases}
    cases = list({r.case_id: _case(r) for r in stored_suite.cases}.values())
    arm_names = list(dict.fromkeys(r.arm for r in stored_suite.cases))
    if stored_suite.baseline_arm in arm_names:
        arm_names.sort(key=lambda a: a != stored_suite.baseline_arm)
    repeats = max((r.attempt for r in stored_suite.cases), default=0) + 1
    missing = len(cases) * len(arm_names) * repeats - len(stored)
    if missing:
        raise RejudgeRefused(f"run {source.run_id}: suite {name!r} lacks {missing} results: finish the "
                             f"run first (evalh run --resume {source.run_id})")
    targets = _arm_targets(source, name, stored_suite, arm_names)
    recorded = (snap.get("suites") or {}).get(name) or {}
    scorers, info, scorer_snaps = _scorers(config, name, stored, opts, recorded.get("scorers") or [], chosen)
    if name in snap.get("suites", {}):
        snap["suites"][name]["scorers"] = scorer_snaps
    current = config.suites.get(name)
    details = copy.deepcopy(stored_suite.details)
    for judge in info.judges:  # judged again: calibrated again (the stored calibration is the old judges')
        recorded = details.get(judge.config.display_name)
        if isinstance(recorded, dict):
            recorded.pop("calibration", None)
    suite_plan = SuitePlan(
        name=name, regime=stored_suite.regime, tier=current.tier if current else 0,
        dataset=_StoredDataset(Path(stored_suite.dataset.path), cases, stored_suite.dataset.sha256),
        dataset_display=stored_suite.dataset.path, cases=cases,
        arms=[ArmPlan(a, StoredSource(stored, targets[a])) for a in arm_names],
        scorers=scorers, repeats=repeats,
        timeout_s=(current.timeout_s if current else None) or config.settings.timeout_s,
        concurrency=opts.concurrency or (current.concurrency if current else None) or config.settings.concurrency,
        target_snapshot=targets[arm_names[0]],
        subject_models=[m for a in arm_names if isinstance(m := targets[a].get("model"), str)],
        details=details,
    )
    return suite_plan, info


def _carried(suite: SuiteResult, info: SuiteRejudge) -> list[CaseResult]:
    """The stored results no judge judges again, carried over as they are: those of a target
    that failed, and those whose judgments every judge keeps."""
    return [r for r in suite.cases
            if not (r.error is None and r.status != "errored" and any(j.wants(r) for j in info.judges))]


def prepare_rejudge(config: Config, store: RunStore, opts: RejudgeOptions) -> tuple[RunPlan, Run, list[SuiteRejudge]]:
    """Load the run and build the rejudge plan (bad input → EvalhError, nothing written)."""
    source = store.load(opts.run)
    if source.status != "complete":
        raise RejudgeRefused(f"run {source.run_id} is {source.status}: finish it first "
                             f"(evalh run --resume {source.run_id}), then rejudge it")
    names = opts.suites or list(source.suites)
    unknown = [n for n in names if n not in source.suites]
    if unknown:
        raise RejudgeRefused(f"run {source.run_id} has no suite {unknown[0]!r} (it has: {', '.join(source.suites)})")
    snap = copy.deepcopy(source.config)
    suites, infos, carried = [], [], {}
    # Every suite of the run is in the new document (so compare sees the same suites);
    # only the chosen ones are judged again.
    for name in source.suites:
        suite_plan, info = _suite_plan(config, source, name, opts, snap, name in names)
        suites.append(suite_plan)
        infos.append(info)
        carried[name] = _carried(source.suites[name], info)
    if not any(i.judges for i in infos):
        raise RejudgeRefused(f"run {source.run_id}: no suite has a judge scorer in {config.path.name}: nothing to judge again")
    from evalh.core.run.requirements import check_rejudge

    check_rejudge(config, suites, names, allow_self_judge=opts.allow_self_judge)  # [suites.S.require]
    snap["rejudge"] = {"from": source.run_id, "all": opts.everything, "judge_model": opts.judge_model,
                       "suites": names}
    if opts.allow_self_judge:
        snap["allow_self_judge"] = True
    services = make_services(config, RunOptions(use_cache=False, allow_self_judge=opts.allow_self_judge),
                             store.runs_dir, budget=Budget())
    plan = RunPlan(
        run_id=new_run_id(), root=config.root, suites=suites, config_snapshot=snap,
        seed=resolve_seed(opts.seed, config), services=services,
        label=opts.label or f"rejudge of {source.run_id}",
        derived_from=DerivedFrom(run_id=source.run_id, how="rejudge"),
        carried=carried, options={"rejudge": source.run_id},
    )
    return plan, source, infos


def _drift(recorded: Any) -> Drift | None:
    """A judge's drift as its finalize recorded it in the suite's details."""
    return Drift(**recorded) if isinstance(recorded, dict) else None


def rejudge(config: Config, store: RunStore, opts: RejudgeOptions, observer: Observer | None = None) -> RejudgeResult:
    """Judge again and write the new run; its suites' details hold each judge's drift."""
    plan, source, infos = prepare_rejudge(config, store, opts)
    run = run_plan(plan, store, observer)
    suites: dict[str, SuiteRejudged] = {}
    for info in infos:
        new_suite = run.suites.get(info.name)
        details = new_suite.details if new_suite else {}
        drift = {j.config.display_name: _drift((details.get(j.config.display_name) or {}).get("rejudge_drift"))
                 for j in info.judges}
        judged = set().union(*(j.judged for j in info.judges)) if info.judges else set()
        failed_now = sum(1 for r in (new_suite.cases if new_suite else [])
                         if r.status == "judge_error" and (r.case_id, r.arm, r.attempt) in judged)
        suites[info.name] = SuiteRejudged(
            rescored=len(judged),
            carried_over=(len(new_suite.cases) if new_suite else 0) - len(judged),
            judge_error_before=source.suites[info.name].aggregate.judge_error,
            judge_error_after=new_suite.aggregate.judge_error if new_suite else None,
            note=info.note, drift=drift, judge_error_now=failed_now,
        )
    return RejudgeResult(run=run, source=source, path=store.path_for(run.run_id), suites=suites)
