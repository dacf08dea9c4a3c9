"""The sweep's specification: `[suites.S.sweep]` in evalh.toml, command-line overrides, grids.

See `evalh.core.analysis.sweep` for what a sweep does with it. Grid syntax, in evalh.toml or as
`--grid NAME=SPEC`: `start:stop:step` (inclusive, computed in decimal so `0.3:0.9:0.1` is
exact), `start:stop` (step 1), `a,b,c`, one number, or (TOML) a list of numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evalh.errors import EvalhError, first_validation_error

MAX_CANDIDATES = 20_000
Scalar = str | bool | int | float
GridSpec = str | int | float | list[int | float]


class SweepError(EvalhError):
    """A sweep that cannot be set up: bad grid, unknown measure, label outside the vocabulary."""


class SweepConfig(BaseModel):
    """`[suites.S.sweep]`: the policy family, its grid and the current policy (all optional)."""

    model_config = ConfigDict(extra="forbid")
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset(
        {"measure", "label", "positive", "tiers", "otherwise", "count_value", "verdict_key",
         "grid", "current", "objective", "tie_break", "errored", "arm"}
    )

    measure: str = "score"
    """`score`, `scorer:NAME`, `output:PATH` or `count:PATH` (see the module doc)."""
    label: str | None = None
    """Dotted path to the policy-free label in each case's `expected` (whole value when unset)."""
    positive: Scalar | None = None
    """Binary policies: the label value of the positive class. The parameter is `threshold`."""
    tiers: list[str] = Field(default_factory=list)
    """Tier policies: decisions from most to least severe; each is a parameter."""
    otherwise: str | None = None
    """Tier policies: the decision when no tier fires."""
    count_value: Scalar | None = None
    """For `count:PATH`: the verdict counted (for a refuter panel: `refuted`)."""
    verdict_key: str = "verdict"
    """For `count:PATH`: the key holding a verdict when an entry is a table."""
    grid: dict[str, GridSpec] = Field(default_factory=dict)
    """Parameter → values: `"0.3:0.9:0.1"` (inclusive range), `"1:5"` (step 1), or a list."""
    current: dict[str, float] = Field(default_factory=dict)
    """The policy in use. Only marked in the results, never favoured."""
    objective: Literal["accuracy", "balanced_accuracy"] = "accuracy"
    """What ranks candidates. Equal objective values tie: no recommendation, unless `tie_break` is set."""
    tie_break: Literal["fewer_under_calls"] | None = None
    """A secondary criterion, used only when declared: among candidates equal on the objective,
    fewer under-calls (decisions milder than the label) wins, and the verdict names it as the reason."""
    errored: Literal["exclude", "miss"] = "exclude"
    """A result whose measure rests on a failed call (an errored lens verdict, a judge error, a
    failed target): `exclude` leaves it out of every candidate's score (counted and reported);
    `miss` counts it as a wrong decision for every candidate. Never read as a survive."""
    arm: str | None = None
    """The arm whose results are swept (default: the suite's baseline arm)."""

    @model_validator(mode="after")
    def _shape(self) -> SweepConfig:
        if (self.positive is None) == (not self.tiers):
            raise ValueError("set exactly one of `positive` (binary policy) or `tiers` (tier policy)")
        if self.tiers and not self.otherwise:
            raise ValueError("a tier policy needs `otherwise` (the decision when no tier fires)")
        if self.tiers and len(set(self.tiers) | {self.otherwise}) != len(self.tiers) + 1:
            raise ValueError("`tiers` and `otherwise` must be distinct decisions")
        kind, _, arg = self.measure.partition(":")
        if kind not in ("score", "scorer", "output", "count") or (kind == "score") != (self.measure == "score"):
            raise ValueError(f"measure {self.measure!r}: use score, scorer:NAME, output:PATH or count:PATH")
        if kind == "scorer" and not arg:
            raise ValueError("measure scorer:NAME needs a scorer name")
        if kind == "count" and self.count_value is None:
            raise ValueError("measure count:PATH needs `count_value` (the verdict to count)")
        unknown = sorted(set(self.grid) - set(self.params) | set(self.current) - set(self.params))
        if unknown:
            raise ValueError(f"unknown parameter(s) {', '.join(unknown)} (known: {', '.join(self.params)})")
        return self

    @property
    def params(self) -> list[str]:
        """Parameter names, most severe first."""
        return list(self.tiers) if self.tiers else ["threshold"]

    @property
    def decisions(self) -> list[str]:
        """Every decision, most severe first."""
        if self.tiers:
            return [*self.tiers, str(self.otherwise)]
        return [value_name(self.positive), f"not {value_name(self.positive)}"]


def resolve_spec(base: Mapping[str, Any] | None, overrides: Mapping[str, Any]) -> SweepConfig:
    """The sweep spec: a config table overlaid with command-line values (None = not given)."""
    merged = dict(base or {})
    merged.update({k: v for k, v in overrides.items() if v is not None})
    if overrides.get("tiers"):
        merged.pop("positive", None)
    elif overrides.get("positive") is not None:
        merged.pop("tiers", None)
        merged.pop("otherwise", None)
    try:
        return SweepConfig.model_validate(merged)
    except ValidationError as exc:
        where, msg = first_validation_error(exc)
        raise SweepError(f"sweep: {where + ': ' if where else ''}{msg.removeprefix('Value error, ')}") from None


# --------------------------------------------------------------------------- grids


def value_name(value: Any) -> str:
    """A label or parameter value as shown and keyed (`true`/`false` for booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _number(text: str, where: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise SweepError(f"grid {where}: {text.strip()!r} is not a number") from None
    if not value.is_finite():
        raise SweepError(f"grid {where}: {text.strip()!r} is not a finite number")
    return value


def plain_number(value: Decimal | float) -> float | int:
    """A grid value as JSON shows it: an int when it is whole (`0.5`, `3`)."""
    f = float(value)
    return int(f) if f.is_integer() else f


def grid_values(name: str, spec: GridSpec) -> list[float | int]:
    """Values of one grid parameter: `start:stop[:step]` (inclusive), `a,b,c`, a number or a list.

    Ranges are computed in decimal, so `0.3:0.9:0.1` gives exactly 0.3 … 0.9.
    """
    if isinstance(spec, bool):
        raise SweepError(f"grid {name}: expected numbers, got {spec!r}")
    if isinstance(spec, int | float):
        return [plain_number(Decimal(str(spec)))]
    if isinstance(spec, list):
        return sorted({plain_number(_number(str(v), name)) for v in spec})
    if ":" in spec:
        parts = spec.split(":")
        if len(parts) not in (2, 3):
            raise SweepError(f"grid {name}: {spec!r}: use start:stop or start:stop:step")
        start, stop = _number(parts[0], name), _number(parts[1], name)
        step = _number(parts[2], name) if len(parts) == 3 else Decimal(1)
        if step <= 0 or stop < start:
            raise SweepError(f"grid {name}: {spec!r}: need start <= stop and a positive step")
        count = int((stop - start) / step) + 1
        if count > MAX_CANDIDATES:
            raise SweepError(f"grid {name}: {spec!r} has {count} values (at most {MAX_CANDIDATES})")
        return [plain_number(start + i * step) for i in range(count)]
    return sorted({plain_number(_number(v, name)) for v in spec.split(",") if v.strip()})


def parse_grid_option(text: str) -> tuple[str, str]:
    """`NAME=SPEC` from the command line."""
    name, sep, spec = text.partition("=")
    if not sep or not name.strip() or not spec.strip():
        raise SweepError(f"--grid {text!r}: use NAME=start:stop[:step] or NAME=v1,v2,…")
    return name.strip(), spec.strip()


def parse_current_option(texts: Sequence[str]) -> dict[str, float]:
    """`NAME=V[,NAME=V…]` (repeatable) from the command line."""
    out: dict[str, float] = {}
    for text in texts:
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, sep, value = part.partition("=")
            if not sep:
                raise SweepError(f"--current {text!r}: use NAME=VALUE[,NAME=VALUE…]")
            out[name.strip()] = plain_number(_number(value, f"--current {name.strip()}"))
    return out
