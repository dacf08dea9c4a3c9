"""`evalh run --resume RUN_ID`: finish a run that was interrupted, killed or stopped by its
budget, running only the (case, arm, attempt) triples it has no trustworthy result for: none
at all, or one errored because evalh's own worker process died while running it
(`WorkerDied`, `--procs N`).

What the run already finished is read from its journal (`<run_id>.journal.jsonl`, one line
per result, appended as each finished) and from its partial document, whichever exist; the
two are merged. The plan is rebuilt from what the run recorded — its suites, seed, label,
repeats and timeout — with the same run id, and the finished results are the plan's `carried` results (put in the
run as they are; what they cost counts against the resumed run's budget).
The resumed run writes the same document an uninterrupted run would have written (results
equal up to timings), under the same run id; `derived_from` stays null, because it is the
same run, not a new one derived from it.

Resuming is refused (exit 2, nothing written) when the config the run recorded differs from
the current one for the run's suites, settings or prices, or when a dataset's digest
changed: the finished results would not belong to the same experiment. Both sides of that
comparison are the resolved config snapshot (the one a run records, with what building the
scorers fills in, such as a judge's `rubric_sha256`), so a judged suite compares like with
like.

The resume holds the run's lock (`RunStore.lock`) from before it reads the record until the
run is written, so a second resume of the same run is refused (exit 2, naming the holder's
pid) instead of doing the same remaining work again.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalh.config import Config
from evalh.core.run.finish import complete_pending
from evalh.core.run.plan import SuitePlan
from evalh.core.run.prepare import Prepared, RunOptions, prepare_run
from evalh.errors import EvalhError, RunDocumentError, RunNotFound, first_validation_error
from evalh.journal import Journal
from evalh.models import CaseResult, first_difference
from evalh.store import RunStore


class ResumeRefused(EvalhError):
    """The run cannot be resumed as it stands (changed config or data, already complete)."""


class RecordedOptions(BaseModel):
    """The options a run recorded (journal header `options`, document `config.run_options`),
    checked before a plan is built from them: a hand-edited `"repeats": "x"` is one line."""

    model_config = ConfigDict(extra="allow", strict=True)

    suites: list[str] | None = None
    label: str | None = None
    seed: int | None = None
    repeats: int | None = Field(None, ge=1)
    timeout_s: float | None = Field(None, gt=0)
    concurrency: int | None = Field(None, ge=1)
    max_cost_usd: float | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)
    use_cache: bool = True
    allow_self_judge: bool = False


@dataclass
class RunRecord:
    """What an unfinished run left behind, from its journal header or its document."""

    run_id: str
    started_at: str | None
    config: dict[str, Any]
    seed: int
    label: str | None
    suites: list[str]
    options: dict[str, Any]
    datasets: dict[str, str]
    """Suite name → dataset sha256 when the run started."""
    done: dict[tuple[str, str, str, int], CaseResult] = field(default_factory=dict)
    """(suite, case, arm, attempt) → the finished result."""
    source: str = ""
    """Where the record was read (the journal, else the document), for messages."""
    prepared: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Suite → scorer → what its set-up before the suite recorded (a judge's calibration)."""

    def add(self, suite: str, result: CaseResult) -> None:
        """Keep a finished result; one that is not trustworthy (see `trustworthy`) is not
        finished: the resume runs its case again."""
        if trustworthy(result):
            self.done[(suite, result.case_id, result.arm, result.attempt)] = result


UNTRUSTED_ERRORS = frozenset({"WorkerDied"})
"""Errors that say nothing about the product: evalh's own worker process died while it ran
the case (killed, out of memory), so the case was never measured."""


def trustworthy(result: CaseResult) -> bool:
    """Whether a recorded result measured its case: every result but one errored by the
    harness itself (`UNTRUSTED_ERRORS`), which `evalh run --resume` runs again."""
    return not (result.status == "errored" and result.error is not None
                and result.error.type in UNTRUSTED_ERRORS)


def _from_header(run_id: str, header: dict[str, Any], shown: str) -> RunRecord:
    """The record of a journal header (`Journal.read` checked its fields' types)."""
    config = header.get("config") or {}
    options = dict(header.get("options") or config.get("run_options") or {})
    seed = header.get("seed") if header.get("seed") is not None else config.get("seed", 0)
    suites = header.get("suites") or options.get("suites") or []
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise RunDocumentError(f"{shown}:1: invalid journal header at config.seed: {seed!r} is not an integer")
    if not isinstance(suites, list) or not all(isinstance(n, str) for n in suites):
        raise RunDocumentError(f"{shown}:1: invalid journal header at options.suites: not a list of suite names")
    return RunRecord(
        run_id=run_id,
        started_at=header.get("started_at"),
        config=config,
        seed=seed,
        label=header.get("label"),
        suites=list(suites),
        options=options,
        datasets=dict(header.get("datasets") or {}),
        source=f"{shown}:1",
    )


def _refuse_derived(run_id: str, how: str | None) -> None:
    if how is not None and how != "resume":
        raise ResumeRefused(
            f"run {run_id} was made by `evalh {how}`; --resume finishes runs of `evalh run`"
        )


def load_record(store: RunStore, run_id: str) -> RunRecord:
    """The run's record and finished results, from its journal and/or partial document.

    The journal's header is preferred (it carries every option the run was given); the
    results of both are merged, so a run resumed from its document alone and killed again
    loses nothing either.
    """
    journal_path = store.journal_path(run_id)
    doc_path = store.path_for(run_id)
    if not journal_path.is_file() and not doc_path.is_file():
        raise RunNotFound(f"no run {run_id!r} to resume in {store.runs_dir} (no journal, no document)")
    if complete_pending(store, run_id) is not None:  # killed while its document was made
        raise ResumeRefused(f"run {run_id} is complete: the document a kill stopped it writing is "
                            f"written now ({doc_path}): nothing to resume")
    record: RunRecord | None = None
    finished: list[tuple[str, CaseResult]] = []
    if doc_path.is_file():
        run = store.load(run_id)
        if run.status == "complete":
            # The caller holds the run: a journal or temporary file beside a complete
            # document is what a kill between its last steps left behind.
            store.sweep(own=run_id)
            raise ResumeRefused(f"run {run_id} is already complete: nothing to resume")
        _refuse_derived(run_id, run.derived_from.how if run.derived_from else None)
        options = dict(run.config.get("run_options") or {})
        options["allow_self_judge"] = bool(run.config.get("allow_self_judge"))
        seed = run.seed if run.seed is not None else run.config.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise RunDocumentError(f"{doc_path}: invalid run document at config.seed: {seed!r} is not an integer")
        record = RunRecord(
            run_id=run_id, started_at=run.started_at, config=run.config,
            seed=seed,
            label=run.label, suites=list(run.suites), options=options,
            datasets={name: s.dataset.sha256 for name, s in run.suites.items()},
            source=str(doc_path),
        )
        finished += [(name, r) for name, suite in run.suites.items() for r in suite.cases]
        record.prepared = {name: dict(suite.details) for name, suite in run.suites.items()}
    if journal_path.is_file():
        header, results, prepared = Journal.read_all(journal_path)
        kept = record.prepared if record is not None else {}
        if header is not None:
            _refuse_derived(run_id, (header.get("derived_from") or {}).get("how"))
            record = _from_header(run_id, header, str(journal_path))
        elif record is None:
            raise RunDocumentError(f"{journal_path}: the journal has no header line; cannot resume")
        finished += results
        record.prepared = kept
        for suite_name, notes in prepared.items():
            record.prepared.setdefault(suite_name, {}).update(notes)
    assert record is not None
    for suite_name, result in finished:
        record.add(suite_name, result)
    return record




def _require_as_set(suite: Any) -> Any:
    """A suite's snapshot with its `require` table holding only the keys set away from their
    defaults: a run recorded before a requirement existed holds no such key, today's holds
    its default — the same requirements, not a changed evalh.toml."""
    if not isinstance(suite, dict) or not isinstance(suite.get("require"), dict):
        return suite
    from evalh.methodology_spec import RequireConfig
    from evalh.snapshot import snapshot

    defaults = snapshot(RequireConfig())
    require = {k: v for k, v in suite["require"].items() if k not in defaults or v != defaults[k]}
    return {**suite, "require": require}


def check_config(config: Config, now: dict[str, Any], record: RunRecord) -> None:
    """Refuse when settings, prices or one of the run's suites changed since it started.

    `now` is the config snapshot of the plan built from the current config: resolved like
    the one the run recorded (scorers built, a judge's rubric digest filled in)."""
    then = record.config
    current = {
        "settings": now.get("settings"),
        "prices": now.get("prices"),
        "suites": {n: _require_as_set(now.get("suites", {}).get(n)) for n in record.suites},
    }
    recorded = {
        "settings": then.get("settings"),
        "prices": then.get("prices"),
        "suites": {n: _require_as_set((then.get("suites") or {}).get(n)) for n in record.suites},
    }
    where = first_difference(recorded, current)
    if where is not None:
        raise ResumeRefused(
            f"cannot resume run {record.run_id}: {config.path} changed since it started "
            f"(at {where}); start a new run instead"
        )


def check_datasets(suites: list[SuitePlan], record: RunRecord) -> None:
    for suite in suites:
        then = record.datasets.get(suite.name)
        if then is not None and then != suite.dataset.sha256:
            raise ResumeRefused(
                f"cannot resume run {record.run_id}: dataset {suite.dataset_display} of suite "
                f"{suite.name!r} changed since it started; start a new run instead"
            )


def _keep_calibrations(suites: list[SuitePlan], record: RunRecord, prepared: Prepared) -> None:
    """A judge calibration the run finished is kept, not made again (it would be paid twice,
    and a stochastic judge could calibrate differently): it goes in the suite's details,
    where the judge's set-up finds it, and what it spent counts against the budget."""
    from evalh.scorers.judge_calibration import recorded_calibration

    for suite in suites:
        for scorer, info in record.prepared.get(suite.name, {}).items():
            calibration = recorded_calibration(info if isinstance(info, dict) else None)
            if calibration is None:
                continue
            suite.details[scorer] = {"calibration": calibration}
            usage = calibration.get("usage") or {}
            prepared.plan.services.budget.charge(
                cost_usd=usage.get("cost_usd"), tokens_in=usage.get("tokens_in"),
                tokens_out=usage.get("tokens_out"), resumed=True,
            )


def prepare_resume(
    config: Config,
    run_id: str,
    runs_dir: Path,
    *,
    concurrency: int | None = None,
    max_cost_usd: float | None = None,
    max_tokens: int | None = None,
    use_cache: bool | None = None,
) -> Prepared:
    """The plan that finishes run `run_id`: same id, seed, suites and options; only the
    missing triples to run. Concurrency, budgets and the cache may be given anew (a run
    stopped by its budget is resumed with a larger one; the budget counts what the run
    already spent)."""
    store = RunStore(runs_dir)
    if not store.journal_path(run_id).is_file() and not store.path_for(run_id).is_file():
        raise RunNotFound(f"no run {run_id!r} to resume in {store.runs_dir} (no journal, no document)")
    # Held until the run is written (`core.run.entry.run_plan` lets go); a sweep holding it for an
    # instant is waited for.
    lock = store.lock(run_id, wait_s=1.0)
    try:
        prepared = _prepare(config, store, run_id, concurrency=concurrency, max_cost_usd=max_cost_usd,
                            max_tokens=max_tokens, use_cache=use_cache)
    except BaseException:
        lock.release()
        raise
    prepared.lock = lock
    return prepared


def _prepare(
    config: Config, store: RunStore, run_id: str, *, concurrency: int | None,
    max_cost_usd: float | None, max_tokens: int | None, use_cache: bool | None,
) -> Prepared:
    record = load_record(store, run_id)
    if not record.suites:
        raise RunDocumentError(f"run {run_id}: its record names no suites; cannot resume")
    for name in record.suites:
        if name not in config.suites:
            raise ResumeRefused(
                f"cannot resume run {record.run_id}: {config.path} changed since it started "
                f"(at suites.{name}: the suite is gone); start a new run instead"
            )
    try:
        RecordedOptions.model_validate(record.options)
    except ValidationError as exc:
        loc, msg = first_validation_error(exc, ("options",))
        raise RunDocumentError(f"{record.source}: invalid recorded run option at {loc}: {msg}") from None
    opts = record.options
    options = RunOptions(
        suites=record.suites,
        label=record.label,
        seed=record.seed,
        repeats=opts.get("repeats"),
        timeout_s=opts.get("timeout_s"),
        concurrency=concurrency if concurrency is not None else opts.get("concurrency"),
        max_cost_usd=max_cost_usd if max_cost_usd is not None else opts.get("max_cost_usd"),
        max_tokens=max_tokens if max_tokens is not None else opts.get("max_tokens"),
        use_cache=use_cache if use_cache is not None else opts.get("use_cache", True),
        allow_self_judge=bool(opts.get("allow_self_judge", False)),
    )
    prepared = prepare_run(config, options, store.runs_dir)
    plan = prepared.plan
    check_config(config, plan.config_snapshot, record)
    check_datasets(plan.suites, record)
    rounds = opts.get("until_decided")  # a run in rounds (core.run.rounds) has more attempts
    most = int(rounds.get("most") or 0) if isinstance(rounds, dict) else 0
    if isinstance(rounds, dict):
        plan.options["until_decided"] = rounds
    valid = {
        (s.name, c.id, a.name, attempt)
        for s in plan.suites
        for c in s.cases
        for a in s.arms
        for attempt in range(max(s.repeats, most))
    }
    plan.run_id = record.run_id
    plan.started_at = record.started_at
    plan.config_snapshot = copy.deepcopy(record.config)
    given = RunOptions(
        concurrency=concurrency, max_cost_usd=max_cost_usd, max_tokens=max_tokens,
        use_cache=use_cache is not False,
    ).overrides()
    if given:  # what this invocation changed is what the document should say
        plan.config_snapshot["run_options"] = {
            **(plan.config_snapshot.get("run_options") or {}), **given
        }
    for key, result in record.done.items():
        if key in valid:
            plan.carried.setdefault(key[0], []).append(result)
            if not result.cached:  # a resumed run's budget counts what it already spent
                plan.services.budget.charge(cost_usd=result.cost_usd, tokens_in=result.tokens_in,
                                            tokens_out=result.tokens_out, resumed=True)
    _keep_calibrations(plan.suites, record, prepared)
    return prepared
