"""`evalh run` as a request and its outcome: the command parses its options into a
`RunRequest`, and the core decides everything else — which flags `--resume` refuses, which
suites are skipped, the dry run, the baseline check before anything is spent, the exit
code and its reasons, the `--json` document. The command only renders.

Two steps, so that the skipped-suite warnings are shown before anything can fail:
`prepare_request` (the plan and the warnings) then `run_request` (the outcome).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from evalh.errors import EvalhError

if TYPE_CHECKING:
    from evalh.config import Config
    from evalh.core.compare.models import ComparePolicy, Comparison
    from evalh.core.compare.notes import CompareNotes
    from evalh.core.run.estimate import PlanEstimate
    from evalh.core.run.items import Observer
    from evalh.core.run.prepare import Prepared
    from evalh.models import Run
    from evalh.store import RunStore


@dataclass(frozen=True)
class RunRequest:
    """The options of `evalh run`, as given (None: not given)."""

    suites: list[str] | None = None
    label: str | None = None
    repeats: int | None = None
    concurrency: int | None = None
    timeout_s: float | None = None
    seed: int | None = None
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    no_cache: bool = False
    resume: str | None = None
    """`--resume RUN_ID`: finish that run under its own settings."""
    dry_run: bool = False
    allow_self_judge: bool = False
    max_error_rate: float | None = None
    compare_baseline: bool = False
    shard: str | None = None
    """`--shard K/N`: run only the cases whose id hashes to shard K of N (`core.run.shard`)."""
    judge_model: str | None = None
    """`--judge-model`: the run's judges swapped before planning (`core.request.overrides`)."""
    sleep_ms: float | None = None
    """`--sleep-ms`: every Python, model and HTTP target paced (`core.request.overrides`)."""
    iterations: int | None = None
    """`--iterations`: cases generated per suite with a `generate` table (`core.generate.generate`)."""
    processes: int | None = None
    """`--procs`: every suite's cases over this many worker processes (`core.run.procs`)."""
    min_coverage: float | None = None
    """`--min-coverage`: with `--compare-baseline`, as `evalh compare --min-coverage`."""
    allow_removed_suites: tuple[str, ...] = ()
    """`--allow-removed-suite`: with `--compare-baseline`, as on `evalh compare`."""
    until_decided: bool = False
    """`--until-decided` (with `--compare-baseline`): run every stochastic suite in rounds
    until its gating rows are decided (`core.run.rounds`)."""
    max_attempts: int | None = None
    """`--max-attempts`: the most candidate attempts per suite and arm in rounds."""
    fail_on_inconclusive: bool = False
    """`--fail-on-inconclusive` (with `--compare-baseline`): exit 3 when the gate passes but a
    gating row is inconclusive on the worse side, as `evalh compare` does."""

    def refused_with_resume(self) -> list[str]:
        """The flags given that `--resume` refuses: the run keeps its own."""
        return [flag for flag, value in (
            ("--suite", self.suites), ("--label", self.label), ("--seed", self.seed),
            ("--repeats", self.repeats), ("--timeout", self.timeout_s),
            ("--allow-self-judge", self.allow_self_judge or None),
            ("--max-error-rate", self.max_error_rate),
            # a run in rounds keeps its schedule: its looks are what its guarantee rests on
            ("--max-attempts", self.max_attempts),
        ) if value is not None]


class Reference(Protocol):
    """What `--compare-baseline` compares with (`evalh.baseline.LoadedBaseline`)."""

    def compare(self, candidate: Run, policy: ComparePolicy | None = None) -> tuple[Comparison, CompareNotes]: ...

    def compare_stored(self, store: RunStore, run_id: str,
                       policy: ComparePolicy | None = None) -> tuple[Comparison, CompareNotes]: ...

    @property
    def runs(self) -> list[Run]:
        """The baseline's runs (their headers at least: their dates and commits)."""
        ...


@dataclass
class PreparedRequest:
    """A request planned: nothing has run, nothing is written."""

    request: RunRequest
    config: Config
    store: RunStore
    prepared: Prepared
    warnings: list[str] = field(default_factory=list)
    """To show before anything else: the suites skipped for a missing environment variable."""

    @property
    def resume_note(self) -> str | None:
        """What a resumed run keeps and has left to run (None when not resuming, or when
        nothing will run: a dry run, no suite)."""
        plan = self.prepared.plan
        if self.request.resume is None or self.request.dry_run or not plan.suites:
            return None
        return (f"resuming run {plan.run_id}: {plan.carried_total} of {plan.total} results "
                f"kept, {plan.total - plan.carried_total} to run")


@dataclass
class RunOutcome:
    """What came of a request: a dry run's estimate, or the run with its exit code (and the
    comparison with the baseline when asked)."""

    code: int = 0
    """The exit code: the run's verdict, raised by a failed baseline gate."""
    reasons: list[str] = field(default_factory=list)
    """Why the code is not 0, where the results table does not say it."""
    run: Run | None = None
    path: Path | None = None
    estimate: PlanEstimate | None = None
    comparison: Comparison | None = None
    notes: CompareNotes | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `--json` document: the estimate of a dry run, else the run's headline."""
        if self.estimate is not None:
            return self.estimate.to_dict()
        assert self.run is not None
        doc: dict[str, Any] = {
            "run_id": self.run.run_id, "path": str(self.path), "status": self.run.status,
            "exit_code": self.code, "reasons": self.reasons, "summary": self.run.summary,
        }
        if self.run.rounds:  # --until-decided: what each round spent and decided
            doc["rounds"] = self.run.rounds
        if self.comparison is not None:
            from evalh.core.compare.notes import comparison_doc

            doc["comparison"] = comparison_doc(self.comparison, self.notes)
        return doc


def _panel_warnings(plan: Any) -> list[str]:
    """A judge panel that names one model more than once (refused by `require.distinct_judges`,
    flagged otherwise: here, in the run document and in every report)."""
    out = []
    for suite in plan.suites:
        for scorer in suite.scorers:
            models = getattr(scorer.config, "models", None)
            if not callable(models):  # not a judge (whose module a run without one does not import)
                continue
            from evalh.scorers.judge_base import repeated_models

            repeated = repeated_models(models())
            if repeated:
                out.append(f"suite {suite.name!r}: judge {scorer.config.display_name!r}: the panel is not distinct: "
                           f"{', '.join(repeated)} votes more than once (one model's bias, not a consensus of models)")
    return out


def prepare_request(
    config: Config, request: RunRequest, runs_dir: Path | None = None,
    *, say: Callable[[str], None] | None = None,
) -> PreparedRequest:
    """Plan the request: the config rewritten by `--judge-model` and `--sleep-ms`, the
    generated cases written and frozen (`core.generate.generate.for_run`, whose notes go to `say` as
    they come), then a new run (`core.run.prepare.prepare_run`) or the rest of one
    (`core.run.resume.prepare_resume`). Raises `EvalhError` (exit 2) for flags `--resume`
    refuses and for bad input."""
    from dataclasses import replace

    from evalh.store import RunStore, resolve_runs_dir, runs_dir_named

    if request.judge_model or request.sleep_ms is not None:  # before anything is planned
        from evalh.core.request.overrides import with_judge_model, with_pace

        config = with_pace(with_judge_model(config, request.judge_model), request.sleep_ms)
    directory = resolve_runs_dir(runs_dir, config.root, config.settings.runs_dir)
    named = runs_dir_named(runs_dir, config.settings.runs_dir)
    if request.resume is None and any(s.generate is not None for s in config.suites.values()):
        from evalh.core.run.requirements import check_request

        # generating cases spends on a model: a run its requirements refuse must not get there
        check_request(config, request.suites, repeats=request.repeats, label=request.label,
                      allow_self_judge=request.allow_self_judge, destination_named=named, dry_run=request.dry_run)
    if request.iterations is not None or any(s.generate is not None for s in config.suites.values()):
        from evalh.core.generate.generate import for_run  # imported by runs that generate cases
        from evalh.gcpause import end_startup

        end_startup()  # generating is model calls, not the program's start (evalh.gcpause)

        gen = for_run(config, suites=request.suites, runs_dir=directory, seed=request.seed,
                      iterations=request.iterations, max_cost_usd=request.max_cost_usd,
                      max_tokens=request.max_tokens, resume=request.resume, dry_run=request.dry_run,
                      allow_self=request.allow_self_judge, use_cache=not request.no_cache)
        config = gen.config
        request = replace(request, seed=gen.seed, max_cost_usd=gen.max_cost_usd, max_tokens=gen.max_tokens)
        for note in gen.notes:
            if say is not None:
                say(note)
    if request.resume is not None:
        from evalh.core.run.resume import prepare_resume

        given = request.refused_with_resume()
        if given:
            raise EvalhError(f"--resume keeps the run's own suites, label, seed, repeats, timeout, "
                             f"judge settings, max error rate and attempt budget: drop {', '.join(given)}")
        prepared = prepare_resume(
            config, request.resume, directory, concurrency=request.concurrency,
            max_cost_usd=request.max_cost_usd, max_tokens=request.max_tokens,
            use_cache=False if request.no_cache else None,
        )
    else:
        from evalh.core.run.prepare import RunOptions, prepare_run

        options = RunOptions(
            suites=request.suites, label=request.label, seed=request.seed, repeats=request.repeats,
            concurrency=request.concurrency, timeout_s=request.timeout_s,
            max_cost_usd=request.max_cost_usd, max_tokens=request.max_tokens,
            use_cache=not request.no_cache, allow_self_judge=request.allow_self_judge,
            max_error_rate=request.max_error_rate, dry_run=request.dry_run,
            destination_named=named,
        )
        prepared = prepare_run(config, options, directory)
    from evalh.core.run.shard import apply_shard

    apply_shard(prepared.plan, request.shard, resumed=request.resume is not None,
                seeded=request.seed is not None or config.settings.seed is not None)
    if request.processes is not None:  # the results are the same: not recorded, a resume may differ
        for suite_plan in prepared.plan.suites:
            suite_plan.processes = request.processes
    warnings = [f"skipped suite {name!r}: needs {', '.join(missing)}" for name, missing in prepared.skipped]
    warnings += _panel_warnings(prepared.plan)
    return PreparedRequest(request, config, RunStore(directory), prepared, warnings)


def in_rounds(req: PreparedRequest) -> bool:
    """Whether the run goes in rounds until decided (`core.run.rounds`): `--until-decided`,
    a suite whose config sets `until_decided`, or a resumed run that went in rounds —
    always with `--compare-baseline` (the rounds look at the baseline)."""
    if not req.request.compare_baseline:
        return False
    plan = req.prepared.plan
    return (req.request.until_decided or "until_decided" in plan.options
            or any(s.config is not None and s.config.until_decided for s in plan.suites))


def run_request(
    req: PreparedRequest,
    observer: Observer | None = None,
    *,
    load_reference: Callable[[], Reference] | None = None,
    results: bool = True,
) -> RunOutcome:
    """Carry out a planned request: estimate it (dry run), or run it and judge the run.

    `load_reference` (needed with `--compare-baseline`) loads what the run is compared
    with; it is called before the run starts, so a missing or unreadable baseline fails
    before anything is spent. Raises `EvalhError` when no suite can run. `results=False`:
    the outcome's run comes without its results (`run_plan`'s; `evalh run` reads what it
    prints from the document), and the baseline is compared with the run's facts."""
    plan = req.prepared.plan
    if not plan.suites:
        raise EvalhError("no suite can run (see the skipped suites above)")
    if in_rounds(req):
        _check_budgets(req)
    if req.request.dry_run:
        from evalh.core.run.estimate import estimate_plan
        from evalh.gcpause import end_startup

        end_startup()  # the estimate is the command's work: no run's freeze ends the pause (evalh.gcpause)

        if in_rounds(req) and req.request.compare_baseline and load_reference is not None:
            _plan_to_budget(req, load_reference)
        return RunOutcome(estimate=estimate_plan(plan, req.prepared.skipped))
    reference = policy = None
    if req.request.compare_baseline:
        if load_reference is None:
            raise TypeError("run_request: --compare-baseline needs load_reference")
        reference = load_reference()
        policy = _policy(req)  # only a run that is compared imports how (core.compare.models)
    from evalh.core.run.entry import run_plan
    from evalh.core.run.verdict import run_verdict

    if reference is not None and in_rounds(req):
        from evalh.core.run.rounds import run_until_decided

        rounds_run, cmp, notes = run_until_decided(
            req.prepared.plan, req.store, observer, reference, lock=req.prepared.lock,
            until_decided=req.request.until_decided, max_attempts=req.request.max_attempts,
            resumed=req.request.resume is not None, policy=policy)
        verdict = run_verdict(rounds_run)
        if notes is not None:
            _add_baseline_age(notes, reference, rounds_run, req)
        return RunOutcome(code=gate_code(verdict.code, cmp, req.request), reasons=verdict.reasons,
                          run=rounds_run, path=req.store.path_for(rounds_run.run_id),
                          comparison=cmp, notes=notes)
    run = run_plan(req.prepared.plan, req.store, observer, lock=req.prepared.lock, results=results)
    verdict = run_verdict(run)
    outcome = RunOutcome(code=verdict.code, reasons=verdict.reasons, run=run,
                         path=req.store.path_for(run.run_id))
    if reference is not None:
        if results:  # the baseline's runs pooled per case
            outcome.comparison, outcome.notes = reference.compare(run, policy)
        else:  # what a comparison pairs, read from the documents
            outcome.comparison, outcome.notes = reference.compare_stored(req.store, run.run_id, policy)
        _add_baseline_age(outcome.notes, reference, run, req)
        outcome.code = gate_code(outcome.code, outcome.comparison, req.request)
    return outcome


def _policy(req: PreparedRequest) -> ComparePolicy:
    """How the run is compared with its baseline (`--min-coverage`, `--allow-removed-suites`)."""
    from evalh.core.compare.models import ComparePolicy

    return ComparePolicy(min_coverage=req.request.min_coverage,
                         allow_removed_suites=tuple(sorted(set(req.request.allow_removed_suites))))


def rounds_settings(req: PreparedRequest) -> tuple[int | None, bool]:
    """(max_attempts, every) of the rounds: a resumed run's own, else the request's
    `--max-attempts` and `--until-decided` (`core.run.rounds.settings`)."""
    from evalh.core.run.rounds import settings

    return settings(req.prepared.plan, req.request.max_attempts, req.request.until_decided)


def _plan_to_budget(req: PreparedRequest, load_reference: Callable[[], Reference]) -> None:
    """A dry run in rounds: each suite in rounds planned at its budget's last look, so the
    estimate's requests, tokens and cost are the most the run can spend. A baseline that is
    unset or cannot load refuses the dry run as it would the run (exit 2): there is no
    schedule, and one attempt a case would understate the run by its whole budget."""
    from evalh.core.run.rounds import schedule, set_to_budget

    reference = load_reference()
    run = getattr(reference, "run", None)
    if run is None:
        return
    plan = req.prepared.plan
    max_attempts, every = rounds_settings(req)
    set_to_budget(plan, schedule(plan, run, max_attempts=max_attempts, every=every))


def _add_baseline_age(notes: Any, reference: Any, run: Any, req: PreparedRequest) -> None:
    """How old the baseline is, as `evalh compare` says it (EVALH_BASE_REF: its --base-ref),
    at the top of the comparison's notes: with or without rounds."""
    import os

    from evalh.core.compare.baseline_age import baseline_age

    age = baseline_age(reference.runs, run, req.config.root, base_ref=os.environ.get("EVALH_BASE_REF"))
    notes.header[:0] = age.lines()
    notes.extra["baseline_age"] = age.to_dict()


def _check_budgets(req: PreparedRequest) -> None:
    """A budget of attempts below a suite's cases cannot be kept (every case gets one
    attempt): refused before anything runs, naming the suite."""
    for suite in req.prepared.plan.suites:
        cfg = suite.config
        if suite.regime != "stochastic":
            continue
        if req.request.max_attempts is not None:
            budget, source = req.request.max_attempts, "--max-attempts"
        elif cfg is not None and cfg.max_attempts is not None:
            budget, source = cfg.max_attempts, f"[suites.{suite.name}] max_attempts"
        else:
            continue
        if budget < len(suite.cases):
            raise EvalhError(
                f"{source} {budget} is below suite {suite.name}'s {len(suite.cases)} cases: "
                "in rounds every case gets one attempt at least")


def gate_code(code: int, comparison: Comparison, request: RunRequest) -> int:
    """The run's exit code raised by the baseline gate: 1 on a regression (always with
    `--compare-baseline`), else 3 with `--fail-on-inconclusive` for a gating row inconclusive
    on the worse side — only when the run itself passed."""
    from evalh.core.compare.gate import gate_exit_code

    gate = gate_exit_code(comparison, fail_on_regression=True,
                          fail_on_inconclusive=request.fail_on_inconclusive)
    if gate == 1 or code == 0:
        return max(code, gate)
    return code
