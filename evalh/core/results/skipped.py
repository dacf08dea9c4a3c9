"""The configured suites a run leaves out, and why: recorded in the run's config snapshot
(`suites_not_run`) so a comparison can say why a suite the baseline ran is missing, and
named in `evalh run`'s verdict so a run that skipped a suite for a missing key is not green.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

NOT_RUN_KEY = "suites_not_run"
"""The config snapshot's record of the configured suites a run did not run:
suite → {"cause": "missing_key" | "not_selected", "text": "..."}."""


def not_run_record(skipped: Iterable[tuple[str, list[str]]], not_selected: Iterable[str],
                   named: list[str] | None) -> dict[str, dict[str, str]]:
    """What a run records about the configured suites it leaves out: those skipped for a
    missing environment variable, and those `--suite` did not name."""
    out: dict[str, dict[str, str]] = {}
    for name, missing in skipped:
        out[name] = {"cause": "missing_key", "text": f"skipped: needs {', '.join(missing)}"}
    flags = " ".join(f"--suite {n}" for n in named or [])
    for name in not_selected:
        out[name] = {"cause": "not_selected", "text": f"not selected (the run named {flags})"}
    return out


def skipped_for_keys(config: dict[str, Any]) -> list[str]:
    """One line per suite a run's snapshot says was skipped for a missing key."""
    record = config.get(NOT_RUN_KEY) or {}
    return [f"suite {name} was not run ({r['text']}): the run did not measure it"
            for name, r in record.items()
            if isinstance(r, dict) and r.get("cause") == "missing_key" and isinstance(r.get("text"), str)]
