"""Options of `evalh run` that rewrite the config before anything is planned.

- `--judge-model M`: every judge of the chosen suites judges with M (one judge, the first
  judge's provider settings), as `evalh rejudge --judge-model` does. The rewritten scorers
  are what the run records, and judge ≠ subject is checked against M before the first case.
- `--sleep-ms N`: every Python, model and HTTP target is paced (`pace_ms = N`).

Each returns a new Config; the loaded one is not changed.
"""

from __future__ import annotations

from typing import Any

from evalh.config import Config


def judged_by(scorer: Any, model: str) -> Any:
    """`scorer` judged by `model` (one judge, the first one's provider settings); a scorer
    without judges (deterministic, an external score) is returned as it is."""
    judges = getattr(scorer, "judges", None)
    if not judges:
        return scorer
    return scorer.model_copy(update={"judges": [judges[0].model_copy(update={"model": model})]})


def with_judge_model(config: Config, model: str | None) -> Config:
    if not model:
        return config
    suites = {name: s.model_copy(update={"scorers": [judged_by(sc, model) for sc in s.scorers]})
              for name, s in config.suites.items()}
    return config.model_copy(update={"suites": suites})


def _paced(target: Any, ms: float) -> Any:
    if "pace_ms" not in type(target).model_fields:  # a plugin kind without pacing runs unpaced
        return target
    return target.model_copy(update={"pace_ms": ms})


def with_pace(config: Config, ms: float | None) -> Config:
    if ms is None:
        return config
    suites = {}
    for name, s in config.suites.items():
        update: dict[str, Any] = {"target": _paced(s.target, ms)}
        if s.arms:
            update["arms"] = [a.model_copy(update={"target": _paced(a.target, ms)}) for a in s.arms]
        suites[name] = s.model_copy(update=update)
    return config.model_copy(update={"suites": suites})


def pacing(config: Config) -> dict[str, float]:
    """`suite` (or `suite/arm`) → pace_ms of each paced target, for the run's record."""
    out: dict[str, float] = {}
    for name, s in config.suites.items():
        for arm, target in s.arm_targets():
            ms = getattr(target, "pace_ms", None)
            if ms:
                out[name if arm == "default" and not s.arms else f"{name}/{arm}"] = ms
    return out
