"""Scorers: a registry (`evalh.registry.SCORER_TYPES`) and one small module per family."""

from __future__ import annotations

from pathlib import Path

from evalh import registry
from evalh.scorers.base import Scorer, ScorerConfig


def build_scorer(config: ScorerConfig, root: Path) -> Scorer:
    """Build a scorer; relative paths in its config resolve against the project root."""
    return registry.scorer_module(config.type).build(config, root)
