"""Targets: the system under test. A registry of kinds (`evalh.registry.TARGET_KINDS`),
each a module with `CONFIGS` (kind → config model) and `build(config, root) -> Target`.
Provider SDKs are imported inside `build`, never at module import."""

from __future__ import annotations

from pathlib import Path

from evalh import registry
from evalh.targets.base import CallContext, Target, TargetConfig, TargetOutput

__all__ = ["CallContext", "Target", "TargetConfig", "TargetOutput", "build_target"]


def build_target(config: TargetConfig, root: Path) -> Target:
    return registry.target_module(config.kind).build(config, root)
