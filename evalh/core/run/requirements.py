"""What a suite requires of a run (`[suites.S.require]`), checked before anything is spent.

Each unmet requirement is one line naming the suite (or the dataset file and line) and the
way to meet it, and exit 2: a run that would not count is refused, not run and discounted
later. `check_run` is called with the plan, before the first call; `check_cases` by
`evalh validate` and `check_run` alike, so a fixture missing a key is refused without
running anything.

Judge ≠ subject where the subject is only known from its reply: a Python or HTTP target
that reports the model it used (`TargetOutput.model`). With `judge_not_subject = true` the
suite's first call is made alone (`FirstReply`): the other cases wait for it, its model is
compared with every judge's, and a match stops the run at once — exit 2, one line, nothing
sent after that one reply, nothing written. Without the requirement a reported model that is
a judge's makes that judge's scores `judge_error` from then on (docs/running.md, "The
product's model"), and the run goes on.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh.errors import ConfigError, EvalhError
from evalh.fields import MISSING, pick

if TYPE_CHECKING:
    from evalh.config import Config, SuiteConfig
    from evalh.core.run.plan import SuitePlan
    from evalh.models import Case
    from evalh.targets.base import TargetOutput


class RequirementNotMet(EvalhError):
    """A suite's `[suites.S.require]` is not met by this run (exit 2)."""


# --------------------------------------------------------------------------- cases


def _schema(config: Config, suite: SuiteConfig, which: str) -> dict[str, Any] | None:
    req = suite.require
    assert req is not None
    inline = getattr(req, f"{which}_schema")
    path = getattr(req, f"{which}_schema_path")
    if inline is not None and path is not None:
        raise ConfigError(f"{config.path}: suites.{suite.name}.require: give `{which}_schema` or "
                          f"`{which}_schema_path`, not both")
    if path is not None:
        file = config.resolve(path)
        try:
            inline = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{config.path}: suites.{suite.name}.require.{which}_schema_path: "
                              f"file not found: {path}") from None
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{config.path}: suites.{suite.name}.require.{which}_schema_path: "
                              f"{path}: not a JSON schema: {exc}") from None
    if inline is None:
        return None
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(inline)
    except jsonschema.SchemaError as exc:
        raise ConfigError(f"{config.path}: suites.{suite.name}.require.{which}_schema: "
                          f"invalid schema: {exc.message}") from None
    return dict(inline)


def _positions(path: Path, shown: str, n: int) -> list[str]:
    """`file:line` (JSONL) or `file: item i` (a JSON array) of each case, in file order."""
    from evalh.datasets import case_positions

    try:
        out = case_positions(path, shown)
    except Exception:  # the dataset loaded already; a re-read that fails names no line
        return [shown] * n
    return out if len(out) == n else [shown] * n


def check_cases(config: Config, suite: SuiteConfig, cases: Sequence[Case], dataset_path: Path | None = None) -> None:
    """Every case has the suite's required paths and conforms to its schemas; the first
    that does not is refused with its file and line."""
    req = suite.require
    if req is None:
        return
    schemas = {w: s for w in ("input", "expected") if (s := _schema(config, suite, w)) is not None}
    if not req.required_paths and not schemas:
        return
    positions = _positions(dataset_path or config.resolve(suite.dataset), suite.dataset, len(cases))
    validators = {}
    if schemas:
        import jsonschema

        validators = {w: jsonschema.Draft202012Validator(s) for w, s in schemas.items()}
    for pos, case in zip(positions, cases, strict=True):
        parts = {"input": case.input, "expected": case.expected,
                 "metadata": case.metadata.model_dump(mode="json")}
        for path in req.required_paths:
            root, _, rest = path.partition(".")
            if pick(parts[root], rest or None) is MISSING:
                raise RequirementNotMet(f"{pos}: case {case.id!r} has no {path} "
                                        f"(suite {suite.name!r} requires it: require.required_paths)")
        for which, validator in validators.items():
            error = next(iter(sorted(validator.iter_errors(parts[which]), key=lambda e: list(e.path))), None)
            if error is not None:
                where = ".".join([which, *map(str, error.path)])
                raise RequirementNotMet(f"{pos}: case {case.id!r}: {where}: {error.message} "
                                        f"(suite {suite.name!r}: require.{which}_schema)")


# --------------------------------------------------------------------------- the run


def check_run(
    config: Config, plans: Sequence[SuitePlan], *, named: Sequence[str] | None, label: str | None,
    allow_self_judge: bool = False,
) -> None:
    """Refuse the run (exit 2, one line) when a suite's requirements are not met."""
    for plan in plans:
        suite = plan.config
        req = suite.require if suite is not None else None
        if suite is None or req is None:
            continue
        if req.explicit and suite.name not in (named or ()):
            raise RequirementNotMet(f"suite {suite.name!r} runs only when named: evalh run --suite "
                                    f"{suite.name} (require.explicit)")
        if req.min_repeats is not None and plan.repeats < req.min_repeats:
            raise RequirementNotMet(f"suite {suite.name!r} requires at least {req.min_repeats} repeats, "
                                    f"got {plan.repeats}: pass --repeats {req.min_repeats} or more "
                                    "(require.min_repeats)")
        if req.label and not (label or "").strip():
            raise RequirementNotMet(f"suite {suite.name!r} requires a run label: pass --label "
                                    "(require.label)")
        if req.judge_not_subject and allow_self_judge:
            raise RequirementNotMet(f"suite {suite.name!r} requires judge ≠ subject: "
                                    "--allow-self-judge is refused (require.judge_not_subject)")
        if req.judge_not_subject and not judge_models(plan):
            raise RequirementNotMet(f"suite {suite.name!r} requires judge ≠ subject and has no judge "
                                    "(require.judge_not_subject)")
        check_cases(config, suite, plan.cases, plan.dataset.path)


def judge_models(plan: SuitePlan) -> list[str]:
    out: list[str] = []
    for scorer in plan.scorers:
        models = getattr(scorer.config, "models", None)
        if callable(models):
            out.extend(models())
    return out


# --------------------------------------------------------------------------- the first reply


class FirstReply:
    """Per suite with `require.judge_not_subject`: holds every call but the first until the
    first reply's model is checked, and checks every reply's reported model."""

    def __init__(self) -> None:
        self._gates: dict[str, asyncio.Event] = {}
        self._first_taken: set[str] = set()

    def _held(self, suite: SuitePlan) -> bool:
        req = getattr(getattr(suite, "config", None), "require", None)
        return bool(req is not None and req.judge_not_subject and getattr(suite, "stored", None) is None)

    async def before_call(self, suite: SuitePlan) -> None:
        if not self._held(suite):
            return
        gate = self._gates.setdefault(suite.name, asyncio.Event())
        if suite.name not in self._first_taken:
            self._first_taken.add(suite.name)
            return
        await gate.wait()

    def after_reply(self, suite: SuitePlan, out: TargetOutput | None, allow_self_judge: bool) -> None:
        """Raise `RequirementNotMet` when the reply names a judge's model (the held calls
        stay held: the run stops); else let them go."""
        if out is not None and out.model and not allow_self_judge and self._held(suite):
            from evalh.scorers.judge_base import model_key

            for model in judge_models(suite):
                if model_key(model) == model_key(out.model):
                    raise RequirementNotMet(
                        f"suite {suite.name!r}: the target reported model {out.model!r}, which is "
                        f"judge model {model!r}: a judge must not grade its own output; the run "
                        "stopped at this reply (use another judge model)")
        gate = self._gates.get(suite.name)
        if gate is not None:
            gate.set()
