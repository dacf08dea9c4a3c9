"""`type = "pairwise_judge"`: which arm answered better, judged in both orders.

For every case and attempt, each arm's output is compared with the baseline arm's output
(the suite's `baseline_arm`, else its first arm), once with the baseline shown first and
once with it shown second. A pair whose winner changes with the order is `inconsistent`
(position bias), not a win for either arm. After the suite the details hold per arm the
wins, losses, ties, inconsistent pairs and judge errors, and
`consistency_under_order_swap` = consistent pairs / pairs judged in both orders (null over
zero), flagged when below `min_consistency`.

Every pair records both outputs' lengths in characters (`lengths`, arm → chars, measured
before any control), so a verbosity bias (the longer output wins) is measured whatever is
judged (`verbosity_bias` in `evalh.core.analysis.suite_metrics`). `length_control = "truncate"` cuts
the longer output to the shorter one's length, at the last word boundary within it, before
judging (`length_control` per pair: which arm was cut, from and to how many characters).

Comparing needs both arms' outputs, so the judging happens in `finalize`, after the suite,
where no per-case budget check stops it: the pairs are admitted against the run's budget
together before any is sent (their estimate held until their replies are charged). When
they do not fit, none is sent, they keep their `pending` verdict (a resume judges them, and
pays for each once) and `BudgetExceeded` stops the run as `partial`.
The per-case Score of this scorer holds the pair's outcome for the record; it gives no
pass/fail of its own (and never changes a case's status), so a suite needs another scorer
that does — a suite with only a pairwise judge is refused.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh.errors import BudgetExceeded, ConfigError
from evalh.fields import MISSING, pick
from evalh.models import Case, CaseMetadata, CaseResult, Score
from evalh.scorers.base import ScoreContext, ScorerConfig, SuiteView
from evalh.scorers.judge_base import ClientFactory, JudgeScorerBase, find_score
from evalh.scorers.judge_config import PairwiseJudgeConfig
from evalh.scorers.judge_panel import Panel
from evalh.scorers.judge_prompt import pairwise_prompt

if TYPE_CHECKING:
    from evalh.services import RunServices


CONFIGS: dict[str, type[ScorerConfig]] = {"pairwise_judge": PairwiseJudgeConfig}
PENDING = "pending"
BASELINE = "baseline"


class PairwiseJudgeScorer(JudgeScorerBase):
    config: PairwiseJudgeConfig

    async def score(self, case: Case, output: Any, ctx: ScoreContext) -> Score:
        refused = self.self_judge_score(ctx.subject_model, ctx.services)
        if refused is not None:
            return refused
        return Score(scorer=self.name, abstained=True, verdict=PENDING,
                     rationale="compared with the other arms after the suite (see the suite details)")

    def estimate_arm(self, case: Case, arm: str, baseline: str) -> list[tuple[str, int, int]]:
        """For `evalh run --dry-run`: the requests judging one (case, arm, attempt) item after
        the suite — none for the baseline arm; for another arm, its pair in both orders,
        each judge `judge_repeats` times; the prompt without the outputs (unknown before
        the run), re-asks not counted."""
        if arm == baseline:
            return []
        c = self.config
        system, user = pairwise_prompt(rubric=self.rubric, scale=self.scale, case=case, first="", second="",
                                       show_input=c.show_input, input_field=c.input_field)
        tokens_in = (len(system) + len(user)) // 4
        return [(cfg.model, tokens_in, cfg.max_tokens or c.max_tokens)
                for cfg in self.judge_configs for _ in range(c.judge_repeats) for _order in ("ab", "ba")]

    def incomplete(self, score: Score | None) -> bool:
        """For rejudge: a pair not judged, or judged with an error."""
        return score is None or score.verdict == PENDING or bool(score.details.get("error"))

    async def prepare(self, suite: SuiteView, services: RunServices) -> dict[str, Any] | None:
        if len(suite.arms) < 2:
            raise ConfigError(f"suite {suite.name!r}: scorer {self.name!r} compares arms, and the suite has one")
        if not any(not isinstance(s, PairwiseJudgeScorer) for s in suite.scorers):
            raise ConfigError(
                f"suite {suite.name!r}: scorer {self.name!r} ranks arms but gives no pass/fail of its "
                "own: add a scorer that does (for example a `judge`)"
            )
        return await super().prepare(suite, services)

    # ------------------------------------------------------------------ after the suite

    async def _order(self, services: RunServices, row: CaseResult, first: Any, second: Any) -> Panel:
        case = Case(id=row.case_id, input=row.input, metadata=CaseMetadata.model_validate(row.metadata))
        c = self.config
        system, user = pairwise_prompt(rubric=self.rubric, scale=self.scale, case=case, first=first,
                                       second=second, show_input=c.show_input, input_field=c.input_field)
        return await self.ask_panel(services, system, user, row.attempt)

    def _pair_hold(self, services: RunServices, base: CaseResult, other: CaseResult) -> tuple[int, float | None]:
        """(tokens, cost) the pair may use at most: both orders, each judge `judge_repeats`
        times, prompt characters / 4 plus the whole `max_tokens` (cost None if unpriced)."""
        a, b = pick(base.output, self.config.output_field), pick(other.output, self.config.output_field)
        if a is MISSING or b is MISSING:
            return 0, 0.0  # judged without a request
        case = Case(id=other.case_id, input=other.input, metadata=CaseMetadata.model_validate(other.metadata))
        c = self.config
        system, user = pairwise_prompt(rubric=self.rubric, scale=self.scale, case=case, first=a, second=b,
                                       show_input=c.show_input, input_field=c.input_field)
        tokens_in = (len(system) + len(user)) // 4
        tokens, costs = 0, []
        for cfg in self.judge_configs:
            out, n = cfg.max_tokens or c.max_tokens, 2 * c.judge_repeats
            tokens += n * (tokens_in + out)
            one = services.cost_of(cfg.model, tokens_in, out)
            costs.append(None if one is None else n * one)
        return tokens, None if None in costs else sum(x for x in costs if x is not None)

    async def _pair(self, services: RunServices, base: CaseResult, other: CaseResult) -> dict[str, Any]:
        """Judge one pair in both orders; the record kept on the other arm's row."""
        a, b = pick(base.output, self.config.output_field), pick(other.output, self.config.output_field)
        if a is MISSING or b is MISSING:
            return {"vs": base.arm, "error": f"an output has no field {self.config.output_field!r}"}
        a, b, lengths, control = length_controlled(a, b, base.arm, other.arm, self.config.length_control)
        ab, ba = await asyncio.gather(self._order(services, base, a, b), self._order(services, base, b, a))
        # Positions → arms: in `ab` the baseline is A; in `ba` it is B.
        to_arm = [{"A": base.arm, "B": other.arm, "tie": "tie"}, {"A": other.arm, "B": base.arm, "tie": "tie"}]
        record: dict[str, Any] = {"vs": base.arm, "lengths": lengths, "length_control": control}
        winners = []
        for key, panel, mapping in (("baseline_first", ab, to_arm[0]), ("baseline_second", ba, to_arm[1])):
            record[key] = {**panel.details(), "verdict": panel.verdict,
                           "rationale": panel.judgment.rationale if panel.judgment else panel.error}
            winners.append(mapping.get(panel.verdict or "", None) if panel.judgment else None)
            if panel.judgment is None:
                record["error"] = panel.error
        if "error" not in record:
            record["consistent"] = winners[0] == winners[1]
            record["winner"] = winners[0] if record["consistent"] else None
        return record

    def _write(self, score: Score, record: dict[str, Any], arm: str) -> None:
        if "error" in record:
            outcome = "judge_error"
        elif not record["consistent"]:
            outcome = "inconsistent"
        else:
            outcome = "tie" if record["winner"] == "tie" else "win" if record["winner"] == arm else "loss"
        score.verdict = outcome
        score.details = {**record, "outcome": outcome}
        score.rationale = (record.get("error") or
                           f"{outcome} against {record['vs']}: " + str(record["baseline_first"]["rationale"]))

    def _length_note(self, rows: Any) -> str:
        """What length control did over the suite: the method and the pairs it cut."""
        if self.config.length_control == "none":
            return "none (lengths recorded per pair, not normalised)"
        cut = sum(1 for r in rows if (s := find_score(r, self.name)) is not None
                  and (s.details.get("length_control") or {}).get("cut"))
        return f"truncate: the longer output cut to the shorter's length at a word boundary ({cut} pairs cut)"

    async def finalize(self, suite: SuiteView, results: list[CaseResult], services: RunServices) -> dict[str, Any] | None:
        baseline = suite.arms[0].name
        rows = {(r.case_id, r.arm, r.attempt): r for r in results}
        limit = asyncio.Semaphore(max(1, suite.concurrency))
        todo, tally = [], {a.name: dict.fromkeys(("win", "loss", "tie", "inconsistent", "judge_error"), 0)
                           for a in suite.arms[1:]}

        async def one(base: CaseResult, other: CaseResult, score: Score) -> None:
            async with limit:
                self._write(score, await self._pair(services, base, other), other.arm)

        pairs: list[tuple[CaseResult, CaseResult]] = []

        for (case_id, arm, attempt), other in rows.items():
            base = rows.get((case_id, baseline, attempt))
            score = find_score(other, self.name)
            if arm == baseline and score is not None:
                score.verdict = BASELINE
                score.rationale = "the baseline arm: the other arms' outputs are compared with this one"
                continue
            if base is None or score is None or other.status == "errored" or base.status == "errored":
                continue
            if self.incomplete(score) or score.details.get("vs") != baseline:
                todo.append(one(base, other, score))
                pairs.append((base, other))
        # all the pairs or none: the verdicts live in the run document only, so pairs judged
        # before a stop would be judged (and paid) again by the resume
        holds = [self._pair_hold(services, base, other) for base, other in pairs]
        tokens = sum(t for t, _ in holds)
        cost = None if any(c is None for _, c in holds) else sum(c or 0.0 for _, c in holds)
        stopped = services.budget.admit(
            tokens=tokens, cost_usd=cost, what=f"pairwise judging of scorer {self.name!r} ({len(pairs)} pairs)",
        ) if pairs else None
        if stopped:
            for job in todo:
                job.close()  # never awaited
        else:
            try:
                await asyncio.gather(*todo)
            finally:
                services.budget.release(tokens=tokens, cost_usd=cost)
        for (_, arm, _), other in rows.items():
            score = find_score(other, self.name)
            if arm in tally and score is not None and score.verdict in tally[arm]:
                tally[arm][score.verdict] += 1
        judged = sum(t["win"] + t["loss"] + t["tie"] + t["inconsistent"] for t in tally.values())
        consistent = sum(t["win"] + t["loss"] + t["tie"] for t in tally.values())
        consistency = consistent / judged if judged else None
        per_arm = {}
        for arm, t in tally.items():
            decided = t["win"] + t["loss"] + t["tie"]
            per_arm[arm] = {**t, "win_rate": t["win"] / decided if decided else None, "decided": decided}
        info = {
            "baseline_arm": baseline, "pairs_judged": judged, "consistent": consistent,
            "inconsistent": judged - consistent,
            "judge_error": sum(t["judge_error"] for t in tally.values()),
            "consistency_under_order_swap": consistency,
            "position_bias_flag": consistency is not None and consistency < self.config.min_consistency,
            "min_consistency": self.config.min_consistency, "arms": per_arm,
            "length_control": self._length_note(rows.values()),
        }
        if stopped:
            info["stopped"] = stopped
            raise BudgetExceeded(stopped, info)
        return info


def _cut(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at the last word boundary within them."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    if not text[limit].isspace() and " " in head.strip():
        head = head[: head.rstrip().rfind(" ")] if not head.endswith(" ") else head
    return head.rstrip()


def length_controlled(a: Any, b: Any, arm_a: str, arm_b: str, method: str) -> tuple[Any, Any, dict[str, int], dict[str, Any]]:
    """Both outputs' lengths in characters (always, before any control), and with `method =
    "truncate"` the longer output cut to the shorter one's length at a word boundary (the
    outputs are then judged as text). Returns (a, b, lengths, what was done)."""
    from evalh.fields import as_text

    ta, tb = as_text(a), as_text(b)
    lengths = {arm_a: len(ta), arm_b: len(tb)}
    if arm_a == arm_b:
        lengths = {arm_a: len(ta)}
    if method != "truncate" or len(ta) == len(tb):
        return a, b, lengths, {"method": method}
    limit = min(len(ta), len(tb))
    if len(ta) > len(tb):
        cut_a = _cut(ta, limit)
        return cut_a, b, lengths, {"method": "truncate", "cut": arm_a, "from_chars": len(ta), "to_chars": len(cut_a)}
    cut_b = _cut(tb, limit)
    return a, cut_b, lengths, {"method": "truncate", "cut": arm_b, "from_chars": len(tb), "to_chars": len(cut_b)}


def build(config: ScorerConfig, root: Path | None = None, client_factory: ClientFactory | None = None) -> PairwiseJudgeScorer:
    assert isinstance(config, PairwiseJudgeConfig)
    return PairwiseJudgeScorer(config, root or Path.cwd(), client_factory)
