"""Where a command finds the project: its root (evalh.toml and BASELINE) and its run store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalh.store import RunStore


def open_project(config: Path | None, runs_dir: Path | None) -> tuple[Path, RunStore]:
    """The project root (where evalh.toml and BASELINE live; else the current directory)
    and the run store. An explicit --config must load; a missing evalh.toml is fine, so
    commands that only read runs work anywhere."""
    from evalh.config import find_config, load_config
    from evalh.errors import ConfigError
    from evalh.store import RunStore, resolve_runs_dir

    try:
        cfg = load_config(config if config is not None else find_config(), check_datasets=False)
    except ConfigError:
        if config is not None:
            raise
        return Path.cwd(), RunStore(resolve_runs_dir(runs_dir))
    return cfg.root, RunStore(resolve_runs_dir(runs_dir, cfg.root, cfg.settings.runs_dir))


def open_store(runs_dir: Path | None, config: Path | None) -> RunStore:
    return open_project(config, runs_dir)[1]
