"""Targets: the system under test. A registry of kinds (`evalh.registry.TARGET_KINDS`),
each a module with `CONFIGS` (kind → config model) and `build(config, root) -> Target`.
Provider SDKs are imported inside `build`, never at module import."""

from __future__ import annotations

from pathlib import Path

from evalh import registry
from evalh.targets.base import CallContext, Target, TargetConfig, TargetOutput

__all__ = ["CallContext", "Target", "TargetConfig", "TargetOutput", "build_target"]


def build_target(config: TargetConfig, root: Path) -> Target:
    """Build a target. What a kind's `build` returns must subclass `Target` (its optional
    hooks are called directly, with their no-op defaults): a plugin that does not is bad
    config."""
    from evalh.errors import ConfigError

    target = registry.target_module(config.kind).build(config, root)
    if Target not in type(target).__mro__:  # nominal: the hooks are inherited, not just named
        module = registry.TARGET_KINDS.get(config.kind, "?")
        raise ConfigError(
            f"target kind {config.kind!r} ({module}): build() returned a "
            f"{type(target).__name__}, which does not subclass evalh.targets.base.Target")
    return target
