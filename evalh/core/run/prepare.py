"""Preparing a run: the options of `evalh run` → a validated `RunPlan` with its services,
before the first case (`prepare_run`; a resume's is `core.run.resume.prepare_resume`). The plan
is then executed by `core.run.entry.run_plan`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalh.config import Config
from evalh.core.run.plan import (
    RunPlan,
    SuitePlan,
    build_suite_plan,
    config_snapshot,
    resolve_seed,
    select_suites,
)
from evalh.run_lock import RunLock
from evalh.services import Budget, RunServices
from evalh.store import new_run_id


@dataclass
class RunOptions:
    suites: list[str] | None = None
    label: str | None = None
    seed: int | None = None
    repeats: int | None = None
    concurrency: int | None = None
    timeout_s: float | None = None
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    use_cache: bool = True
    allow_self_judge: bool = False
    max_error_rate: float | None = None
    """`--max-error-rate`: overrides every suite's `max_error_rate` (recorded in `run_options`)."""
    dry_run: bool = False
    """Only estimating: a suite named without its key is planned (nothing will be called)."""
    extra_snapshot: dict[str, object] = field(default_factory=dict)
    destination_named: bool = True
    """Where the run is written was named (`--runs-dir`, `$EVAL_RUNS_DIR`, `[evalh] runs_dir`):
    `require.destination` refuses the run otherwise."""

    def overrides(self) -> dict[str, Any]:
        """Options given on the command line that change what runs, what it may spend or
        what fails it; recorded in the run's config as `run_options` (so `--resume` and
        readers see them)."""
        out: dict[str, Any] = {
            k: getattr(self, k)
            for k in ("repeats", "timeout_s", "concurrency", "max_cost_usd", "max_tokens", "max_error_rate")
            if getattr(self, k) is not None
        }
        if not self.use_cache:
            out["use_cache"] = False
        return out


@dataclass
class Prepared:
    plan: RunPlan
    skipped: list[tuple[str, list[str]]]
    """Suites not run for want of credentials, with the variables they need."""
    lock: RunLock | None = None
    """The run's lock, when preparing already took it (a resume reads the run's record
    under it); `core.run.entry.run_plan` releases it."""


def make_services(config: Config, options: RunOptions, runs_dir: Path, *, budget: Budget | None = None) -> RunServices:
    """The run's services. `budget`: the run's budget, when not the options' or the config's
    limits (a rejudge spends no budget)."""
    services = RunServices(
        root=config.root,
        prices=dict(config.prices),
        budget=budget if budget is not None else Budget(
            max_cost_usd=options.max_cost_usd if options.max_cost_usd is not None else config.settings.max_cost_usd,
            max_tokens=options.max_tokens if options.max_tokens is not None else config.settings.max_tokens,
        ),
        allow_self_judge=options.allow_self_judge,
        max_retry_wait_s=config.settings.max_retry_wait_s,
    )
    from evalh.providers.prices import merged_prices

    services.prices = merged_prices(services.prices)
    if options.use_cache:
        from evalh.providers.cache import ResponseCache, default_cache_dir

        services.cache = ResponseCache(
            default_cache_dir(config.root),
            shared_repeats=[s.name for s in config.suites.values() if s.cache_repeats],
        )
    return services


def prepare_run(config: Config, options: RunOptions, runs_dir: Path) -> Prepared:
    """Validate and build everything before the first case runs (bad input → exit 2)."""
    chosen, skipped = select_suites(config, options.suites, require_credentials=not options.dry_run)
    seed = resolve_seed(options.seed, config)
    suites = [
        build_suite_plan(
            config, s, repeats=options.repeats, timeout_s=options.timeout_s,
            concurrency=options.concurrency,
        )
        for s in chosen
    ]
    from evalh.core.run.requirements import check_run

    check_run(config, suites, named=options.suites, label=options.label,  # [suites.S.require]
              allow_self_judge=options.allow_self_judge, destination_named=options.destination_named)
    services = make_services(config, options, runs_dir)
    extra = dict(options.extra_snapshot)
    if options.allow_self_judge:
        extra["allow_self_judge"] = True
    if options.overrides():
        extra["run_options"] = options.overrides()
    from evalh.core.results.skipped import NOT_RUN_KEY, not_run_record

    chosen_names = {s.name for s in chosen} | {name for name, _ in skipped}
    not_run = not_run_record(skipped, [n for n in config.suites if n not in chosen_names], options.suites)
    if not_run:  # what a comparison says of a suite the baseline ran and this run did not
        extra[NOT_RUN_KEY] = not_run
    recorded = {
        "suites": [s.name for s in chosen], "label": options.label, "seed": seed,
        "allow_self_judge": options.allow_self_judge, **options.overrides(),
    }
    plan = RunPlan(
        run_id=new_run_id(), root=config.root, suites=suites,
        config_snapshot=config_snapshot(config, seed, extra), seed=seed,
        services=services, label=options.label, options=recorded,
    )
    cheapest_first(plan)
    return Prepared(plan=plan, skipped=skipped)


def cheapest_first(plan: RunPlan) -> None:
    """Order the plan's suites cheapest first: by tier, then by the estimated cost of what
    they will call (a suite whose cost cannot be estimated — an unpriced model, a scorer
    that cannot say how many requests it makes — after those that can), then by name.
    The order is recorded in the plan's options, so a resumed run keeps it."""
    tiers = [s.tier for s in plan.suites]
    if len(set(tiers)) == len(tiers):  # every suite has its own tier: nothing to weigh
        plan.suites.sort(key=lambda s: (s.tier, s.name))
    else:
        from evalh.core.run.estimate import estimate_suite

        def key(suite: SuitePlan) -> tuple[int, int, float, str]:
            try:
                total = estimate_suite(plan, suite).total
            except Exception:  # a case whose template fails errors when it runs, not here
                return (suite.tier, 1, 0.0, suite.name)
            unknown = total.unpriced > 0 or total.requests_unknown > 0
            return (suite.tier, int(unknown), total.cost_usd or 0.0, suite.name)

        plan.suites.sort(key=key)
    plan.options["suites"] = [s.name for s in plan.suites]
