"""The scorer interface: (case, output) -> Score."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from evalh.models import Case, Score

if TYPE_CHECKING:
    from evalh.models import CaseResult
    from evalh.services import RunServices
    from evalh.targets.base import TargetOutput


class ScorerConfig(BaseModel):
    """Base of every scorer type's config; `SNAPSHOT` is the allowlist for the run document."""

    model_config = ConfigDict(extra="forbid")
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset()
    SNAPSHOT_IF_SET: ClassVar[frozenset[str]] = frozenset({"advisory"})

    type: str
    name: str | None = None
    """Name shown in results; defaults to the type."""
    advisory: bool | None = None
    """`true`: the scorer's results are recorded and reported but never decide a case's
    status (so never an exit code); a suite whose every scorer is advisory is an advisory
    suite (`judgeUse: advisory-only`, `releaseDecision: not-assessed`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # every scorer type records `advisory` in the run's snapshot, when it is set
        cls.SNAPSHOT = frozenset(cls.SNAPSHOT) | {"advisory"}
        cls.SNAPSHOT_IF_SET = frozenset(cls.SNAPSHOT_IF_SET) | {"advisory"}

    @property
    def display_name(self) -> str:
        return self.name or self.type


@dataclass
class ScoreContext:
    run_id: str
    suite: str
    arm: str
    attempt: int
    target_output: TargetOutput
    services: RunServices
    subject_model: str | None = None


class Scorer(Protocol):
    """What a scorer type's `build(config, root)` returns (built-in or plugin).

    `score` is required. The hooks below are optional: subclass `Scorer` to inherit their
    no-op defaults and override the ones you need (docs/plugins.md). A default does exactly
    what a scorer without the hook gets.
    """

    config: ScorerConfig
    kind: ClassVar[Literal["deterministic", "judge"]]
    """`judge` scorers' failures are `judge_error` (never the product's), and they are
    refused on their own subject's model."""

    async def score(self, case: Case, output: Any, ctx: ScoreContext) -> Score: ...

    async def prepare(self, suite: SuiteView, services: RunServices) -> dict[str, Any] | None:
        """Before the suite's first case (calibration, a client): suite details to record
        under the scorer's name, or None."""
        return None

    async def finalize(self, suite: SuiteView, results: list[CaseResult], services: RunServices) -> dict[str, Any] | None:
        """After the suite's last case, with every result (suite-level figures, or a pass
        over all results): details to record under the scorer's name, or None."""
        return None

    def guard_self_judge(self, suite: SuiteView, services: RunServices) -> dict[str, Any] | None:
        """Before the suite runs: raise `EvalhError` to refuse judging its own subject,
        or return details to record; None when there is nothing to say."""
        return None

    def incomplete(self, score: Score | None) -> bool:
        """Whether `evalh rejudge` judges this stored score again (default: missing or
        failed)."""
        return score is None or score.error is not None

    # For `evalh run --dry-run` and budgets: the requests a scorer makes, as
    # (model, prompt tokens, max output tokens). None: the scorer cannot say.

    def estimate(self, case: Case, output: Any = None) -> list[tuple[str, int, int]] | None:
        """The requests judging `case` (its output unknown before the run)."""
        return None

    def estimate_arm(self, case: Case, arm: str, baseline: str) -> list[tuple[str, int, int]] | None:
        """The requests judging `case` in `arm` (against `baseline`), where that differs by
        arm (pairwise judges); None: `estimate` decides."""
        return None

    def requests_per_case(self) -> int | None:
        """How many requests a case costs when their tokens are unknown (external scorers)."""
        return None

    def estimate_setup(self) -> list[tuple[str, int, int]]:
        """The requests made before the suite's first case (calibration)."""
        return []


class ArmView(Protocol):
    @property
    def name(self) -> str: ...


class SuiteView(Protocol):
    """What a scorer's `prepare(suite, services)` and `finalize(suite, results, services)`
    hooks read of the suite being run: `evalh.core.run.plan.SuitePlan` is one, and scorers do not
    import it (they sit below `evalh.core`; docs/architecture.md)."""

    @property
    def name(self) -> str: ...
    @property
    def arms(self) -> Sequence[ArmView]: ...
    @property
    def scorers(self) -> Sequence[Scorer]: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def details(self) -> dict[str, Any]:
        """Suite details already recorded (a resumed run's calibration)."""
        ...
    @property
    def subject_models(self) -> list[str]:
        """The models the suite's arms ask (for judge ≠ subject)."""
        ...


class DeterministicScorer(Scorer):
    """Base of the deterministic scorers: a sync `check` wrapped as the async `score`."""

    kind: ClassVar[Literal["deterministic"]] = "deterministic"

    def __init__(self, config: Any) -> None:
        self.config = config

    def _score(self, **kw: Any) -> Score:
        return Score(scorer=self.config.display_name, **kw)

    def _actual(self, output: Any) -> Any:
        """output[field] (the whole output without `field`), or a failing Score saying the
        field is missing: a missing field is the product's failure, never an abstention."""
        from evalh.fields import MISSING, pick

        actual = pick(output, self.config.field)
        if actual is MISSING:
            return self._score(value=0.0, passed=False, rationale=f"output has no field {self.config.field!r}")
        return actual

    def _operands(self, case: Case, output: Any) -> tuple[Any, Any] | Score:
        """(output[field], expected[expected_field]), or a failing Score naming what is missing."""
        from evalh.fields import MISSING, pick

        actual = self._actual(output)
        if isinstance(actual, Score):
            return actual
        expected = pick(case.expected, self.config.expected_field)
        if expected is MISSING:
            return self._score(
                value=0.0, passed=False,
                rationale=f"case expected has no field {self.config.expected_field!r}",
            )
        return actual, expected

    async def score(self, case: Case, output: Any, ctx: ScoreContext) -> Score:
        return self.check(case, output)

    def check(self, case: Case, output: Any) -> Score:  # pragma: no cover - abstract
        raise NotImplementedError
