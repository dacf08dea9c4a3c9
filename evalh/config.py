"""evalh.toml → validated settings.

The contract users rely on::

    [suites.gate]
    dataset = "datasets/gate.jsonl"        # JSONL, one case a line; JSON array also accepted
    target  = "examples.citecheck:check"   # module:function, or a table with `kind = ...`
    regime  = "deterministic"              # or "stochastic"
    scorers = [{ type = "exact" }]

Every table is validated with `extra="forbid"`: an unknown key is an error naming the file
and the key. Paths are relative to the directory holding the config file (the project root).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalh import registry
from evalh.errors import ConfigError
from evalh.generate_spec import GeneratorConfig
from evalh.methodology_spec import (
    ContrastConfig,
    MetricConfig,
    RequireConfig,
    apply_methodology,
    check_suite_methodology,
)
from evalh.scaffold import CONFIG_FILENAME as CONFIG_FILENAME
from evalh.scaffold import find_config as find_config
from evalh.scorers.base import ScorerConfig
from evalh.services import Price
from evalh.sweep_spec import SweepConfig
from evalh.targets.base import TargetConfig

DEFAULT_MAX_ERROR_RATE = 0.1
"""A suite fails the run when more than this share of its results errored or lost their
judgment. One in ten: a flaky provider or a judge that sometimes truncates stays under it
on a large suite, an outage, a wrong key or a judge that fails every case never does."""
DEFAULT_MIN_COVERAGE = 0.9
"""`min_coverage` when a suite does not set it (`SuiteConfig.min_coverage`): the candidate
must measure nine in ten of what the base measured, the complement of the default
`max_error_rate`."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset()


class Thresholds(_Strict):
    """Allowances for stochastic suites; a change inside its allowance is `flat`."""

    SNAPSHOT = frozenset(
        {
            "pass_rate_drop", "mean_score_drop", "cost_increase_pct", "latency_p50_increase_pct",
            "latency_floor_ms",
        }
    )

    pass_rate_drop: float = Field(0.05, ge=0, le=1)
    """Allowed fall of the pass rate, in absolute terms (0.05 = five percentage points)."""
    mean_score_drop: float = Field(0.02, ge=0, le=1)
    """Allowed fall of the mean score (absolute, on the 0–1 scale)."""
    cost_increase_pct: float = Field(25.0, ge=0)
    """Allowed rise of the mean cost per case, in percent."""
    latency_p50_increase_pct: float = Field(50.0, ge=0)
    """Allowed rise of the typical latency per case (the geometric mean, compared paired), in
    percent. (The name is historical: medians were compared before.)"""
    latency_floor_ms: float = Field(50.0, ge=0)
    """A latency rise smaller than this many milliseconds (at the base's typical latency) is
    inside the allowance whatever its percentage: +12 % of 4 ms is nobody's regression."""


class ArmConfig(_Strict):
    """A variant of the suite's target within one run (other prompt, other model)."""

    SNAPSHOT = frozenset({"name", "target"})

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    """The arm's name, shown in results and used by `baseline_arm`; unique in the suite."""
    target: TargetConfig
    """The arm's target, written like the suite's `target`."""


GateRow = Literal["pass_rate", "mean_score", "error_rate", "cost_usd", "latency_ms"]
"""A row of a stochastic comparison a suite can gate on (`[suites.S] gate = [...]`)."""

DEFAULT_GATE: frozenset[str] = frozenset({"pass_rate", "mean_score", "error_rate"})
"""The rows that gate when a suite does not say: cost and latency are reported only (their
noise is large and a product change often moves them on purpose), so they stay out of the
family and do not dilute the rows that decide."""


class SuiteConfig(_Strict):
    SNAPSHOT = frozenset(
        {
            "dataset", "target", "regime", "scorers", "arms", "baseline_arm", "repeats",
            "timeout_s", "concurrency", "thresholds", "tier", "description", "requires_env",
            "cache_repeats", "splits", "sweep", "cluster", "gate_scores", "max_error_rate",
            "require", "metrics", "contrasts", "shuffle", "generate", "advisory", "min_coverage",
            "estimand", "until_decided", "max_attempts", "gate", "gate_weight",
        }
    )
    SNAPSHOT_IF_SET: ClassVar[frozenset[str]] = frozenset(
        {"generate", "min_coverage", "estimand", "until_decided", "max_attempts", "gate", "gate_weight"}
    )

    name: str = ""
    dataset: str = ""
    """The cases: a JSONL file (one case a line) or a JSON array, relative to the project root.
    Required unless the suite has a `generate` table (then its cases come before these)."""
    generate: GeneratorConfig | None = None
    """`[suites.S.generate]`: cases a model writes from a corpus or a palette before the suite
    runs (see docs/generated-cases.md)."""
    target: TargetConfig
    """The system under test: `"module:function"` or a table with `kind`. Not needed with
    `arms` (the baseline arm's target stands for it)."""
    regime: Literal["deterministic", "stochastic"] = "deterministic"
    """`deterministic`: compared case by case with zero tolerance, and any failed or errored
    case makes `evalh run` exit 1. `stochastic`: compared by thresholds and statistics."""
    scorers: list[ScorerConfig] = Field(default_factory=list)
    """What judges each output; a case passes when no scorer fails it and at least one
    passes it (with none, or only abstentions, it fails)."""
    arms: list[ArmConfig] = Field(default_factory=list)
    """Variants of the target run side by side; replaces `target` in the run when given."""
    baseline_arm: str | None = None
    """The arm others are judged against; defaults to the first arm."""
    repeats: int = Field(1, ge=1)
    """Times each case runs (attempts 0..N-1); `--repeats` overrides it."""
    timeout_s: float | None = Field(None, gt=0)
    """Per-call timeout of the target; `[evalh] timeout_s` when unset, `--timeout` overrides."""
    concurrency: int | None = Field(None, ge=1)
    """Cases in flight at once; `[evalh] concurrency` when unset, `--concurrency` overrides."""
    processes: int | None = Field(None, ge=1)
    """Worker processes the suite's cases are spread over, each with its own event loop and
    clients (for clients whose CPU per request fills one core: docs/scale.md#throughput-more-than-one-core);
    `[evalh] processes` when unset, `--procs` overrides. Not in the run document: the results
    are the same."""
    thresholds: Thresholds = Field(default_factory=Thresholds)
    """Allowances of `evalh compare` for stochastic suites."""
    max_error_rate: float = Field(DEFAULT_MAX_ERROR_RATE, ge=0, le=1)
    """`evalh run` exits 1 when more than this share of the suite's results errored or got
    no judgment (errored + judge_error over the results that ran), in either regime; a suite
    whose every result errored fails whatever the value, advisory or not.
    `--max-error-rate` overrides it."""
    min_coverage: float | None = Field(None, ge=0, le=1)
    """`evalh compare --fail-on-regression` (and `run --compare-baseline`) fails the suite
    when the candidate measured less than this share of the base's (case, arm, attempt)
    results that have a trustworthy result (passed or failed), on the same case content;
    0.9 when unset, `--min-coverage` overrides. The larger of the two runs' values applies,
    the base's being 0.9 when it sets none: a change cannot lower its own gate
    (docs/ci.md#what-a-green-gate-guarantees)."""
    tier: int = 0
    """Suites run cheapest first: lower tiers first; within a tier, by the estimated cost of
    their model calls (suites whose cost cannot be estimated last), then by name."""
    description: str | None = None
    """Free text shown in reports (URLs in it lose their credentials in the run document)."""
    requires_env: list[str] = Field(default_factory=list)
    """Environment variables the suite needs besides its target's (names only)."""
    cache_repeats: bool = False
    """When true, repeats share one cached reply instead of one per attempt."""
    splits: list[str] | None = None
    """Run only cases of these splits (all when unset)."""
    sweep: SweepConfig | None = None
    """`[suites.S.sweep]`: the policy family and grid `evalh sweep` uses (see docs/labels-and-sweeps.md)."""
    cluster: str | None = Field("group", min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    """The case metadata field whose cases are related (same source document): `compare`'s
    intervals count these clusters, not the cases. Cases without the field are their own
    cluster; `cluster = "case"` turns clustering off."""
    advisory: bool = False
    """Advisory (a suite judged only by an LLM judge, say): its figures are reported with
    `judgeUse: advisory-only` and `releaseDecision: not-assessed`, and what it measured never
    changes the exit code of `evalh run` or `evalh compare`; one that measured nothing (every
    result errored or got no judgment) fails both, like any suite (docs/labels-and-sweeps.md)."""
    estimand: Literal["fixed-suite", "population"] | None = None
    """What `compare` estimates for this suite's pass-rate and score rows (docs/methodology.md,
    "The estimand"): `fixed-suite` (the default when unset), the change over these very cases,
    whose only randomness is the attempts'; or `population`, the change over the population
    the cases were sampled from. `evalh compare --estimand` overrides it."""
    until_decided: bool | None = None
    """`evalh run --compare-baseline` runs this suite in rounds until its gating rows are
    decided (`--until-decided`; docs/methodology.md, "Deciding in rounds")."""
    max_attempts: int | None = Field(None, ge=1)
    """With `until_decided`: the most candidate attempts (target calls) per arm of the suite;
    default 8 × its cases. `--max-attempts` overrides it."""
    gate_scores: list[str] = Field(default_factory=list)
    """Scorer names whose mean each gates a stochastic suite on its own row (allowance
    `mean_score_drop`); when set, the blended mean of all scorers is shown but does not gate."""
    methodology: str | None = None
    """A named preset of `require` (`"bias-aware"`): every requirement of the methodology,
    for this suite; `[evalh] methodology` sets it for every suite (docs/methodology-bias.md)."""
    gate: list[GateRow] | None = Field(None, min_length=1)
    """Rows of a stochastic suite that gate (are tested in the comparison's family and can
    make it `regressed`); unset: `DEFAULT_GATE` (pass rate, mean score, error rate). Cost
    and latency are reported, not gated, unless named here. Rows of `gate_scores` gate."""
    gate_weight: float | None = Field(None, gt=0, le=1000)
    """This suite's weight in the comparison's family (weighted Holm): its share of the
    family-wise error budget is its weight over the sum of every gating suite's weight,
    split evenly over its gating rows. Unset: 1."""
    require: RequireConfig | None = None
    """`[suites.S.require]`: minimum repeats, explicit naming, a label, judge ≠ subject, case
    schemas; each unmet one refuses the run (exit 2) before anything is spent (docs/methodology-bias.md)."""
    metrics: list[MetricConfig] = Field(default_factory=list)
    """`[[suites.S.metrics]]`: suite-level figures (sycophancy, anchoring, pattern_bias,
    verbosity_bias, custom) with numerator, denominator, threshold and flag."""
    contrasts: list[ContrastConfig] = Field(default_factory=list)
    """`[[suites.S.contrasts]]`: named arm differences, paired over cases, with pass rules."""
    shuffle: list[str] = Field(default_factory=list)
    """List fields of the case input permuted per attempt with the run's seed (`input.options`)."""

    def arm_targets(self) -> list[tuple[str, TargetConfig]]:
        if not self.arms:
            return [("default", self.target)]
        return [(a.name, a.target) for a in self.arms]

    def env_needed(self) -> list[str]:
        names = list(self.requires_env)
        for _, t in self.arm_targets():
            names.extend(t.requires_env())
        return sorted(set(names))

    def missing_env(self) -> list[str]:
        return [n for n in self.env_needed() if not os.environ.get(n)]


class Settings(_Strict):
    """The optional `[evalh]` table: defaults for every suite."""

    SNAPSHOT = frozenset({"concurrency", "timeout_s", "seed", "max_cost_usd", "max_tokens"})

    runs_dir: str | None = None
    """Where run documents go, relative to the project root (default `eval_runs`);
    `$EVAL_RUNS_DIR` and `--runs-dir` take precedence."""
    concurrency: int = Field(8, ge=1)
    """Cases in flight at once, per suite."""
    processes: int = Field(1, ge=1)
    """Worker processes per suite (see the suite's `processes`)."""
    timeout_s: float = Field(60.0, gt=0)
    """Per-call timeout of a target, in seconds; a call that takes longer is `errored`."""
    seed: int | None = None
    """Seed of the order shuffle; a random one (recorded in the run) when unset."""
    max_cost_usd: float | None = Field(None, ge=0)
    """Budget: once this many USD are spent no new case starts, and the run is `partial`."""
    max_tokens: int | None = Field(None, ge=0)
    """Budget in tokens (input + output), like `max_cost_usd`."""
    methodology: str | None = None
    """A named preset of every suite's `require` table (`"bias-aware"`): see the suite key."""

    @field_validator("methodology")
    @classmethod
    def _known_methodology(cls, v: str | None) -> str | None:
        from evalh.methodology_spec import METHODOLOGIES

        if v is not None and v not in METHODOLOGIES:
            raise ValueError(f"unknown methodology {v!r} (known: {', '.join(sorted(METHODOLOGIES))})")
        return v
    max_retry_wait_s: float = Field(120.0, gt=0)
    """The longest a request waits for an endpoint's rate limit, in seconds: a `retry-after`
    beyond it makes the requests it would hold `errored` at once, saying so. Waiting for a
    rate limit never counts as the target's latency or against its `timeout_s`."""


class Config(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset({"settings", "prices", "suites"})

    path: Path
    root: Path
    settings: Settings = Field(default_factory=Settings)
    prices: dict[str, Price] = Field(default_factory=dict)
    suites: dict[str, SuiteConfig] = Field(default_factory=dict)

    @field_validator("suites")
    @classmethod
    def _names(cls, v: dict[str, SuiteConfig]) -> dict[str, SuiteConfig]:
        for name, suite in v.items():
            suite.name = name
        return v

    def resolve(self, relpath: str) -> Path:
        p = Path(relpath)
        return p if p.is_absolute() else self.root / p

    def suites_in_order(self) -> list[SuiteConfig]:
        return sorted(self.suites.values(), key=lambda s: (s.tier, s.name))

    def suite(self, name: str) -> SuiteConfig:
        if name not in self.suites:
            known = ", ".join(sorted(self.suites)) or "none"
            raise ConfigError(f"{self.path}: unknown suite {name!r} (known: {known})")
        return self.suites[name]


# --------------------------------------------------------------------------- loading


def _loc(parts: tuple[Any, ...] | list[Any]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + str(p)
    return out


def _fail(path: Path, where: str, exc: ValidationError) -> ConfigError:
    err = exc.errors()[0]
    loc = _loc([where, *err["loc"]] if where else err["loc"])
    extra = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return ConfigError(f"{path}: {loc}: {err['msg']}{extra}")


def _kind_module(path: Path, where: str, load: Any, name: str) -> Any:
    """The module of a registered target kind or scorer type; one that cannot be imported
    (a plugin that exits at import) is bad config, naming the key."""
    from evalh.imports import ImportFailure

    try:
        return load(name)
    except ImportFailure as exc:
        raise ConfigError(f"{path}: {where}: {exc}") from None


def _target(path: Path, where: str, raw: Any) -> TargetConfig:
    if isinstance(raw, str):
        raw = {"kind": "python", "callable": raw}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {where}: expected 'module:function' or a table with `kind`")
    kind = raw.get("kind")
    if kind not in registry.target_kinds():  # built-ins and installed plugins
        known = ", ".join(sorted(registry.target_kinds()))
        raise ConfigError(f"{path}: {where}.kind: unknown target kind {kind!r} (known: {known})")
    model = _kind_module(path, f"{where}.kind", registry.target_module, kind).CONFIGS[kind]
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise _fail(path, where, exc) from None


def _scorer(path: Path, where: str, raw: Any) -> ScorerConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {where}: expected a table with `type`")
    type_ = raw.get("type")
    if type_ not in registry.scorer_types():  # built-ins and installed plugins
        known = ", ".join(sorted(registry.scorer_types()))
        raise ConfigError(f"{path}: {where}.type: unknown scorer type {type_!r} (known: {known})")
    model = _kind_module(path, f"{where}.type", registry.scorer_module, type_).CONFIGS[type_]
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise _fail(path, where, exc) from None


def _suite(path: Path, name: str, raw: Any, methodology: str | None = None) -> SuiteConfig:
    where = f"suites.{name}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {where}: expected a table")
    raw = dict(raw)
    chosen_methodology = raw.get("methodology", methodology)
    if chosen_methodology is not None:  # a named preset of [suites.S.require]
        if not isinstance(chosen_methodology, str):
            raise ConfigError(f"{path}: {where}.methodology: expected a name such as \"bias-aware\"")
        own = raw.get("require")
        if own is not None and not isinstance(own, dict):
            raise ConfigError(f"{path}: {where}.require: expected a table")
        try:
            raw["require"] = apply_methodology(chosen_methodology, own)
        except ValueError as exc:
            raise ConfigError(f"{path}: {where}.{exc}") from None
    if "target" not in raw:  # arms replace the target: the baseline arm's stands for the suite
        arm_list = raw.get("arms")
        named = [a for a in arm_list if isinstance(a, dict) and "target" in a] if isinstance(arm_list, list) else []
        if not named:
            raise ConfigError(f"{path}: {where}.target: missing (give `target`, or `arms`)")
        chosen = [a for a in named if a.get("name") == raw.get("baseline_arm")] or named
        raw["target"] = chosen[0]["target"]
    raw["target"] = _target(path, f"{where}.target", raw["target"])
    for key in ("scorers", "arms"):  # a string or a table here would be iterated as one
        if not isinstance(raw.get(key, []), list):
            raise ConfigError(f"{path}: {where}.{key}: expected a list of tables")
    raw["scorers"] = [
        _scorer(path, f"{where}.scorers[{i}]", s) for i, s in enumerate(raw.get("scorers", []))
    ]
    arms = []
    for i, a in enumerate(raw.get("arms", [])):
        if not isinstance(a, dict) or "target" not in a:
            raise ConfigError(f"{path}: {where}.arms[{i}]: expected a table with `name` and `target`")
        a = dict(a)
        a["target"] = _target(path, f"{where}.arms[{i}].target", a["target"])
        arms.append(a)
    raw["arms"] = arms
    try:
        suite = SuiteConfig.model_validate({**raw, "name": name})
    except ValidationError as exc:
        raise _fail(path, where, exc) from None
    names = [a.name for a in suite.arms]
    if len(set(names)) != len(names):
        raise ConfigError(f"{path}: {where}.arms: arm names must be unique")
    if suite.baseline_arm and suite.baseline_arm not in (names or ["default"]):
        raise ConfigError(f"{path}: {where}.baseline_arm: no arm named {suite.baseline_arm!r}")
    scorer_names = [s.display_name for s in suite.scorers]
    problem = check_suite_methodology(suite, names or ["default"], scorer_names)
    if problem:
        raise ConfigError(f"{path}: {where}.{problem}")
    for i, gated in enumerate(suite.gate_scores):
        if gated not in scorer_names:
            known = ", ".join(repr(n) for n in scorer_names) or "none"
            raise ConfigError(
                f"{path}: {where}.gate_scores[{i}]: no scorer named {gated!r} (scorers: {known})"
            )
    return suite


def load_config(path: Path | str | None = None, *, check_datasets: bool = True) -> Config:
    """Read and validate evalh.toml. Raises ConfigError with a one-line message."""
    cfg_path = Path(path) if path is not None else find_config()
    if not cfg_path.is_file():
        raise ConfigError(f"{cfg_path}: config file not found")
    from evalh.toml_input import read_toml

    raw = read_toml(cfg_path)  # one line naming the line or the key, whatever is wrong
    from evalh.redact import register_config_secrets

    register_config_secrets(raw)  # before any call: every writer scrubs what it sends
    known = {"evalh", "prices", "suites"}
    for key in raw:
        if key not in known:
            raise ConfigError(f"{cfg_path}: {key}: unknown top-level table")
    suites_raw = raw.get("suites", {})
    if not isinstance(suites_raw, dict):
        raise ConfigError(f"{cfg_path}: suites: expected a table of suites")
    try:
        settings = Settings.model_validate(raw.get("evalh", {}))
    except ValidationError as exc:
        raise _fail(cfg_path, "evalh", exc) from None
    suites = {name: _suite(cfg_path, name, s, settings.methodology) for name, s in suites_raw.items()}
    prices: dict[str, Price] = {}
    if not isinstance(raw.get("prices", {}), dict):
        raise ConfigError(f"{cfg_path}: prices: expected a table of models")
    for model, p in raw.get("prices", {}).items():
        try:
            prices[model] = Price.model_validate(p)
        except ValidationError as exc:
            raise _fail(cfg_path, f"prices.{model}", exc) from None
    config = Config(
        path=cfg_path,
        root=cfg_path.resolve().parent,
        settings=settings,
        prices=prices,
        suites=suites,
    )
    for suite in suites.values():
        if not suite.dataset and suite.generate is None:
            raise ConfigError(f"{cfg_path}: suites.{suite.name}.dataset: missing (give `dataset`, or a `generate` table)")
    if check_datasets:
        for suite in suites.values():
            if suite.generate is not None and suite.generate.corpus and not config.resolve(suite.generate.corpus).exists():
                raise ConfigError(f"{cfg_path}: suites.{suite.name}.generate.corpus: not found: {suite.generate.corpus}")
            if not suite.dataset and suite.generate is not None:
                continue
            if not config.resolve(suite.dataset).is_file():
                raise ConfigError(
                    f"{cfg_path}: suites.{suite.name}.dataset: file not found: {suite.dataset}"
                )
    return config
