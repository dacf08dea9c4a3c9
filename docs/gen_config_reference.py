"""Regenerate the key tables of docs/config.md from the pydantic models, so the docs cannot drift.

    python docs/gen_config_reference.py           # rewrite the generated blocks in place
    python docs/gen_config_reference.py --check   # exit 1 if docs/config.md is out of date

docs/config.md holds hand-written prose around blocks delimited by
`<!-- BEGIN generated:NAME -->` and `<!-- END generated:NAME -->`. Each block is rebuilt from
the config models (`evalh.config`) and from every target kind and scorer type in
`evalh.registry`: key, type with its bounds, default, whether the value is copied into the
run document (the model's `SNAPSHOT` allowlist), and the field's docstring. Every example
shown is parsed by the model it documents, so a broken example fails the generator.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import re
import sys
import textwrap
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "config.md"

# Hand-written examples for the built-in kinds and types; the rest get one synthesized from
# their required keys. Each is validated against its model before it is printed.
TARGET_EXAMPLES: dict[str, str] = {
    "python": 'target = "examples.citecheck:check"   # short for { kind = "python", callable = "…" }',
    "anthropic": '{ kind = "anthropic", model = "claude-haiku-4-5", prompt = "Q: {{ input.question }}" }',
    "http": '{ kind = "http", url = "http://localhost:8000/answer", output_field = "answer" }',
}
SCORER_EXAMPLES: dict[str, str] = {
    "exact": '{ type = "exact", field = "verdict" }',
    "contains": '{ type = "contains", field = "answer", values = ["Paris", "France"], mode = "all" }',
    "regex": '{ type = "regex", pattern = "^\\\\d{4}-\\\\d{2}-\\\\d{2}$", fullmatch = true }',
    "json_equal": '{ type = "json_equal", field = "data" }',
    "numeric": '{ type = "numeric", field = "total", abs_tol = 0.01, rel_tol = 0.001 }',
    "json_schema": '{ type = "json_schema", schema_path = "schemas/reply.json" }',
    "literal_quote": '{ type = "literal_quote", text = "output.quote", region = "input.source" }',
    "literal_absence": '{ type = "literal_absence", text = "expected.banned", region = "output" }',
    "custom": '{ type = "custom", function = "my_product.evals:tone_ok", threshold = 0.8 }',
}

_HIDDEN = {"SuiteConfig": {"name"}}
"""Fields set by evalh itself (a suite's `name` is its table name)."""


# ----------------------------------------------------------------------------- docstrings


def attribute_docstrings(cls: type) -> dict[str, str]:
    """`field: T = …` followed by a string literal, for the class and its bases."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass in (object, BaseModel) or not issubclass(klass, BaseModel):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        body = ast.parse(source).body[0]
        assert isinstance(body, ast.ClassDef)
        for node, nxt in zip(body.body, body.body[1:], strict=False):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[node.target.id] = " ".join(inspect.cleandoc(nxt.value.value).split())
    return docs


def class_doc(cls: type) -> str:
    doc = cls.__dict__.get("__doc__")
    text = inspect.cleandoc(doc) if doc else ""
    return "\\" + text if text.startswith("|") else text  # not a table row


# ----------------------------------------------------------------------------- types and defaults


def type_name(tp: Any) -> str:
    from evalh.scorers.base import ScorerConfig
    from evalh.targets.base import TargetConfig

    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return "any"
    if tp is type(None):
        return "none"
    if origin is typing.Literal:
        return " \\| ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        names = [type_name(a) for a in args if a is not type(None)]
        return " \\| ".join(names)
    if origin is list:
        return f"list of {type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"table of {type_name(args[1])}" if args else "table"
    if isinstance(tp, type):
        if issubclass(tp, TargetConfig):
            return "[target](#targets)"
        if issubclass(tp, ScorerConfig):
            return "[scorer](#scorers)"
        if issubclass(tp, BaseModel):
            return f"table ([{tp.__name__}](#{anchor(tp.__name__)}))"
        return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(tp, tp.__name__)
    return str(tp)


def bounds(field: FieldInfo) -> str:
    out = []
    for m in field.metadata:
        for attr, sym in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            if getattr(m, attr, None) is not None:
                out.append(f"{sym} {getattr(m, attr)}")
        if getattr(m, "min_length", None) is not None:
            out.append(f"at least {m.min_length} long")
        if getattr(m, "pattern", None) is not None:
            out.append(f"matches `{m.pattern}`")
    return ", ".join(out)


def toml_value(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, BaseModel):
        return "see its table"
    if isinstance(value, list | dict) and not value:
        return "`[]`" if isinstance(value, list) else "`{}`"
    return f"`{value}`"


def default_of(field: FieldInfo) -> str:
    if field.default_factory is not None:
        return toml_value(field.default_factory())  # type: ignore[call-arg]
    if field.default is PydanticUndefined:
        return "**required**"
    return toml_value(field.default)


# ----------------------------------------------------------------------------- tables


def anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")


def esc(text: str) -> str:
    return text.replace("|", "\\|")


def field_table(cls: type[BaseModel], skip: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    docs = attribute_docstrings(cls)
    snap: frozenset[str] = getattr(cls, "SNAPSHOT", frozenset())
    hidden = _HIDDEN.get(cls.__name__, set()) | set(skip)
    rows = ["| key | type | default | in run document | meaning |", "| --- | --- | --- | --- | --- |"]
    for name, field in cls.model_fields.items():
        if name in hidden:
            continue
        key = key_of(name, field)
        kind = type_name(field.annotation)
        limit = bounds(field)
        if limit:
            kind += f" ({limit})"
        rows.append(
            f"| `{key}` | {kind} | {default_of(field)} | {'yes' if name in snap else 'no'} "
            f"| {esc(docs.get(name, ''))} |"
        )
    return "\n".join(rows)


def key_of(name: str, field: FieldInfo) -> str:
    """The key a user writes: the alias, or the first of the accepted spellings."""
    alias = field.validation_alias or field.alias
    if isinstance(alias, str):
        return alias
    choices = getattr(alias, "choices", None)
    return str(choices[0]) if choices else name


def nested_models(cls: type[BaseModel]) -> list[type[BaseModel]]:
    """Config tables nested in `cls` (thresholds, arms, …), not targets or scorers."""
    from evalh.scorers.base import ScorerConfig
    from evalh.targets.base import TargetConfig

    found: list[type[BaseModel]] = []

    def visit(tp: Any) -> None:
        for arg in typing.get_args(tp):
            visit(arg)
        if (
            isinstance(tp, type)
            and issubclass(tp, BaseModel)
            and not issubclass(tp, TargetConfig | ScorerConfig)
            and tp not in found
        ):
            found.append(tp)
            for f in tp.model_fields.values():
                visit(f.annotation)

    for f in cls.model_fields.values():
        visit(f.annotation)
    return found


# ----------------------------------------------------------------------------- examples


def _placeholder(field: FieldInfo) -> str:
    tp = field.annotation
    if typing.get_origin(tp) is typing.Literal:
        return f'"{typing.get_args(tp)[0]}"'
    if tp in (int, float):
        return "1"
    if tp is bool:
        return "true"
    if typing.get_origin(tp) is list:
        return "[]"
    return '"…"'


def synthesized(cls: type[BaseModel], head: dict[str, str]) -> str:
    parts = [f'{k} = "{v}"' for k, v in head.items()]
    for name, field in cls.model_fields.items():
        if name in head or not field.is_required():
            continue
        parts.append(f"{key_of(name, field)} = {_placeholder(field)}")
    return "{ " + ", ".join(parts) + " }"


def check_example(cls: type[BaseModel], inline_table: str, what: str) -> bool:
    """Parse `x = <inline table>` and validate it; a broken example stops the generator."""
    text = inline_table if inline_table.startswith("target =") else f"x = {inline_table}"
    value = tomllib.loads(text)
    raw = value.get("x", value.get("target"))
    if isinstance(raw, str):
        raw = {"kind": "python", "callable": raw}
    try:
        cls.model_validate(raw)
    except Exception as exc:  # a synthesized example may not satisfy cross-field rules
        if what == "hand-written":
            raise SystemExit(f"example {inline_table!r} does not validate: {exc}") from None
        return False
    return True


# ----------------------------------------------------------------------------- blocks


def _grouped(kinds: dict[str, str], attr: str) -> list[tuple[list[str], type[BaseModel]]]:
    """(names, config class) in registry order, names sharing one class grouped."""
    import importlib

    groups: dict[type[BaseModel], list[str]] = {}
    for name, module_name in kinds.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise SystemExit(f"registry names {module_name!r} for {attr} {name!r}: {exc}") from None
        groups.setdefault(module.CONFIGS[name], []).append(name)
    return [(names, cls) for cls, names in groups.items()]


def kind_sections(kinds: dict[str, str], attr: str, examples: dict[str, str]) -> str:
    out = []
    shown: set[type[BaseModel]] = set()
    for names, cls in _grouped(kinds, attr):
        title = " / ".join(f'{attr} = "{n}"' for n in names)
        out.append(f"### `{title}`\n")
        intro = class_doc(cls)
        if intro:
            out.append(intro + "\n")
        example = examples.get(names[0])
        if example:
            check_example(cls, example, "hand-written")
        else:
            candidate = synthesized(cls, {attr: names[0]})
            example = candidate if check_example(cls, candidate, "synthesized") else None
        if example:
            line = example if example.startswith("target =") else (
                f"target = {example}" if attr == "kind" else f"scorers = [{example}]"
            )
            out.append(f"```toml\n{line}\n```\n")
        skip = {"type"} if attr == "type" else set()
        out.append(field_table(cls, skip) + "\n")
        for nested in nested_models(cls):
            if nested not in shown:  # tables shared by several kinds are shown once
                shown.add(nested)
                out.append(model_section(nested, "####"))
    return "\n".join(out).rstrip() + "\n"


def model_section(cls: type[BaseModel], level: str = "###") -> str:
    parts = [f"{level} {cls.__name__}\n"]
    intro = class_doc(cls)
    if intro:
        parts.append(intro + "\n")
    parts.append(field_table(cls) + "\n")
    return "\n".join(parts)


def blocks() -> dict[str, str]:
    from evalh import registry
    from evalh.config import Price, Settings, SuiteConfig

    suite = field_table(SuiteConfig) + "\n"
    for nested in nested_models(SuiteConfig):
        suite += "\n" + model_section(nested)
    return {
        "evalh": field_table(Settings) + "\n",
        "prices": field_table(Price) + "\n",
        "suite": suite,
        "targets": kind_sections(registry.TARGET_KINDS, "kind", TARGET_EXAMPLES),
        "scorers": kind_sections(registry.SCORER_TYPES, "type", SCORER_EXAMPLES),
    }


_BLOCK = re.compile(
    r"(<!-- BEGIN generated:(?P<name>[a-z_-]+) -->\n)(?P<body>.*?)(<!-- END generated:(?P=name) -->)",
    re.S,
)


def render(doc: str) -> str:
    fresh = blocks()
    seen = set()

    def swap(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in fresh:
            raise SystemExit(f"{DOC.name}: unknown generated block {name!r}")
        seen.add(name)
        return m.group(1) + fresh[name] + m.group(4)

    text = _BLOCK.sub(swap, doc)
    missing = sorted(set(fresh) - seen)
    if missing:
        raise SystemExit(f"{DOC.name}: no place for the generated blocks {', '.join(missing)}")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/config.md is stale")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    current = DOC.read_text(encoding="utf-8")
    updated = render(current)
    if args.check:
        if updated != current:
            sys.stderr.write(
                "docs/config.md is out of date with the config models: "
                "run `python docs/gen_config_reference.py`\n"
            )
            return 1
        return 0
    if updated != current:
        DOC.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
