"""How old the BASELINE a comparison uses is: the date of its run, and how many commits
behind the candidate's merge base its commit is, where git can tell.

The date is the baseline run's `started_at` (the newest of its runs, when several are
pooled), its age counted to the candidate's. The commits are those of
`git rev-list --count BASELINE_SHA..MERGE_BASE`, the merge base being the candidate's
commit's with `base_ref` (a pull request's target branch: `origin/$GITHUB_BASE_REF` in
GitHub Actions), or the candidate's commit itself when no base ref is known. Where git
cannot tell (no repository, a shallow clone without the baseline's commit, a run without
a sha), the count is unknown and the line says why. A baseline older than `max_age_days`
gets a warning; age never changes a verdict or an exit code.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalh.models import Run
from evalh.store import parse_iso

DEFAULT_MAX_AGE_DAYS = 30.0


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


@dataclass
class BaselineAge:
    run_id: str
    started_at: str | None
    age_days: float | None
    sha: str | None
    commits_behind: int | None
    against: str | None
    """What the count is against: `the merge base with REF`, or `the candidate's commit`."""
    unknown_why: str | None
    max_age_days: float

    @property
    def stale(self) -> bool:
        return self.age_days is not None and self.age_days > self.max_age_days

    def lines(self) -> list[str]:
        date = self.started_at[:10] if self.started_at else "an unknown date"
        parts = [f"baseline: run {self.run_id} of {date}"]
        if self.age_days is not None:
            parts.append(f"{self.age_days:.1f} days before the candidate")
        if self.commits_behind is not None:
            parts.append(f"{self.commits_behind} commits behind {self.against}")
        else:
            parts.append(f"commits behind: unknown ({self.unknown_why})")
        out = [", ".join(parts)]
        if self.stale:
            out.append(f"warning: the baseline is {self.age_days:.0f} days old, older than {self.max_age_days:g} "
                       "days: set a new one from a clean run of the main branch (evalh baseline set)")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "started_at": self.started_at, "age_days": self.age_days,
                "git_sha": self.sha, "commits_behind": self.commits_behind, "against": self.against,
                "unknown_why": self.unknown_why, "max_age_days": self.max_age_days, "stale": self.stale}


def baseline_age(baseline: list[Run], candidate: Run, root: Path, *, base_ref: str | None = None,
                 max_age_days: float = DEFAULT_MAX_AGE_DAYS) -> BaselineAge:
    """The age of the BASELINE runs `baseline` (the newest counts) against `candidate`."""
    newest = max(baseline, key=lambda r: r.started_at)
    began, cand_began = parse_iso(newest.started_at), parse_iso(candidate.started_at)
    age = ((cand_began or datetime.now(UTC)) - began).total_seconds() / 86400 if began else None
    sha = newest.git.sha
    behind, against, why = None, None, None
    if not sha:
        why = "the baseline run records no git commit"
    elif _git(root, "rev-parse", "--git-dir") is None:
        why = f"{root} is not a git repository"
    elif _git(root, "cat-file", "-e", f"{sha}^{{commit}}") is None:
        why = f"git has no commit {sha[:12]} here: a shallow clone? (actions/checkout with fetch-depth: 0)"
    else:
        head = candidate.git.sha or _git(root, "rev-parse", "HEAD")
        if head and _git(root, "cat-file", "-e", f"{head}^{{commit}}") is None:
            head = _git(root, "rev-parse", "HEAD")
        tip, against = head, "the candidate's commit"
        if base_ref and head:
            merge_base = _git(root, "merge-base", head, base_ref)
            if merge_base:
                tip, against = merge_base, f"the candidate's merge base with {base_ref}"
        counted = _git(root, "rev-list", "--count", f"{sha}..{tip}") if tip else None
        if counted is not None and counted.isdigit():
            behind = int(counted)
        else:
            why = "git could not count the commits"
    return BaselineAge(run_id=newest.run_id, started_at=newest.started_at, age_days=age, sha=sha,
                       commits_behind=behind, against=against if behind is not None else None,
                       unknown_why=why, max_age_days=max_age_days)
