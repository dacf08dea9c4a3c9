"""Registries of target kinds and scorer types.

Built-ins are registered the way a plugin would be: a kind or type name mapped to the
module that defines its `Config` model and its `build` factory. Modules are imported only
when a config names them, and provider SDKs only inside `build`, so `evalh --help` stays
fast.
"""

from __future__ import annotations

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
    "classification": "evalh.core.classify",
}

def target_module(kind: str) -> ModuleType:
    """The module of a target kind (`evalh.imports.ImportFailure` when it cannot be imported)."""
    from evalh.imports import import_user_module

    return import_user_module(TARGET_KINDS[kind], what="plugin")


def scorer_module(type_: str) -> ModuleType:
    """The module of a scorer type (`evalh.imports.ImportFailure` when it cannot be imported)."""
    from evalh.imports import import_user_module

    return import_user_module(SCORER_TYPES[type_], what="plugin")
