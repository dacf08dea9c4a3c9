"""The rating scheme a rubric declares: what a rater rates, and with which values.

A rubric is any text file. Plain text (markdown, …) is one free per-request `label` — any
JSON scalar, null an abstention. A rubric ending in `.toml` declares its scheme as data::

    text = "What raters read: the instructions."

    [fields.label]                          # per-request fields
    values = ["defect", "ok"]
    allow_null = true                       # "cannot tell" is allowed

    [claims]                                # claims: spans of the output, rated one by one
    path = "output.claims"                  # where the result holds them: [{id, start, end}]
    text_path = "output.text"               # the text their offsets index (exact offsets)
    [claims.fields.truth]
    values = ["true", "false", "unsupported"]
    [claims.fields.grounding]
    values = ["supported", "unsupported", "unknown"]

    [dimensions.repetition]                 # quality dimensions of the whole request
    values = [true, false]
    polarity = "adverse"                    # a high rate of `true` is bad
    allow_null = true

    [kinds.answer]                          # optional: request kinds (case metadata.rating_kind)
    fields = ["label"]
    claims = true
    dimensions = []

    [[rates]]                               # work-item error rates (one trial per work item)
    name = "any_false_claim"
    claim_field = "truth"
    positive = "false"                      # a work item with any such claim is an error
    unsettled = ["unsupported"]             # cannot establish that an item has no error

Truth and grounding are separate fields of a claim, never one verdict. A field's `scale`
is `nominal` (default) or `ordinal` (its `values` are in order). The rubric digest is the
SHA-256 of the file's bytes: the same for humans and for a judge reading the same file.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field
from typing import Any, Literal

from evalh.labels.models import Label, LabelError, ScrubbedCase, label_key

ITEM_REQUEST = "request"
DEFAULT_KIND = "default"


@dataclass(frozen=True)
class FieldSpec:
    name: str
    values: tuple[Label, ...] | None
    """The vocabulary, or None for any JSON scalar."""
    allow_null: bool = True
    scale: Literal["nominal", "ordinal"] = "nominal"
    polarity: Literal["higher-is-better", "adverse", "neutral"] = "neutral"

    def check(self, value: Any) -> str | None:
        """Why `value` is not allowed, or None."""
        if value is None:
            return None if self.allow_null else "null (cannot tell) is not allowed for this field"
        if not isinstance(value, str | bool | int | float):
            return "a label must be a JSON scalar"
        if self.values is not None and label_key(value) not in {label_key(v) for v in self.values}:
            shown = ", ".join(_show(v) for v in self.values)
            return f"{_show(value)} is not one of {shown}"
        return None

    def public(self) -> dict[str, Any]:
        return {"values": list(self.values) if self.values is not None else None,
                "allow_null": self.allow_null, "scale": self.scale, "polarity": self.polarity}


@dataclass(frozen=True)
class RateSpec:
    name: str
    positive: str
    claim_field: str | None = None
    field: str | None = None
    dimension: str | None = None
    unsettled: tuple[str, ...] = ()

    def public(self) -> dict[str, Any]:
        return {"name": self.name, "positive": self.positive, "claim_field": self.claim_field,
                "field": self.field, "dimension": self.dimension, "unsettled": list(self.unsettled)}


@dataclass(frozen=True)
class Kind:
    name: str
    fields: tuple[str, ...]
    claims: bool
    dimensions: tuple[str, ...]


BINDS = ("content", "attempt")
"""What a rubric's ratings bind to (`bind = ...` in a TOML rubric)."""


@dataclass
class Rubric:
    sha256: str
    text: str
    fields: dict[str, FieldSpec]
    claim_fields: dict[str, FieldSpec] = field(default_factory=dict)
    claims_path: str | None = None
    claims_text_path: str | None = None
    dimensions: dict[str, FieldSpec] = field(default_factory=dict)
    kinds: dict[str, Kind] = field(default_factory=dict)
    rates: list[RateSpec] = field(default_factory=list)
    structured: bool = False
    bind: str = "content"
    """What a rating binds to: `content` (default: every request whose blinded content is
    byte-identical shares its ratings, across attempts and re-runs) or `attempt` (each
    captured attempt is rated on its own: identical repeated outputs may get different
    labels; a re-run keeps a rating only for the same suite, case, arm and attempt)."""

    def kind_of(self, metadata: dict[str, Any]) -> Kind:
        """The kind a case is rated as (`metadata.rating_kind`); LabelError when unknown."""
        name = metadata.get("rating_kind")
        if name is None:
            if len(self.kinds) == 1:
                return next(iter(self.kinds.values()))
            if DEFAULT_KIND in self.kinds:
                return self.kinds[DEFAULT_KIND]
            raise LabelError(f"the rubric declares kinds {', '.join(sorted(self.kinds))}: "
                             "a case needs metadata.rating_kind naming one")
        if name not in self.kinds:
            raise LabelError(f"metadata.rating_kind {name!r} is not a kind of the rubric "
                             f"(it has: {', '.join(sorted(self.kinds))})")
        return self.kinds[name]

    def scheme(self) -> dict[str, Any]:
        """The scheme as raters see it (no hidden labels: only names, vocabularies, kinds)."""
        return {
            "fields": {k: f.public() for k, f in self.fields.items()},
            "claims": ({"fields": {k: f.public() for k, f in self.claim_fields.items()}}
                       if self.claim_fields else None),
            "dimensions": {k: f.public() for k, f in self.dimensions.items()},
            "kinds": {k.name: {"fields": list(k.fields), "claims": k.claims, "dimensions": list(k.dimensions)}
                      for k in self.kinds.values()},
        }

    def spec(self, item: str, fname: str) -> FieldSpec | None:
        if item == ITEM_REQUEST:
            return self.fields.get(fname)
        if item.startswith("claim:"):
            return self.claim_fields.get(fname)
        if item.startswith("dimension:"):
            return self.dimensions.get(item.split(":", 1)[1])
        return None


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, str) else str(v)


def rubric_sha256(data: bytes) -> str:
    """The rubric digest: SHA-256 of the file's bytes (humans and judges alike)."""
    return hashlib.sha256(data).hexdigest()


def _field(where: str, name: str, raw: Any, *, dimension: bool = False) -> FieldSpec:
    if not isinstance(raw, dict):
        raise LabelError(f"{where}: must be a table")
    unknown = set(raw) - {"values", "allow_null", "scale", "polarity"}
    if unknown:
        raise LabelError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    values = raw.get("values")
    if values is not None and (not isinstance(values, list) or not values
                               or not all(isinstance(v, str | bool | int | float) for v in values)):
        raise LabelError(f"{where}.values: a non-empty list of scalars")
    allow_null = raw.get("allow_null", True)
    scale = raw.get("scale", "nominal")
    polarity = raw.get("polarity", "neutral")
    if not isinstance(allow_null, bool):
        raise LabelError(f"{where}.allow_null: true or false")
    if scale not in ("nominal", "ordinal"):
        raise LabelError(f"{where}.scale: `nominal` or `ordinal`")
    if scale == "ordinal" and values is None:
        raise LabelError(f"{where}: an ordinal field needs its `values` in order")
    if polarity not in ("higher-is-better", "adverse", "neutral"):
        raise LabelError(f"{where}.polarity: `higher-is-better`, `adverse` or `neutral`")
    if polarity != "neutral" and not dimension:
        raise LabelError(f"{where}.polarity: only quality dimensions have a polarity")
    return FieldSpec(name=name, values=tuple(values) if values is not None else None,
                     allow_null=allow_null, scale=scale, polarity=polarity)


def parse_rubric(data: bytes, name: str | None = None) -> Rubric:
    """The rubric's scheme (see the module doc); LabelError naming the key when it is bad."""
    sha = rubric_sha256(data)
    shown = name or "rubric"
    if not (name or "").endswith(".toml"):
        text = data.decode("utf-8", errors="replace")
        return Rubric(sha256=sha, text=text, fields={"label": FieldSpec("label", None)},
                      kinds={DEFAULT_KIND: Kind(DEFAULT_KIND, ("label",), False, ())})
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LabelError(f"{shown}: invalid TOML rubric: {exc}") from None
    unknown = set(raw) - {"text", "fields", "claims", "dimensions", "kinds", "rates", "bind"}
    if unknown:
        raise LabelError(f"{shown}: unknown key {sorted(unknown)[0]!r}")
    bind = raw.get("bind", "content")
    if bind not in BINDS:
        raise LabelError(f"{shown}: bind: {bind!r} is not one of {', '.join(BINDS)}")
    text = raw.get("text", "")
    if not isinstance(text, str):
        raise LabelError(f"{shown}: text: a string")
    fields = {k: _field(f"{shown}: fields.{k}", k, v) for k, v in (raw.get("fields") or {}).items()}
    claims = raw.get("claims") or {}
    if not isinstance(claims, dict):
        raise LabelError(f"{shown}: claims: must be a table")
    bad = set(claims) - {"path", "text_path", "fields"}
    if bad:
        raise LabelError(f"{shown}: claims: unknown key {sorted(bad)[0]!r}")
    claim_fields = {k: _field(f"{shown}: claims.fields.{k}", k, v) for k, v in (claims.get("fields") or {}).items()}
    if claim_fields and not (isinstance(claims.get("path"), str) and isinstance(claims.get("text_path"), str)):
        raise LabelError(f"{shown}: claims: `path` and `text_path` (dotted paths into the result) are required")
    dims = {k: _field(f"{shown}: dimensions.{k}", k, v, dimension=True) for k, v in (raw.get("dimensions") or {}).items()}
    kinds: dict[str, Kind] = {}
    for kname, kraw in (raw.get("kinds") or {}).items():
        where = f"{shown}: kinds.{kname}"
        if not isinstance(kraw, dict) or set(kraw) - {"fields", "claims", "dimensions"}:
            raise LabelError(f"{where}: a table of `fields`, `claims`, `dimensions`")
        kf = tuple(kraw.get("fields", []))
        kd = tuple(kraw.get("dimensions", []))
        for f in kf:
            if f not in fields:
                raise LabelError(f"{where}.fields: {f!r} is not declared under [fields]")
        for d in kd:
            if d not in dims:
                raise LabelError(f"{where}.dimensions: {d!r} is not declared under [dimensions]")
        kc = bool(kraw.get("claims", False))
        if kc and not claim_fields:
            raise LabelError(f"{where}.claims: the rubric declares no claim fields")
        kinds[kname] = Kind(kname, kf, kc, kd)
    if not kinds:
        kinds[DEFAULT_KIND] = Kind(DEFAULT_KIND, tuple(fields), bool(claim_fields), tuple(dims))
    if not (fields or claim_fields or dims):
        raise LabelError(f"{shown}: declares nothing to rate (no fields, claims or dimensions)")
    rates = []
    for i, r in enumerate(raw.get("rates") or []):
        where = f"{shown}: rates[{i}]"
        if not isinstance(r, dict) or not isinstance(r.get("name"), str) or "positive" not in r:
            raise LabelError(f"{where}: needs `name` and `positive`")
        sources = [k for k in ("claim_field", "field", "dimension") if k in r]
        if len(sources) != 1:
            raise LabelError(f"{where}: give exactly one of `claim_field`, `field`, `dimension`")
        src = sources[0]
        known = {"claim_field": claim_fields, "field": fields, "dimension": dims}[src]
        if r[src] not in known:
            raise LabelError(f"{where}.{src}: {r[src]!r} is not declared")
        rates.append(RateSpec(name=r["name"], positive=str(label_key(r["positive"])),
                              unsettled=tuple(str(label_key(u)) for u in r.get("unsettled", [])),
                              **{src: r[src]}))
    return Rubric(sha256=sha, text=text, fields=fields, claim_fields=claim_fields,
                  claims_path=claims.get("path"), claims_text_path=claims.get("text_path"),
                  dimensions=dims, kinds=kinds, rates=rates, structured=True, bind=bind)


def dotted(root: dict[str, Any], path: str) -> Any:
    """`root[a][b]…` for `a.b…`, or None where a step is missing."""
    cur: Any = root
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return None
    return cur


def claim_spans(rubric: Rubric, result_view: dict[str, Any],
                scrubbed: dict[str, list[list[int]]] | None = None) -> list[dict[str, Any]]:
    """The claims of one result as raters see them: id, exact output offsets, the span's
    text. Only these keys leave the result (a claim's provisional verdict stays hidden).
    LabelError when a claim's offsets are not inside the text or its quoted text differs."""
    if not rubric.claim_fields or rubric.claims_path is None or rubric.claims_text_path is None:
        return []
    from evalh.redact import REDACTED
    from evalh.spans import ScrubbedClaim, SpanError, checked_claims, through_scrub

    raw = dotted(result_view, rubric.claims_path)
    root, _, key = rubric.claims_text_path.partition(".")
    cuts = (scrubbed or {}).get(key) if root == "output" else None
    try:
        # offsets annotated on the output as produced, mapped onto the output as stored
        raw = through_scrub(raw, cuts or [], len(REDACTED), rubric.claims_path)
        return checked_claims(raw, dotted(result_view, rubric.claims_text_path),
                              rubric.claims_path, rubric.claims_text_path)
    except ScrubbedClaim as exc:
        raise ScrubbedCase(str(exc)) from None
    except SpanError as exc:
        raise LabelError(str(exc)) from None
