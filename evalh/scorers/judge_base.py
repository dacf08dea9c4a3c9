"""What every judge scorer shares: its clients, its requests, the judge ≠ subject guard,
and the suite-level counts it records after the suite.

Judges reach their models through `evalh.providers.get_provider`, so retries, rate limits,
the response cache and the run's budget apply to them as to model targets (the provider
wrapper charges judge calls to the budget; the runner charges targets). The rubric digest
is each request's `cache_salt`: a changed rubric never reuses a cached verdict.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from evalh.errors import EvalhError, MissingCredentials
from evalh.models import CaseResult, Score
from evalh.providers.base import ChatRequest, ProviderClient, ProviderConfig, ProviderError
from evalh.scorers.base import Scorer
from evalh.scorers.judge_config import JudgeConfigBase, JudgeModel
from evalh.scorers.judge_panel import Panel, Usage, panel_score, run_panel
from evalh.scorers.judge_scale import NO_MAJORITY, Scale

if TYPE_CHECKING:
    from evalh.scorers.base import SuiteView
    from evalh.services import RunServices

ClientFactory = Callable[[ProviderConfig, "RunServices"], ProviderClient]


class SelfJudgeRefused(EvalhError):
    """A judge whose model is the model under test, without --allow-self-judge."""


class CalibrationFailed(EvalhError):
    """The judge's accuracy on its calibration dataset is below `min_accuracy`."""


def _default_factory(config: ProviderConfig, services: RunServices) -> ProviderClient:
    from evalh.providers import get_provider

    return get_provider(config, services)


def model_key(model: str) -> str:
    """A model id without provider prefix, date suffix or `-latest`, for judge ≠ subject:
    `anthropic/claude-x-20250101` and `claude-x` are the same model."""
    m = model.strip().casefold().rsplit("/", 1)[-1]
    m = re.sub(r"[-@]\d{8}$", "", m)
    return re.sub(r"-latest$", "", m)


def repeated_models(models: Iterable[str]) -> list[str]:
    """The models a panel names more than once (as `model_key` compares them), in order."""
    seen: dict[str, int] = {}
    for m in models:
        seen[model_key(m)] = seen.get(model_key(m), 0) + 1
    return [m for m, n in seen.items() if n > 1]


class JudgeScorerBase(Scorer):
    """Base of `judge`, `pairwise_judge` and `citation_judge`."""

    kind: ClassVar[Literal["judge"]] = "judge"
    config: JudgeConfigBase

    def __init__(self, config: JudgeConfigBase, root: Path, client_factory: ClientFactory | None = None) -> None:
        self.config = config
        self.root = root
        self.rubric = config.resolve_rubric(root)
        self.scale: Scale = config.make_scale()
        self.client_factory = client_factory or _default_factory
        self.self_judge_allowed = False
        # Each judge's provider table with the scorer's reply limit unless it sets its own.
        self.judge_configs = [
            j if j.max_tokens is not None else j.model_copy(update={"max_tokens": config.max_tokens})
            for j in config.judges
        ]

    @property
    def name(self) -> str:
        return self.config.display_name

    # ------------------------------------------------------------------ asking

    def clients(self, services: RunServices) -> list[tuple[JudgeModel, ProviderClient]]:
        """Each judge with its client. Raises `MissingCredentials` when a key is unset."""
        out = []
        for cfg in self.judge_configs:
            try:
                out.append((cfg, self.client_factory(cfg, services)))
            except ProviderError as exc:
                raise MissingCredentials(f"scorer {self.name!r}: {exc}") from None
        return out

    def request(self, cfg: JudgeModel, repeat: int, system: str, user: str, attempt: int) -> ChatRequest:
        return ChatRequest(
            model=cfg.model, system=system, messages=[{"role": "user", "content": user}],
            max_tokens=cfg.max_tokens or self.config.max_tokens, temperature=cfg.temperature,
            params=dict(cfg.params), attempt=attempt,
            # The rubric digest keys the cache; the repeat index keeps double judging from
            # collapsing onto one cached reply.
            cache_salt=f"{self.config.rubric_sha256}:{self.config.prompt_sha256}:judge-repeat={repeat}",
        )

    async def ask_panel(self, services: RunServices, system: str, user: str, attempt: int) -> Panel:
        return await run_panel(
            self.clients(services),
            lambda cfg, r: self.request(cfg, r, system, user, attempt),
            self.scale, repeats=self.config.judge_repeats, reply_retries=self.config.reply_retries,
        )

    def to_score(self, panel: Panel, extra: dict[str, Any] | None = None) -> Score:
        extra = dict(extra or {})
        if self.config.prompt_sha256:
            extra["judge_prompt_sha256"] = self.config.prompt_sha256
        if self.self_judge_allowed:
            extra["self_judge"] = True
        return panel_score(panel, scorer=self.name, models=self.config.models(),
                           rubric_sha256=self.config.rubric_sha256, extra=extra)

    # ------------------------------------------------------------------ judge ≠ subject

    def self_judged(self, subject: str | None) -> list[str]:
        """The judge models that are `subject` (empty when none is, or no subject)."""
        if not subject:
            return []
        return [m for m in self.config.models() if model_key(m) == model_key(subject)]

    def refusal(self, subject: str, models: list[str]) -> str:
        return (f"scorer {self.name!r}: judge model {models[0]!r} is the model under test "
                f"({subject!r}); a judge must not grade its own output: use another judge "
                "model, or pass --allow-self-judge (recorded in the run)")

    def guard_self_judge(self, suite: SuiteView, services: RunServices) -> dict[str, Any] | None:
        """Refuse (exit 2) a judge that is one of the suite's target models, unless allowed."""
        subjects = suite.subject_models
        for subject in filter(None, subjects):
            models = self.self_judged(subject)
            if not models:
                continue
            if not services.allow_self_judge:
                raise SelfJudgeRefused(f"suite {suite.name!r}: " + self.refusal(subject, models))
            self.self_judge_allowed = True
            return {"allowed_by": "--allow-self-judge", "subject": subject, "judge_models": models}
        return None

    def self_judge_score(self, subject: str | None, services: RunServices) -> Score | None:
        """Per-case guard (a subject the suite plan did not show): refusal as a judge_error."""
        models = self.self_judged(subject)
        if not models or services.allow_self_judge:
            if models:
                self.self_judge_allowed = True
            return None
        msg = self.refusal(subject or "", models)
        return Score(scorer=self.name, error=msg, rationale=msg, judge_model=", ".join(self.config.models()))

    # ------------------------------------------------------------------ suite hooks

    async def prepare(self, suite: SuiteView, services: RunServices) -> dict[str, Any] | None:
        """Before the suite: fail fast on a missing key, refuse a self-judge, record who judges."""
        self.clients(services)
        info: dict[str, Any] = {
            "judges": self.config.models(), "rubric_sha256": self.config.rubric_sha256,
            "prompt_sha256": self.config.prompt_sha256,
            "scale": self.scale.name, "judge_repeats": self.config.judge_repeats,
        }
        self_judge = self.guard_self_judge(suite, services)
        if self_judge:
            info["self_judge"] = self_judge
        repeated = repeated_models(self.config.models())
        if repeated:  # a panel of one model votes with one model's bias (refused by require.distinct_judges)
            info["panel_not_distinct"] = repeated
        return info

    async def finalize(self, suite: SuiteView, results: list[CaseResult], services: RunServices) -> dict[str, Any] | None:
        """After the suite: how the judge fared (counts with their denominator, usage)."""
        return judge_counts(r_score for r in results if (r_score := find_score(r, self.name)))


def find_score(result: CaseResult, name: str) -> Score | None:
    return next((s for s in result.scores if s.scorer == name), None)


def judge_counts(scores: Iterable[Score]) -> dict[str, Any]:
    """Suite-level figures of one judge scorer: how many judged, failed, split, flagged."""
    scores = list(scores)
    usage = Usage()
    verdicts: Counter[str] = Counter()
    for s in scores:
        u = s.details.get("usage") or {}
        usage.add(Usage(calls=u.get("calls", 0), cached=u.get("cached", 0), tokens_in=u.get("tokens_in", 0),
                        tokens_out=u.get("tokens_out", 0), cost_usd=u.get("cost_usd", 0.0)))
        if s.verdict and s.error is None:
            verdicts[s.verdict] += 1
    return {
        "scored": len(scores),
        "judged": sum(1 for s in scores if s.error is None and not s.abstained),
        "abstained": sum(1 for s in scores if s.error is None and s.abstained),
        "judge_error": sum(1 for s in scores if s.error is not None),
        NO_MAJORITY: sum(1 for s in scores if s.verdict == NO_MAJORITY),
        "truncated": sum(1 for s in scores if s.details.get("truncated")),
        "low_confidence": sum(1 for s in scores if s.details.get("low_confidence")),
        "verdicts": dict(verdicts),
        "usage": usage.as_dict(),
    }
