"""Where a command finds the project: its root (evalh.toml and BASELINE) and its run store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalh.store import RunStore


def open_project(config: Path | None, runs_dir: Path | None) -> tuple[Path, RunStore]:
    """The project root (where evalh.toml and BASELINE live; else the current directory)
    and the run store. A missing evalh.toml is fine, so commands that only read runs work
    anywhere; one that is found (or given with --config) must load: a typo in it would
    otherwise send the command to another runs directory and BASELINE without a word."""
    from evalh.errors import ConfigError
    from evalh.scaffold import find_config
    from evalh.store import RunStore, resolve_runs_dir

    if config is None:
        try:
            config = find_config()
        except ConfigError:
            return Path.cwd(), RunStore(resolve_runs_dir(runs_dir))
    from evalh.config import load_config  # its models: only where there is a config to load

    cfg = load_config(config, check_datasets=False)
    return cfg.root, RunStore(resolve_runs_dir(runs_dir, cfg.root, cfg.settings.runs_dir))


def open_store(runs_dir: Path | None, config: Path | None) -> RunStore:
    return open_project(config, runs_dir)[1]
