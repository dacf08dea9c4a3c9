"""What a suite requires of a run (`[suites.S.require]`), checked before anything is spent.

Each unmet requirement is one line naming the suite (or the dataset file and line) and the
way to meet it, and exit 2: a run that would not count is refused, not run and discounted
later. `check_run` is called with the plan, before the first call; `check_cases` by
`evalh validate` and `check_run` alike, so a fixture missing a key is refused without
running anything.

Judge ≠ subject where the subject is only known from its reply: a Python or HTTP target
that reports the model it used (`TargetOutput.model`). The first call of every judged suite
is made alone (`FirstReply`): the other cases wait for it, its model is compared with every
judge's, and a match stops the run at once — exit 2, one line, nothing sent after that one
reply, nothing written — with or without `judge_not_subject` (which also refuses
`--allow-self-judge`). A later reply naming a judge's model makes that judge's scores
`judge_error` from then on (docs/running.md, "The product's model").

`methodology = "bias-aware"` (`evalh.methodology_spec.METHODOLOGIES`) is a named preset of
these requirements; its refusals name it.
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
    case_claims = req.claims is not None and not req.claims.text_path.startswith("output")
    if not req.required_paths and not schemas and not req.digests and not case_claims:
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
        problem = exact_text_problem(req, parts, with_output=False)
        if problem is not None:
            raise RequirementNotMet(f"{pos}: case {case.id!r}: {problem} (suite {suite.name!r})")


def exact_text_problem(req: Any, parts: dict[str, Any], *, with_output: bool) -> str | None:
    """What is wrong with the texts `require.digests` and `require.claims` name, or None.
    `parts`: `input`, `expected`, `metadata` (and `output` when `with_output`); claims over
    the output are checked only `with_output` (on each reply), those over the case only
    without it (by `evalh validate` and before the run)."""
    from evalh.spans import SpanError, check_digest, checked_claims

    def at(path: str) -> Any:
        root, _, rest = path.partition(".")
        value = pick(parts.get(root), rest or None)
        return None if value is MISSING else value

    if not with_output:
        for d in req.digests:
            found = at(d.path)
            tables = found if isinstance(found, list) else [found]
            for i, t in enumerate(tables):
                where = f"{d.path}[{i}]" if isinstance(found, list) else d.path
                if not isinstance(t, dict):
                    return f"{where}: not a table with `{d.text}` and `{d.sha256}` (require.digests)"
                try:
                    check_digest(t.get(d.text), t.get(d.sha256), f"{where}.{d.sha256}")
                except SpanError as exc:
                    return f"{exc} (require.digests)"
    claims = req.claims
    if claims is not None and claims.text_path.startswith("output") == with_output:
        try:
            checked_claims(at(claims.path), at(claims.text_path), claims.path, claims.text_path)
        except SpanError as exc:
            return f"{exc} (require.claims)"
    return None


# --------------------------------------------------------------------------- the run


def _why(req: Any, key: str) -> str:
    """The requirement's name as a refusal line ends with it."""
    if req.methodology:
        return f"methodology {req.methodology!r}: require.{key}"
    return f"require.{key}"


def _check_judges(plan: SuitePlan, req: Any) -> None:
    """Blind, calibrated, distinct: what the suite's judges must be (each refusal one line)."""
    from evalh.scorers.judge_base import repeated_models
    from evalh.scorers.judge_config import JudgeConfigBase

    name = plan.name
    for scorer in plan.scorers:
        cfg = scorer.config
        if not isinstance(cfg, JudgeConfigBase):
            continue
        shown = cfg.display_name
        reference = getattr(cfg, "reference_field", None)
        if req.blind and reference:
            raise RequirementNotMet(f"suite {name!r} requires blind judging: judge {shown!r} is shown reference "
                                    f"material (reference_field = {reference!r}); show it only the "
                                    f"output and its expected keywords ({_why(req, 'blind')})")
        if req.calibrated and "calibration" in type(cfg).model_fields and getattr(cfg, "calibration", None) is None:
            raise RequirementNotMet(f"suite {name!r} requires calibration first: judge {shown!r} has no "
                                    f"`calibration` dataset of known verdicts ({_why(req, 'calibrated')})")
        repeated = repeated_models(cfg.models())
        if req.distinct_judges and repeated:
            raise RequirementNotMet(f"suite {name!r} requires distinct judge models: judge {shown!r} names "
                                    f"{', '.join(repr(m) for m in repeated)} more than once; a panel votes with "
                                    f"different models ({_why(req, 'distinct_judges')})")


def _check_request(suite: SuiteConfig, repeats: int, *, named: Sequence[str] | None, label: str | None,
                   allow_self_judge: bool, destination_named: bool) -> None:
    """What the command line must give a suite (named, repeats, label, destination, no
    self-judging): known before any case is planned or generated."""
    req = suite.require
    if req is None:
        return
    if req.explicit and suite.name not in (named or ()):
        raise RequirementNotMet(f"suite {suite.name!r} runs only when named: evalh run --suite "
                                f"{suite.name} ({_why(req, 'explicit')})")
    if req.min_repeats is not None and repeats < req.min_repeats:
        raise RequirementNotMet(f"suite {suite.name!r} requires at least {req.min_repeats} repeats, "
                                f"got {repeats}: pass --repeats {req.min_repeats} or more "
                                f"({_why(req, 'min_repeats')})")
    if req.label and not (label or "").strip():
        raise RequirementNotMet(f"suite {suite.name!r} requires a run label: pass --label "
                                f"({_why(req, 'label')})")
    if req.destination and not destination_named:
        raise RequirementNotMet(f"suite {suite.name!r} requires a named output destination: pass --runs-dir, "
                                f"set $EVAL_RUNS_DIR or [evalh] runs_dir ({_why(req, 'destination')})")
    if req.judge_not_subject and allow_self_judge:
        raise RequirementNotMet(f"suite {suite.name!r} requires judge ≠ subject: "
                                f"--allow-self-judge is refused ({_why(req, 'judge_not_subject')})")


def check_request(
    config: Config, suites: Sequence[str] | None, *, repeats: int | None, label: str | None,
    allow_self_judge: bool, destination_named: bool, dry_run: bool = False,
) -> None:
    """`check_run`'s command-line part, before cases are generated (`[suites.S.generate]`
    spends on a model): a run the requirements refuse spends nothing."""
    from evalh.core.run.plan import select_suites

    chosen, _ = select_suites(config, list(suites) if suites else None, require_credentials=not dry_run)
    for suite in chosen:
        _check_request(suite, repeats if repeats is not None else suite.repeats, named=suites, label=label,
                       allow_self_judge=allow_self_judge, destination_named=destination_named)


def check_run(
    config: Config, plans: Sequence[SuitePlan], *, named: Sequence[str] | None, label: str | None,
    allow_self_judge: bool = False, destination_named: bool = True,
) -> None:
    """Refuse the run (exit 2, one line) when a suite's requirements are not met.
    `destination_named`: the runs directory was named (`--runs-dir`, `$EVAL_RUNS_DIR` or
    `[evalh] runs_dir`), not the implicit default."""
    for plan in plans:
        suite = plan.config
        req = suite.require if suite is not None else None
        if suite is None or req is None:
            continue
        _check_request(suite, plan.repeats, named=named, label=label, allow_self_judge=allow_self_judge,
                       destination_named=destination_named)
        # a preset asks judge ≠ subject of the suites that are judged; a suite's own
        # `judge_not_subject = true` also asks that it be judged
        if req.judge_not_subject and not req.methodology and not judge_models(plan):
            raise RequirementNotMet(f"suite {suite.name!r} requires judge ≠ subject and has no judge "
                                    "(require.judge_not_subject)")
        _check_judges(plan, req)
        check_cases(config, suite, plan.cases, plan.dataset.path)


def check_rejudge(config: Config, plans: Sequence[SuitePlan], chosen: Sequence[str], *,
                  allow_self_judge: bool) -> None:
    """`evalh rejudge`'s part of the requirements: the new run is judged by today's judges,
    so each chosen suite's judge requirements hold as on a run (no `--allow-self-judge`
    under `judge_not_subject`; blind, calibrated, distinct), before any judge call; and,
    with or without `require`, a judge of the subject's model is refused as `evalh run`
    refuses it — before the new run exists, not as a failed document."""
    from evalh.scorers.judge_base import JudgeScorerBase, SelfJudgeRefused

    for plan in plans:
        if plan.name not in chosen or allow_self_judge:
            continue
        for scorer in plan.scorers:
            judge = getattr(scorer, "inner", scorer)
            if not isinstance(judge, JudgeScorerBase):
                continue
            for subject in filter(None, plan.subject_models):
                models = judge.self_judged(subject)
                if models:
                    raise SelfJudgeRefused(f"suite {plan.name!r}: " + judge.refusal(subject, models))
    for plan in plans:
        suite = config.suites.get(plan.name)
        req = suite.require if suite is not None else None
        if suite is None or req is None or plan.name not in chosen:
            continue
        if req.judge_not_subject and allow_self_judge:
            raise RequirementNotMet(f"suite {suite.name!r} requires judge ≠ subject: "
                                    f"--allow-self-judge is refused ({_why(req, 'judge_not_subject')})")
        _check_judges(plan, req)


def judge_models(plan: SuitePlan) -> list[str]:
    out: list[str] = []
    for scorer in plan.scorers:
        models = getattr(scorer.config, "models", None)
        if callable(models):
            out.extend(models())
    return out


# --------------------------------------------------------------------------- the first reply


def _subject_from_reply(suite: SuitePlan) -> bool:
    """Whether some arm's subject is known only from its reply: a live target without a
    configured model (a Python or HTTP product). A model target's model is checked against
    the judges' before the run, and a batched one sends no call alone: neither is held."""
    from evalh.core.run.sources import LiveSource

    for arm in suite.arms:
        if not isinstance(arm.source, LiveSource):
            continue  # batched, stored or not built: no first call to hold
        config = getattr(arm.source.target, "config", None)
        if not getattr(config, "model", None):
            return True
    return False


class FirstReply:
    """Per judged suite: holds every call but the first until the first reply's model is
    checked against the judges' (judge ≠ subject, with or without `require`)."""

    def __init__(self) -> None:
        self._gates: dict[str, asyncio.Event] = {}
        self._first_taken: set[str] = set()
        self._judged: dict[str, bool] = {}

    def _held(self, suite: SuitePlan) -> bool:
        if getattr(suite, "stored", None) is not None:  # a rejudge replays outputs: nothing is sent
            return False
        if suite.name not in self._judged:
            self._judged[suite.name] = bool(judge_models(suite)) and _subject_from_reply(suite)
        return self._judged[suite.name]

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
