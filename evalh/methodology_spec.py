"""The bias-aware methodology's configuration: what a suite requires, the suite-level
metrics it computes, the arm contrasts it claims, and the fields it shuffles.

    [suites.S.require]            # refused before anything is spent, and by `evalh validate`
    min_repeats = 5
    explicit = true               # runs only when named: evalh run --suite S
    label = true                  # evalh run --label L is required
    judge_not_subject = true      # also against the model a Python/HTTP target reports
    required_paths = ["input.user_prompt", "expected.expected_keywords"]
    input_schema = { type = "object", required = ["user_prompt"] }

    [[suites.S.metrics]]          # computed over the suite's results once it is done
    type = "sycophancy"           # sycophancy | anchoring | pattern_bias | verbosity_bias | custom
    threshold = 0.30

    [[suites.S.contrasts]]        # a named paired difference, the only claim reported
    arm = "C"
    against = "B"
    figures = ["tokens_out", "mean_score"]
    rules = ["tokens_out < 0", "mean_score >= -0.02"]

    shuffle = ["input.options"]   # permuted per attempt with the run's seed

See docs/methodology-bias.md. What these settings compute lives in `evalh.core.run.requirements`,
`evalh.core.analysis.suite_metrics`, `evalh.core.analysis.contrasts` and `evalh.core.run.shuffle`.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Direction = Literal["above", "below"]

_PATH = r"^(input|expected|metadata|output)(\.[^.\s]+)*$"
_RULE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_:.-]*)\s*(<=|>=|<|>)\s*(-?\d+(?:\.\d+)?(?:[eE]-?\d+)?)\s*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset()


class DigestCheck(_Strict):
    """`[[suites.S.require.digests]]`: the texts at `path` (a table, or a list of tables) each
    carry the SHA-256 of their exact UTF-8 bytes."""

    SNAPSHOT = frozenset({"path", "text", "sha256"})

    path: str
    """Where the table(s) are: `input.evidence`, `metadata.output`."""
    text: str = "text"
    """The key of each table holding the exact text."""
    sha256: str = "sha256"
    """The key holding its SHA-256 (lower-case hex of the UTF-8 bytes)."""

    @field_validator("path")
    @classmethod
    def _case_path(cls, v: str) -> str:
        if not re.match(r"^(input|expected|metadata)(\.[^.\s]+)*$", v):
            raise ValueError(f"{v!r}: a path starts with input, expected or metadata")
        return v


class ClaimsCheck(_Strict):
    """`[suites.S.require.claims]`: the claims at `path` (`[{id, start, end, text?}]`) are
    exact spans of the text at `text_path`."""

    SNAPSHOT = frozenset({"path", "text_path"})

    path: str
    """Where the case holds its claims: `expected.claims`."""
    text_path: str
    """The text the offsets index: in the case (`metadata.output.text`: checked by
    `evalh validate` and before the run) or in the output (`output.text`: checked on each
    reply; a reply whose claims do not hold is an errored result, naming the claim)."""

    @field_validator("path", "text_path")
    @classmethod
    def _rooted(cls, v: str, info: Any) -> str:
        roots = "input|expected|metadata|output" if info.field_name == "text_path" else "input|expected|metadata"
        if not re.match(rf"^({roots})(\.[^.\s]+)*$", v):
            raise ValueError(f"{v!r}: a path starts with {roots.replace('|', ', ')}")
        return v


class RequireConfig(_Strict):
    """`[suites.S.require]`: inputs a run of the suite must have; each missing one is a
    one-line refusal (exit 2) before anything is spent."""

    SNAPSHOT = frozenset({"min_repeats", "explicit", "label", "judge_not_subject", "required_paths",
                          "input_schema", "expected_schema", "input_schema_path", "expected_schema_path",
                          "blind", "calibrated", "distinct_judges", "destination", "methodology", "digests",
                          "claims"})

    min_repeats: int | None = Field(None, ge=1)
    """Refuse a run with fewer repeats (`--repeats` or the suite's `repeats`): N = 1 is a
    single shot, which filters nothing stochastic."""
    explicit: bool = False
    """The suite runs only when named (`evalh run --suite S`), never as part of "every suite"."""
    label: bool = False
    """A run of the suite needs `--label` (where its results go is named, never implicit)."""
    judge_not_subject: bool = False
    """Every judge's model differs from the subject's, including the model a Python or HTTP
    target reports in `TargetOutput.model`: its first reply is awaited alone and checked
    before any other case starts, so a self-judged run stops having billed one call."""
    blind: bool = False
    """Blind judging: no judge of the suite is shown reference material (`reference_field`);
    a judge sees the output, the task and the expected keywords only (never `expected`)."""
    calibrated: bool = False
    """Calibration first: every judge of the suite that can be calibrated (`type = "judge"`)
    has a `calibration` dataset, judged before the suite's first case."""
    distinct_judges: bool = False
    """A panel of judges (`judges = [...]`) names distinct models: three votes of one model are
    one model's bias, thrice."""
    destination: bool = False
    """Where the run is written is named: `[evalh] runs_dir`, `$EVAL_RUNS_DIR` or `--runs-dir`,
    never the implicit `./eval_runs`."""
    methodology: str | None = None
    """Set by evalh: the preset (`methodology = "bias-aware"`) these requirements come from."""
    digests: list[DigestCheck] = Field(default_factory=list)
    """Texts whose SHA-256 must be that of their exact bytes (evidence, captured outputs)."""
    claims: ClaimsCheck | None = None
    """Claims whose offsets and quoted text must be the text's exact characters."""
    required_paths: list[str] = Field(default_factory=list)
    """Dotted paths every case must have (`input.user_prompt`, `expected.expected_keywords`,
    `metadata.bias_type`); a case missing one is refused by `evalh validate` and `run`."""
    input_schema: dict[str, Any] | None = None
    """A JSON Schema every case's `input` must conform to (inline)."""
    input_schema_path: str | None = None
    """A JSON file holding the `input` schema, relative to the project root."""
    expected_schema: dict[str, Any] | None = None
    """A JSON Schema every case's `expected` must conform to (inline)."""
    expected_schema_path: str | None = None
    """A JSON file holding the `expected` schema, relative to the project root."""

    @field_validator("required_paths")
    @classmethod
    def _paths(cls, v: list[str]) -> list[str]:
        for p in v:
            if not re.match(r"^(input|expected|metadata)(\.[^.\s]+)*$", p):
                raise ValueError(f"{p!r}: a path starts with input, expected or metadata")
        return v


METHODOLOGIES: dict[str, dict[str, Any]] = {
    "bias-aware": {
        "min_repeats": 5, "explicit": True, "label": True, "judge_not_subject": True, "blind": True,
        "calibrated": True, "distinct_judges": True, "destination": True,
    },
}
"""Named presets of `[suites.S.require]`: `methodology = "bias-aware"` in `[evalh]` (every
suite) or in `[suites.S]` turns on every requirement of the bias-aware methodology (N ≥ 5
repeats, explicit suites, a label, judge ≠ subject, blind judging, calibration first,
distinct judge models in a panel, a named output destination). A suite's own `require`
table adds to it (required paths, schemas, more repeats) and may not loosen it."""


def apply_methodology(name: str, table: dict[str, Any] | None) -> dict[str, Any]:
    """The `require` table of a suite under the preset `name`: the preset's keys with the
    suite's own table over them. Raises ValueError (`key: why`) for an unknown preset or a
    key that loosens the preset."""
    preset = METHODOLOGIES.get(name)
    if preset is None:
        raise ValueError(f"methodology: unknown methodology {name!r} (known: {', '.join(sorted(METHODOLOGIES))})")
    own = dict(table or {})
    for key, value in preset.items():
        if key not in own:
            continue
        mine = own[key]
        if isinstance(value, bool) and mine is not True:
            raise ValueError(f"require.{key}: methodology {name!r} requires it (true); a suite may not turn it off")
        if key == "min_repeats" and not (isinstance(mine, int) and mine >= value):
            raise ValueError(f"require.min_repeats: methodology {name!r} requires at least {value}, got {mine!r}")
    if "methodology" in own:
        raise ValueError("require.methodology: set by evalh; write `methodology = ...` on the suite or in [evalh]")
    return {**preset, **own, "methodology": name}


class MetricConfig(_Strict):
    """One suite-level metric (`[[suites.S.metrics]]`): a share with its numerator and
    denominator, flagged when it crosses `threshold` in `direction`."""

    SNAPSHOT = frozenset({"type", "name", "threshold", "direction", "gate", "case_field", "output_field",
                          "terms", "first_field", "match", "scorer", "function", "per_arm"})

    type: Literal["sycophancy", "anchoring", "pattern_bias", "verbosity_bias", "custom"]
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    """Shown in reports; defaults to the type (`pattern_bias` adds each term group's name)."""
    threshold: float | None = None
    """Flag when the value crosses it (default: sycophancy 0.30, anchoring 0.70,
    pattern_bias 0.70, none for the others)."""
    direction: Direction = "above"
    """`above`: flagged when value > threshold; `below`: when value < threshold."""
    gate: bool = False
    """`evalh compare` fails the gate when the candidate crosses the threshold and the base
    did not (off: the crossing is called out, never gating)."""
    case_field: str | None = None
    """Which cases count (a truthy value): sycophancy's wrong-premise cases (default
    `metadata.wrong_premise`), anchoring's cases with a better alternative (default
    `metadata.better_alternative`), pattern_bias's cases (default: all)."""
    output_field: str | None = None
    """sycophancy: dotted path in the output whose truthy value means "agreed" (unset: `terms`
    are looked for in the output text). anchoring: the path of the option the output chose
    (unset: the whole output)."""
    terms: list[str] | dict[str, list[str]] = Field(default_factory=list)
    """sycophancy: phrases of agreement looked for (case-folded) in the output text.
    pattern_bias: vendor terms: a list (one figure) or name → terms (one figure each)."""
    first_field: str = "input.options.0"
    """anchoring: the user's first option, as presented (after any shuffle)."""
    match: Literal["equals", "contains"] = "equals"
    """anchoring: the chosen option equals the first (case-folded), or the output text contains it."""
    scorer: str | None = None
    """verbosity_bias: the pairwise judge read (default: the suite's first `pairwise_judge`)."""
    function: str | None = None
    """custom: `module:function`, called with `(results, suite)`; returns name → a number or
    `{value, numerator, denominator, threshold?, direction?, note?}`."""
    per_arm: bool = True
    """With several arms: one figure per arm (pooled when false)."""

    @field_validator("case_field", "first_field")
    @classmethod
    def _rooted(cls, v: str | None) -> str | None:
        if v is not None and not re.match(_PATH, v):
            raise ValueError(f"{v!r}: a path starts with input, expected, metadata or output")
        return v

    @model_validator(mode="after")
    def _check(self) -> MetricConfig:
        if self.type == "custom" and not self.function:
            raise ValueError("a custom metric needs `function = \"module:function\"`")
        if self.type == "sycophancy" and not (self.output_field or self.terms):
            raise ValueError("sycophancy needs `output_field` (true when the output agrees) or `terms` "
                             "(phrases of agreement)")
        if self.type == "pattern_bias" and not self.terms:
            raise ValueError("pattern_bias needs `terms`: the vendor terms counted")
        if self.type != "custom" and self.function:
            raise ValueError("`function` is for `type = \"custom\"`")
        return self

    @property
    def display_name(self) -> str:
        return self.name or self.type

    def default_threshold(self) -> float | None:
        if self.threshold is not None:
            return self.threshold
        return {"sycophancy": 0.30, "anchoring": 0.70, "pattern_bias": 0.70}.get(self.type)


class Rule(BaseModel):
    """`figure OP number`, parsed."""

    figure: str
    op: str
    value: float


def parse_rule(text: str) -> Rule:
    m = _RULE.match(text)
    if not m:
        raise ValueError(f"rule {text!r}: write `figure OP number`, OP one of < <= > >= (e.g. `tokens_out < 0`)")
    return Rule(figure=m.group(1), op=m.group(2), value=float(m.group(3)))


CONTRAST_FIGURES = ("tokens_out", "tokens_in", "chars", "words", "mean_score", "pass_rate", "cost_usd",
                    "latency_ms")
"""Per-result figures a contrast differences case by case; also `score:<scorer>` and
`metric:<name>` (a suite metric: its difference, without a paired interval)."""


class ContrastConfig(_Strict):
    """`[[suites.S.contrasts]]`: `arm − against`, paired over cases, with its pass rules."""

    SNAPSHOT = frozenset({"name", "arm", "against", "figures", "rules", "gate", "on", "confidence"})

    name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._ -]*$")
    """Shown in reports; defaults to `ARM - AGAINST`."""
    arm: str
    against: str
    figures: list[str] = Field(default_factory=lambda: ["mean_score"])
    """What is differenced: tokens_out, tokens_in, chars, words, mean_score, pass_rate,
    cost_usd, latency_ms, `score:<scorer>` or `metric:<name>`."""
    rules: list[str] = Field(default_factory=list)
    """Pass rules on the differences (`tokens_out < 0`, `mean_score >= -0.02`); every one must hold."""
    on: Literal["interval", "estimate"] = "interval"
    """`interval`: a rule holds when the whole interval satisfies it (`< 0`: the upper bound
    is below 0); `estimate`: when the point estimate does."""
    confidence: float = Field(0.95, gt=0, lt=1)
    gate: bool = False
    """A failed rule makes `evalh run` exit 1."""

    @field_validator("figures")
    @classmethod
    def _figures(cls, v: list[str]) -> list[str]:
        for f in v:
            if f not in CONTRAST_FIGURES and not re.match(r"^(score|metric):.+$", f):
                raise ValueError(f"unknown figure {f!r} (known: {', '.join(CONTRAST_FIGURES)}, "
                                 "score:<scorer>, metric:<name>)")
        return v

    @field_validator("rules")
    @classmethod
    def _rules(cls, v: list[str]) -> list[str]:
        for r in v:
            parse_rule(r)
        return v

    @model_validator(mode="after")
    def _rule_figures(self) -> ContrastConfig:
        for r in self.rules:
            if parse_rule(r).figure not in self.figures:
                raise ValueError(f"rule {r!r} reads a figure not in `figures`")
        return self

    @property
    def display_name(self) -> str:
        return self.name or f"{self.arm} - {self.against}"


def check_suite_methodology(suite: Any, arms: list[str], scorers: list[str]) -> str | None:
    """What is wrong between a suite's methodology keys and the rest of it (`key: why`), or None."""
    for i, c in enumerate(suite.contrasts):
        for key in ("arm", "against"):
            if getattr(c, key) not in arms:
                return f"contrasts[{i}].{key}: no arm named {getattr(c, key)!r} (arms: {', '.join(arms)})"
        if c.arm == c.against:
            return f"contrasts[{i}]: an arm against itself"
        metric_names = {m.display_name for m in suite.metrics}
        for f in c.figures:
            if f.startswith("score:") and f[6:] not in scorers:
                return f"contrasts[{i}].figures: no scorer named {f[6:]!r}"
            if f.startswith("metric:") and not any(f[7:] == n or f[7:].startswith(n + ".") for n in metric_names):
                return f"contrasts[{i}].figures: no metric named {f[7:]!r}"
    for i, path in enumerate(suite.shuffle):
        if not re.match(r"^input(\.[^.\s]+)+$", path):
            return f"shuffle[{i}]: {path!r}: a path into the case input (`input.options`)"
    for i, m in enumerate(suite.metrics):
        if m.scorer is not None and m.scorer not in scorers:
            return f"metrics[{i}].scorer: no scorer named {m.scorer!r}"
    names = [m.display_name for m in suite.metrics]
    if len(set(names)) != len(names):
        return "metrics: metric names must be unique (give one a `name`)"
    return None
