"""Registries of target kinds, scorer types, providers and report formats.

Built-ins are registered the way a plugin is: a name mapped to the module that defines it.
Installed packages add their own through entry points, one group per kind::

    [project.entry-points."evalh.scorers"]
    my_scorer = "my_pkg.scorer"          # a module with CONFIGS and build(config, root)

    [project.entry-points."evalh.targets"]
    my_target = "my_pkg.target"          # a module with CONFIGS and build(config, root)

    [project.entry-points."evalh.providers"]
    my_provider = "my_pkg.provider"      # a module with KEY_ENV, resolve_base_url, make_backend

    [project.entry-points."evalh.report_formats"]
    my_format = "my_pkg.report_format"   # a module with SUFFIX and render(runs)

A provider is also a model target kind, as `anthropic` and `openai` are: `target = { kind =
"my_provider", model = "...", prompt = "..." }` is an `evalh.targets.model` target whose
requests go to that provider (unless a target plugin registers the same name: it wins).

What each module defines is the Protocol of its kind, in evalh.scorers.base, evalh.targets.base,
evalh.providers.base and evalh.report.formats (docs/plugins.md). Nothing is imported to
register a name: entry points are read (metadata only) the first time a name is looked up,
and a module is imported only when a config names it, so `evalh --help` stays fast. A
plugin cannot replace a built-in: an entry point of a built-in's name is ignored, and listed
as shadowed by `evalh plugins`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

TARGET_KINDS: dict[str, str] = {
    "python": "evalh.targets.python_callable",
    "anthropic": "evalh.targets.model",
    "openai": "evalh.targets.model",
    "http": "evalh.targets.http",
}

SCORER_TYPES: dict[str, str] = {
    "exact": "evalh.scorers.match",
    "contains": "evalh.scorers.match",
    "regex": "evalh.scorers.match",
    "json_equal": "evalh.scorers.structured",
    "numeric": "evalh.scorers.structured",
    "json_schema": "evalh.scorers.structured",
    "literal_quote": "evalh.scorers.literal",
    "literal_absence": "evalh.scorers.literal",
    "custom": "evalh.scorers.custom",
    "judge": "evalh.scorers.judge",
    "pairwise_judge": "evalh.scorers.judge_pairwise",
    "citation_judge": "evalh.scorers.citations",
    "external_score": "evalh.scorers.external_score",
    "classification": "evalh.core.analysis.classify",
}

PROVIDERS: dict[str, str] = {
    "anthropic": "evalh.providers.anthropic",
    "openai": "evalh.providers.openai",
}

REPORT_FORMATS: dict[str, str] = {}
"""Report formats added by plugins (`evalh report --format NAME`); the built-in ones
(`BUILTIN_REPORT_FORMATS`) are the report command's own."""
BUILTIN_REPORT_FORMATS = ("table", "md", "markdown", "json", "html")
"""`evalh report`'s own formats (`markdown` is `md`, as `evalh compare` spells it): a plugin's
format of one of these names is shadowed, as a built-in scorer's name is."""

GROUPS: dict[str, str] = {
    "evalh.scorers": "scorer",
    "evalh.targets": "target",
    "evalh.providers": "provider",
    "evalh.report_formats": "report_format",
}
"""Entry-point group → the kind of plugin it registers."""


@dataclass(frozen=True)
class Plugin:
    """One entry point found in an installed distribution."""

    kind: str
    """scorer, target, provider or report_format."""
    name: str
    module: str
    distribution: str | None
    version: str | None
    status: str = "loaded"
    """`loaded` (registered), `shadowed` (a built-in has the name) or `invalid` (its value
    is not a module path)."""


_TABLES: dict[str, dict[str, str]] = {
    "scorer": SCORER_TYPES, "target": TARGET_KINDS, "provider": PROVIDERS,
    "report_format": REPORT_FORMATS,
}
_found: list[Plugin] | None = None
_model_kinds: set[str] = set()
"""Target kinds registered for plugin providers (model targets of that provider)."""
MODEL_TARGET = "evalh.targets.model"


def _entry_points() -> dict[str, list[object]]:
    """The entry points of evalh's groups, from one pass over the installed distributions
    (`entry_points(group=...)` makes that pass for each group it is asked for)."""
    from importlib.metadata import entry_points

    every = entry_points()
    return {group: list(every.select(group=group)) for group in GROUPS}


def load_plugins(*, reload: bool = False) -> list[Plugin]:
    """Read the entry points of every group once (or again with `reload`) and register
    their names; the list of what was found, in group and name order."""
    global _found
    if _found is not None and not reload:
        return _found
    if reload and _found is not None:
        for p in _found:
            if p.status == "loaded":
                _TABLES[p.kind].pop(p.name, None)
        for kind in _model_kinds:
            TARGET_KINDS.pop(kind, None)
        _model_kinds.clear()
    found: list[Plugin] = []
    by_group = _entry_points()
    for group, kind in GROUPS.items():
        table = _TABLES[kind]
        for ep in sorted(by_group[group], key=lambda e: getattr(e, "name", "")):
            name: str = getattr(ep, "name", "")
            value: str = getattr(ep, "value", "")
            dist = getattr(ep, "dist", None)
            dist_name = getattr(dist, "name", None) if dist is not None else None
            version = getattr(dist, "version", None) if dist is not None else None
            module, _, attr = value.partition(":")
            module = module.strip()
            if attr or not module or not all(part.isidentifier() for part in module.split(".")):
                status = "invalid"
            elif name in table or (kind == "report_format" and name in BUILTIN_REPORT_FORMATS):
                status = "shadowed"
            else:
                status = "loaded"
                table[name] = module
            found.append(Plugin(kind, name, module, dist_name, version, status))
            if kind == "provider" and status == "loaded" and name not in TARGET_KINDS:
                TARGET_KINDS[name] = MODEL_TARGET  # a model target of this provider
                _model_kinds.add(name)
    _found = found
    return found


def target_kinds() -> dict[str, str]:
    load_plugins()
    return TARGET_KINDS


def model_kinds() -> list[str]:
    """The target kinds that are model targets: one per provider, built-in or plugin."""
    load_plugins()
    return sorted(k for k, module in TARGET_KINDS.items() if module == MODEL_TARGET and k in PROVIDERS)


def scorer_types() -> dict[str, str]:
    load_plugins()
    return SCORER_TYPES


def providers() -> dict[str, str]:
    load_plugins()
    return PROVIDERS


def report_formats() -> dict[str, str]:
    load_plugins()
    return REPORT_FORMATS


def _import(table: dict[str, str], name: str) -> ModuleType:
    from evalh.imports import import_user_module

    return import_user_module(table[name], what="plugin")


def target_module(kind: str) -> ModuleType:
    """The module of a target kind (`evalh.imports.ImportFailure` when it cannot be imported)."""
    return _import(target_kinds(), kind)


def scorer_module(type_: str) -> ModuleType:
    """The module of a scorer type (`evalh.imports.ImportFailure` when it cannot be imported)."""
    return _import(scorer_types(), type_)


def provider_module(name: str) -> ModuleType:
    """The module of a provider (`evalh.imports.ImportFailure` when it cannot be imported)."""
    return _import(providers(), name)


def report_format_module(name: str) -> ModuleType:
    """The module of a plugin report format (`ImportFailure` when it cannot be imported)."""
    return _import(report_formats(), name)
