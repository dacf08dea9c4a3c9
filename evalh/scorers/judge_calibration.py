"""Judge calibration: before a suite, the judge grades a dataset of known answers; its
accuracy is recorded in the suite's details (and so in the run and its reports), and a
judge below `min_accuracy` is refused (exit 2) before it grades a single case.

A calibration case is an ordinary dataset line whose `input` holds the `output` to judge
(the rest of `input` is the case input the judge sees) and whose `expected` is the right
verdict on the judge's scale::

    {"id": "cal.paris", "input": {"question": "Capital of France?", "output": "Paris"},
     "expected": "pass"}

Accuracy is correct / all items: an item the judge could not judge was not judged right.

Calibration requests are the run's like any other: estimated by `--dry-run` (the scorer's
`estimate_setup`), charged to the budget, and admitted against it before they are sent.
Each item holds room in the budget for its estimate (prompt characters / 4 plus the whole
`max_tokens`) until its reply is charged; when the next item does not fit, no further item
is sent and `BudgetExceeded` stops the run as `partial`, before any case. What calibration
used is recorded under `calibration.usage`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from evalh.datasets import load_dataset
from evalh.errors import BudgetExceeded, ConfigError
from evalh.models import Case
from evalh.scorers.judge_base import CalibrationFailed
from evalh.scorers.judge_config import CalibrationConfig, JudgeConfigBase
from evalh.scorers.judge_panel import Usage
from evalh.scorers.judge_scale import ORDINAL_STEPS, Scale, step_label

if TYPE_CHECKING:
    from evalh.models import Score
    from evalh.services import RunServices


class CalibratedJudge(Protocol):
    """What calibration uses of a judge (`evalh.scorers.judge.JudgeScorer` is one; this
    module does not import it, so the two do not import each other)."""

    @property
    def config(self) -> JudgeConfigBase: ...
    @property
    def scale(self) -> Scale: ...
    @property
    def name(self) -> str: ...
    def estimate(self, case: Case, output: Any) -> list[tuple[str, int, int]]: ...
    async def judge(self, case: Case, output: Any, services: RunServices, attempt: int = 0) -> Score: ...

MAX_MISSES = 20
"""Misjudged items listed by id in the run (the count is always complete)."""


def expected_label(scorer: CalibratedJudge, value: Any) -> str | None:
    """The label a calibration case's `expected` names on the scorer's scale, or None."""
    if isinstance(value, bool):
        value = "pass" if value else "fail"
    if isinstance(value, int | float):
        step = next((s for s in ORDINAL_STEPS if abs(s - value) < 1e-9), None)
        value = step_label(step) if step is not None else None
    if isinstance(value, str):
        value = value.strip().casefold() if value.strip().casefold() in ("pass", "fail") else value.strip()
    return value if value in scorer.scale.labels else None


def _cases(scorer: CalibratedJudge, path: Path, shown: str) -> list[tuple[Case, Any, str]]:
    dataset = load_dataset(path, display=shown)
    out = []
    for case in dataset.cases:
        if not isinstance(case.input, dict) or "output" not in case.input:
            raise ConfigError(f"{shown}: case {case.id!r}: a calibration case's input needs an `output` to judge")
        label = expected_label(scorer, case.expected)
        if label is None:
            known = ", ".join(scorer.scale.labels)
            raise ConfigError(f"{shown}: case {case.id!r}: expected {case.expected!r} is not a verdict "
                              f"of this judge's scale ({known})")
        rest = {k: v for k, v in case.input.items() if k != "output"}
        out.append((case.model_copy(update={"input": rest}), case.input["output"], label))
    if not out:
        raise ConfigError(f"{shown}: the calibration dataset has no cases")
    return out


def calibration_items(scorer: CalibratedJudge, cal: CalibrationConfig, root: Path) -> list[tuple[Case, Any, str]]:
    """(case, output to judge, right verdict) of each calibration item."""
    path = Path(cal.dataset)
    path = path if path.is_absolute() else root / path
    return _cases(scorer, path, cal.dataset)


def recorded_calibration(details: dict[str, Any] | None) -> dict[str, Any] | None:
    """A finished calibration in a scorer's suite details (a resumed run's, from its journal
    or document), or None: one a budget stopped part-way is made again."""
    info = (details or {}).get("calibration")
    if isinstance(info, dict) and "accuracy" in info and "stopped" not in info:
        return info
    return None


async def _judge_within_budget(
    scorer: CalibratedJudge, case: Case, output: Any, services: RunServices, hold: tuple[int, float | None]
) -> Any:
    try:
        return await scorer.judge(case, output, services)
    finally:
        services.budget.release(tokens=hold[0], cost_usd=hold[1])


async def calibrate(scorer: CalibratedJudge, cal: CalibrationConfig, services: RunServices) -> dict[str, Any]:
    """Judge the calibration dataset; the figures for the run, `CalibrationFailed`, or
    `BudgetExceeded` when the budget has no room for the next item (none is sent then)."""
    items = calibration_items(scorer, cal, services.root)
    tasks = []
    stopped: str | None = None
    for case, output, _ in items:
        requests = scorer.estimate(case, output)
        tokens = sum(tin + tout for _, tin, tout in requests)
        costs = [services.cost_of(model, tin, tout) for model, tin, tout in requests]
        cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
        stopped = services.budget.admit(
            tokens=tokens, cost_usd=cost,
            what=f"judge calibration of scorer {scorer.name!r} (item {case.id!r})",
        )
        if stopped:
            break
        tasks.append(asyncio.ensure_future(
            _judge_within_budget(scorer, case, output, services, (tokens, cost))))
    # the items admitted are all answered (and charged) before the run stops
    scores = await asyncio.gather(*tasks)
    usage = Usage()
    for score in scores:
        u = score.details.get("usage") or {}
        usage.add(Usage(calls=u.get("calls", 0), cached=u.get("cached", 0), tokens_in=u.get("tokens_in", 0),
                        tokens_out=u.get("tokens_out", 0), cost_usd=u.get("cost_usd", 0.0)))
    if stopped:
        raise BudgetExceeded(stopped, {"dataset": cal.dataset, "n": len(items), "judged": len(scores),
                                       "stopped": stopped, "usage": usage.as_dict()})
    models = scorer.config.models()
    per_judge = [0] * len(models)
    correct, errors = 0, 0
    misses: list[dict[str, Any]] = []
    for (case, _, label), score in zip(items, scores, strict=True):
        if score.error is not None:
            errors += 1
        if score.error is None and score.verdict == label:
            correct += 1
        elif len(misses) < MAX_MISSES:
            misses.append({"id": case.id, "expected": label, "got": score.verdict, "error": score.error})
        for i, vote in enumerate(score.details.get("judges", [])):
            per_judge[i] += vote.get("verdict") == label and "error" not in vote
    n = len(items)
    accuracy = correct / n
    info = {
        "dataset": cal.dataset, "n": n, "correct": correct, "judge_error": errors,
        "accuracy": accuracy, "min_accuracy": cal.min_accuracy,
        "per_judge": [{"model": m, "correct": c, "accuracy": c / n} for m, c in zip(models, per_judge, strict=True)],
        "misses": misses, "usage": usage.as_dict(),
    }
    if accuracy < cal.min_accuracy:
        raise CalibrationFailed(
            f"scorer {scorer.name!r}: judge calibration accuracy {accuracy:.2f} ({correct} of {n} on "
            f"{cal.dataset}, {errors} judge errors) is below min_accuracy {cal.min_accuracy:.2f}: "
            "the judge is refused"
        )
    return info
