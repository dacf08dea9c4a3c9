"""`type = "judge"`: a language model grades one output against a rubric.

    [[suites.qa.scorers]]
    type = "judge"
    provider = "anthropic"
    model = "claude-haiku-4-5"
    rubric = "The answer states the capital and nothing false."
    scale = "ordinal"                 # binary | ordinal | verdicts
    judge_repeats = 2                 # double judging: a split is low_confidence
    reference_field = "input.reference"
    calibration = { dataset = "datasets/qa_calibration.jsonl", min_accuracy = 0.8 }

Bias controls (docs/judges.md): the judge sees the output, the rubric and the material the
suite names — never the case's expected value; a judge that is the model under test is
refused unless `--allow-self-judge`; several judges vote and a tie is `no_majority`;
`judge_repeats = 2` flags splits; a calibration dataset is judged first and a judge below
`min_accuracy` is refused (exit 2). A judge that cannot judge (transport failure, reply cut
at max_tokens, no rationale after re-asking, split panel) gives a Score with `error`: the
case is `judge_error`, counted apart, never a failure of the product.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh.fields import MISSING, pick
from evalh.models import Case, Score
from evalh.scorers.base import ScoreContext, ScorerConfig, SuiteView
from evalh.scorers.judge_base import ClientFactory, JudgeScorerBase
from evalh.scorers.judge_config import JudgeConfig
from evalh.scorers.judge_prompt import pointwise_prompt

if TYPE_CHECKING:
    from evalh.services import RunServices

CONFIGS: dict[str, type[ScorerConfig]] = {"judge": JudgeConfig}


class JudgeScorer(JudgeScorerBase):
    """Pointwise judge. `judge(case, output, …)` is the one path for cases and calibration."""

    config: JudgeConfig

    def prompt(self, case: Case, output: Any) -> tuple[str, str]:
        """(system, user) the judge sees for this case: blind to `case.expected`."""
        c = self.config
        return pointwise_prompt(
            rubric=self.rubric, scale=self.scale, case=case, output=output,
            show_input=c.show_input, input_field=c.input_field,
            reference_field=c.reference_field, keywords_field=c.keywords_field,
        )

    def estimate(self, case: Case, output: Any = MISSING) -> list[tuple[str, int, int]]:
        """For `evalh run --dry-run` and the budget: (model, prompt tokens, max output tokens)
        of each request judging this case — the prompt without the output (unknown before
        the run) unless `output` is given, re-asks not counted."""
        shown = ""
        if output is not MISSING:
            shown = pick(output, self.config.output_field)
            if shown is MISSING:
                return []  # judged without a request (see `judge`)
        system, user = self.prompt(case, shown)
        tokens_in = (len(system) + len(user)) // 4
        return [(cfg.model, tokens_in, cfg.max_tokens or self.config.max_tokens)
                for cfg in self.judge_configs for _ in range(self.config.judge_repeats)]

    def estimate_setup(self) -> list[tuple[str, int, int]]:
        """The requests made before the suite's first case (calibration: each item of the
        calibration dataset judged as a case is), for the estimate; [] without one."""
        if self.config.calibration is None:
            return []
        from evalh.scorers.judge_calibration import calibration_items

        items = calibration_items(self, self.config.calibration, self.root)
        return [req for case, output, _ in items for req in self.estimate(case, output)]

    async def judge(self, case: Case, output: Any, services: RunServices, attempt: int = 0) -> Score:
        shown = pick(output, self.config.output_field)
        if shown is MISSING:
            return Score(scorer=self.name, value=0.0, passed=False,
                         rationale=f"output has no field {self.config.output_field!r}")
        system, user = self.prompt(case, shown)
        panel = await self.ask_panel(services, system, user, attempt)
        return self.to_score(panel)

    async def score(self, case: Case, output: Any, ctx: ScoreContext) -> Score:
        refused = self.self_judge_score(ctx.subject_model, ctx.services)
        if refused is not None:
            return refused
        return await self.judge(case, output, ctx.services, ctx.attempt)

    async def prepare(self, suite: SuiteView, services: RunServices) -> dict[str, Any] | None:
        info = await super().prepare(suite, services) or {}
        if self.config.calibration is not None:
            from evalh.scorers.judge_calibration import calibrate, recorded_calibration

            # a resumed run keeps the calibration it made (evalh.core.run.resume puts it there)
            recorded = recorded_calibration(suite.details.get(self.name))
            info["calibration"] = recorded or await calibrate(self, self.config.calibration, services)
        return info


def build(config: ScorerConfig, root: Path | None = None, client_factory: ClientFactory | None = None) -> JudgeScorer:
    assert isinstance(config, JudgeConfig)
    return JudgeScorer(config, root or Path.cwd(), client_factory)
