"""Where a run came from: git state and the environment (versions only, never values)."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

from evalh import __version__
from evalh.models import EnvironmentInfo, GitInfo


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def git_info(root: Path) -> GitInfo:
    """Commit, dirty flag and branch; all null outside a git repository."""
    sha = _git(root, "rev-parse", "HEAD")
    if not sha:
        return GitInfo()
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    branch = _git(root, "rev-parse", "--abbrev-ref", "HEAD")
    return GitInfo(
        sha=sha,
        dirty=bool(status) if status is not None else None,
        branch=None if branch in (None, "HEAD") else branch,
    )


def environment_info() -> EnvironmentInfo:
    return EnvironmentInfo(
        evalh=__version__,
        python=platform.python_version(),
        platform=f"{sys.platform}-{platform.machine()}",
    )
