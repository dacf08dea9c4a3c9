"""Scorers: a registry (`evalh.registry.SCORER_TYPES`) and one small module per family."""

from __future__ import annotations

from pathlib import Path

from evalh import registry
from evalh.scorers.base import Scorer, ScorerConfig


def build_scorer(config: ScorerConfig, root: Path) -> Scorer:
    """Build a scorer; relative paths in its config resolve against the project root.

    What a scorer type's `build` returns must subclass `Scorer` (its optional hooks are
    called directly, with their no-op defaults): a plugin that does not is bad config."""
    from evalh.errors import ConfigError

    scorer = registry.scorer_module(config.type).build(config, root)
    if Scorer not in type(scorer).__mro__:  # nominal: the hooks are inherited, not just named
        module = registry.SCORER_TYPES.get(config.type, "?")
        raise ConfigError(
            f"scorer type {config.type!r} ({module}): build() returned a "
            f"{type(scorer).__name__}, which does not subclass evalh.scorers.base.Scorer")
    return scorer
