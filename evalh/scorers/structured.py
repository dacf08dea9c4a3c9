"""Structured scorers: JSON-equal on a field, numeric within tolerance, JSON-schema conformance."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import model_validator

from evalh.fields import short
from evalh.models import Case, Score
from evalh.scorers.base import DeterministicScorer, ScorerConfig

_FIELDS = frozenset({"type", "name", "field", "expected_field"})


class _Base(ScorerConfig):
    field: str | None = None
    """Dotted path into the output (JSON text is parsed first); whole output when unset."""
    expected_field: str | None = None
    """Dotted path into the case's `expected`; whole value when unset."""


class JsonEqualConfig(_Base):
    """Structural equality of parsed JSON (key order and whitespace do not matter)."""

    SNAPSHOT = _FIELDS
    type: Literal["json_equal"]


class NumericConfig(_Base):
    """|actual − expected| ≤ max(abs_tol, rel_tol × |expected|)."""

    SNAPSHOT = _FIELDS | {"abs_tol", "rel_tol"}
    type: Literal["numeric"]
    abs_tol: float = 0.0
    """Absolute tolerance."""
    rel_tol: float = 0.0
    """Tolerance relative to |expected| (0.01 = 1 %)."""


class JsonSchemaConfig(_Base):
    """The output (or output[field]) conforms to a JSON Schema given inline or by file."""

    SNAPSHOT = _FIELDS | {"schema_path"}
    type: Literal["json_schema"]
    json_schema: dict[str, Any] | None = None
    """The schema, inline (a TOML table)."""
    schema_path: str | None = None
    """A JSON file holding the schema, relative to the project root."""

    @model_validator(mode="after")
    def _one_schema(self) -> JsonSchemaConfig:
        if (self.json_schema is None) == (self.schema_path is None):
            raise ValueError("give exactly one of `json_schema` (inline) or `schema_path`")
        if self.json_schema is not None:
            _check_schema(self.json_schema, "json_schema")
        return self


def _check_schema(schema: Any, where: str) -> None:
    """Refuse an invalid JSON Schema as a ValueError (jsonschema's SchemaError is not one,
    so it would escape config validation as a traceback instead of a line naming the key)."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"{where}: not a valid JSON Schema: {exc.message}") from None


CONFIGS: dict[str, type[ScorerConfig]] = {
    "json_equal": JsonEqualConfig,
    "numeric": NumericConfig,
    "json_schema": JsonSchemaConfig,
}


def _parsed(value: Any) -> Any:
    if isinstance(value, str | bytes):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


class JsonEqualScorer(DeterministicScorer):
    config: JsonEqualConfig

    def check(self, case: Case, output: Any) -> Score:
        ops = self._operands(case, output)
        if isinstance(ops, Score):
            return ops
        a, e = (_parsed(v) for v in ops)
        ok = a == e
        why = "equal" if ok else f"got {short(a)}, expected {short(e)}"
        return self._score(value=1.0 if ok else 0.0, passed=ok, rationale=why)


class NumericScorer(DeterministicScorer):
    config: NumericConfig

    def check(self, case: Case, output: Any) -> Score:
        ops = self._operands(case, output)
        if isinstance(ops, Score):
            return ops
        try:
            a, e = float(ops[0]), float(ops[1])
        except (TypeError, ValueError):
            return self._score(value=0.0, passed=False, rationale=f"not a number: {short(ops[0])}")
        if math.isnan(a) or math.isnan(e):
            return self._score(value=0.0, passed=False, rationale="NaN is never within tolerance")
        tol = max(self.config.abs_tol, self.config.rel_tol * abs(e))
        ok = abs(a - e) <= tol
        why = f"|{a:g} − {e:g}| = {abs(a - e):g} {'≤' if ok else '>'} {tol:g}"
        return self._score(value=1.0 if ok else 0.0, passed=ok, rationale=why)


class JsonSchemaScorer(DeterministicScorer):
    config: JsonSchemaConfig

    def __init__(self, config: JsonSchemaConfig, root: Path | None = None) -> None:
        super().__init__(config)
        from jsonschema.validators import validator_for

        schema = config.json_schema
        if schema is None:
            assert config.schema_path is not None
            path = Path(config.schema_path)
            if root is not None and not path.is_absolute():
                path = root / path
            schema = orjson.loads(path.read_bytes())
            # checked here, at build time, so `evalh validate` catches it, not every case
            _check_schema(schema, config.schema_path)
        self._validator = validator_for(schema)(schema)

    def check(self, case: Case, output: Any) -> Score:
        actual = self._actual(output)
        if isinstance(actual, Score):
            return actual
        errors = sorted(self._validator.iter_errors(_parsed(actual)), key=lambda e: list(e.path))
        if not errors:
            return self._score(value=1.0, passed=True, rationale="conforms to the schema")
        first = errors[0]
        where = "/".join(str(p) for p in first.path) or "(root)"
        return self._score(
            value=0.0, passed=False,
            rationale=f"{len(errors)} schema error(s); first at {where}: {first.message}",
        )


def build(config: ScorerConfig, root: Path | None = None) -> DeterministicScorer:
    if isinstance(config, JsonSchemaConfig):
        return JsonSchemaScorer(config, root)
    return {"json_equal": JsonEqualScorer, "numeric": NumericScorer}[config.type](config)
