"""Plans: what the runner will execute. Every front door (run, resume, rejudge, sweep) builds
a `RunPlan` and hands it to the one runner core.

Each arm of a suite has an output source (`evalh.targets.base.OutputSource`): a live target
(`evalh run`) or the outputs a run stored (`evalh rejudge`). Results already there — a
resumed run's finished ones, a rejudge's results not judged again — are `RunPlan.carried`:
the runner puts them in the run as they are and runs only the other (case, arm, attempt)s.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalh.config import Config, SuiteConfig
from evalh.core.run.sources import LiveSource, batch_width, live_source
from evalh.datasets import CaseList, Dataset, load_dataset
from evalh.errors import ConfigError, MissingCredentials
from evalh.imports import ImportFailure
from evalh.models import Case, CaseResult, DerivedFrom, GitInfo
from evalh.snapshot import snapshot

if TYPE_CHECKING:
    from evalh.scorers.base import Scorer
    from evalh.services import RunServices
    from evalh.targets.base import OutputSource, Target


@dataclass
class ArmPlan:
    name: str
    source: OutputSource | None
    """Where the arm's outputs come from; None when the suite was planned without building
    its targets (`evalh validate` of a suite whose credentials are not set)."""

    @property
    def target(self) -> Target | None:
        """The live target behind the source, if it is one (the dry-run estimate reads it)."""
        return self.source.target if isinstance(self.source, LiveSource) else None


@dataclass
class SuitePlan:
    name: str
    regime: Literal["deterministic", "stochastic"]
    tier: int
    dataset: Dataset
    dataset_display: str
    cases: Sequence[Case]
    """The cases it runs: a `datasets.CaseList` (compact JSON, a model made per read) for a
    dataset from a file, else a list."""
    arms: list[ArmPlan]
    scorers: list[Scorer]
    repeats: int
    timeout_s: float
    concurrency: int
    target_snapshot: dict[str, Any]
    """The suite's target as the run document records it (`SuiteResult.target`)."""
    subject_models: list[str]
    """The models the arms' targets ask (judge ≠ subject)."""
    config: SuiteConfig | None = None
    """The suite's config, when it was planned from evalh.toml (None: from a stored run)."""
    details: dict[str, Any] = field(default_factory=dict)
    processes: int = 1
    """Worker processes its cases are spread over (`evalh.core.run.procs`)."""
    attempts: list[int] | None = None
    """Per case (by position), how many attempts to run, each at most `repeats`: attempts
    0..k−1 of that case, in every arm (`evalh run --until-decided` runs more attempts of
    the cases whose baseline varies, round by round: `core.run.rounds`). None: `repeats`
    for every case."""

    @property
    def total(self) -> int:
        if self.attempts is not None:
            return len(self.arms) * sum(min(a, self.repeats) for a in self.attempts)
        return len(self.cases) * len(self.arms) * self.repeats


@dataclass
class RunPlan:
    run_id: str
    root: Path
    suites: list[SuitePlan]
    config_snapshot: dict[str, Any]
    seed: int
    services: RunServices
    label: str | None = None
    derived_from: DerivedFrom | None = None
    carried: dict[str, list[CaseResult]] = field(default_factory=dict)
    """Per suite, the results already there (a resumed run's finished ones; a rejudge's not
    judged again): put in the run as they are, their (case, arm, attempt)s not run. The
    runner journals them when the run starts and empties the lists (it keeps numbers, not
    models: `evalh.core.run.retained`)."""
    started_at: str | None = None
    """When the run first started (resume keeps the original); None → now."""
    rounds: list[dict[str, Any]] = field(default_factory=list)
    """The rounds recorded so far (`--until-decided`, `core.run.rounds`): `Run.rounds`."""
    options: dict[str, Any] = field(default_factory=dict)
    """The run options as given (suites, repeats, timeout, budgets, …), recorded in the
    journal header so `evalh run --resume` can rebuild the same plan."""
    git: GitInfo | None = None
    """The git state the run records when it is not the project's (an imported run: what
    the other tool recorded); None → asked of git in `root`."""

    @property
    def total(self) -> int:
        return sum(s.total for s in self.suites)

    @property
    def carried_total(self) -> int:
        return sum(len(r) for r in self.carried.values())


def config_snapshot(config: Config, seed: int, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    snap = snapshot(config)
    snap["seed"] = seed
    snap.update(extra or {})
    return snap


def select_suites(
    config: Config, names: list[str] | None, *, require_credentials: bool = True
) -> tuple[list[SuiteConfig], list[tuple[str, list[str]]]]:
    """The suites to run and those skipped for want of credentials. The run order is the
    plan's (`evalh.core.run.prepare.cheapest_first`), which weighs estimated cost.

    Suites named explicitly must be runnable: a missing key is an error (exit 2), unless
    `require_credentials` is false (a dry run only estimates; nothing is called). With no
    names, every suite that can run runs, and the others are returned with what they need.
    """
    if names:
        chosen = [config.suite(n) for n in names]
        for suite in chosen if require_credentials else ():
            missing = suite.missing_env()
            if missing:
                raise MissingCredentials(
                    f"suite {suite.name!r} needs {', '.join(missing)}: set "
                    f"{'it' if len(missing) == 1 else 'them'} in the environment"
                )
        return chosen, []
    runnable, skipped = [], []
    for suite in config.suites_in_order():
        missing = suite.missing_env()
        (skipped.append((suite.name, missing)) if missing else runnable.append(suite))
    return runnable, skipped


def load_suite_dataset(config: Config, suite: SuiteConfig) -> tuple[Dataset, str, Sequence[Case]]:
    path = config.resolve(suite.dataset)
    dataset = load_dataset(path, display=suite.dataset)
    cases = dataset.cases
    if suite.splits is not None:
        splits = suite.splits

        def kept(c: Case) -> bool:
            return c.metadata.split in splits

        cases = cases.where(kept) if isinstance(cases, CaseList) else [c for c in cases if kept(c)]
        if not cases:  # a typo in `splits` must not pass as a suite of zero cases
            present = sorted({str(c.metadata.split) for c in dataset.cases})
            raise ConfigError(
                f"{config.path}: suites.{suite.name}.splits: no case of {suite.dataset} is in "
                f"{', '.join(map(repr, suite.splits))} (its splits: {', '.join(present)})"
            )
    return dataset, suite.dataset, cases


def build_suite_plan(
    config: Config,
    suite: SuiteConfig,
    *,
    repeats: int | None = None,
    timeout_s: float | None = None,
    concurrency: int | None = None,
    with_targets: bool = True,
) -> SuitePlan:
    """Load the suite's dataset and build its targets and scorers (user code imported here)."""
    from evalh.providers.base import base_url_variable_problems
    from evalh.scorers import build_scorer
    from evalh.targets import build_target

    tree = suite.model_dump(mode="json", serialize_as_any=True)  # the targets' own fields
    problems = base_url_variable_problems(tree, f"{config.path}: suites.{suite.name}")
    if problems:  # before any case: not one error per case
        raise ConfigError(problems[0])
    dataset, shown, cases = load_suite_dataset(config, suite)
    timeout = timeout_s or suite.timeout_s or config.settings.timeout_s
    arms: list[ArmPlan] = []
    for i, (arm_name, tcfg) in enumerate(suite.arm_targets()):
        key = f"suites.{suite.name}." + (f"arms[{i}].target" if suite.arms else "target")
        source = None
        if with_targets:
            try:
                source = live_source(build_target(tcfg, config.root), timeout)  # batch = true: a BatchSource
            except (ImportFailure, ValueError, OSError) as exc:
                raise ConfigError(f"{config.path}: {key}: {exc}") from None
        arms.append(ArmPlan(arm_name, source))
    if suite.baseline_arm:  # the baseline arm first, so reports read against it
        arms.sort(key=lambda a: a.name != suite.baseline_arm)
    scorers = []
    for i, scfg in enumerate(suite.scorers):
        try:
            scorers.append(build_scorer(scfg, config.root))
        except (ImportFailure, ValueError, OSError) as exc:
            raise ConfigError(f"{config.path}: suites.{suite.name}.scorers[{i}]: {exc}") from None
    return SuitePlan(
        name=suite.name,
        regime=suite.regime,
        tier=suite.tier,
        dataset=dataset,
        dataset_display=shown,
        cases=cases,
        arms=arms,
        scorers=scorers,
        repeats=repeats or suite.repeats,
        timeout_s=timeout,
        concurrency=batch_width(tree) or concurrency or suite.concurrency or config.settings.concurrency,
        target_snapshot=snapshot(suite.arm_targets()[0][1]),
        subject_models=[m for _, t in suite.arm_targets() if (m := t.model_id())],
        config=suite,
        processes=suite.processes or config.settings.processes,
    )


def resolve_seed(seed: int | None, config: Config) -> int:
    if seed is not None:
        return seed
    if config.settings.seed is not None:
        return config.settings.seed
    return random.SystemRandom().randrange(2**31)
