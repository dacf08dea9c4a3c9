"""What a plan will cost before anything is spent (`evalh run --dry-run`).

Per suite, in the order the runner takes them: cases × arms × repeats, the requests that
makes (one target call per item, plus what judge scorers ask), and an estimate of tokens
and cost from the price table. The estimate is honest about its basis:

- prompt tokens: a target's `estimate_tokens(case) -> int` when it has one; else, for a
  model target that can `render(case)` its template, the rendered prompt's characters / 4;
  else the case input's JSON characters / 4. Targets that are not models (a Python
  callable, an HTTP endpoint without `model`) have unknown tokens: null, never 0.
- output tokens: the target's `max_tokens`, an upper bound (replies are usually shorter).
- judge requests: a scorer's `estimate(case) -> [(model, prompt_tokens, max_output_tokens)]`
  (one tuple per request it will make for the case), or `estimate_arm(case, arm,
  baseline_arm)` for one arm's item (a pairwise judge: none for the baseline arm, both
  orders for another), when it has one; else its
  `requests_per_case() -> int` (tokens then unknown); deterministic scorers make none.
- set-up requests: what a scorer sends before the suite's first case (judge calibration),
  from its `estimate_setup() -> [(model, prompt_tokens, max_output_tokens)]`; counted once
  per suite, also when resuming (calibration runs again).
- cost: tokens × the run's price table (defaults merged with `[prices]`); requests of an
  unpriced model are counted in `unpriced`, never as 0. A request through a batch API (a
  target or judge with `batch = true`) costs the batch price (`providers.prices.
  BATCH_DISCOUNT` of list): counted in `batch_requests`, and what it saves against the list
  price in `batch_saving_usd`.

Pure: reads the plan, calls nothing, writes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from evalh.core.run.plan import RunPlan, SuitePlan
from evalh.core.run.sources import is_batched
from evalh.models import Case, Run
from evalh.scorers.base import Scorer
from evalh.targets.base import Target

CHARS_PER_TOKEN = 4


@dataclass
class Tally:
    """Requests, tokens and cost of some items. `None` = unknown, never 0."""

    requests: int = 0
    requests_unknown: int = 0
    """Items whose scorers cannot say how many requests they make."""
    not_estimated: int = 0
    """Requests without a token estimate (targets that are not models)."""
    tokens_in: int | None = None
    tokens_out_max: int | None = None
    cost_usd: float | None = None
    unpriced: int = 0
    """Requests with a token estimate but no price (a model missing from the price table)."""
    batch_requests: int = 0
    """Requests through a provider's batch API (`batch = true`), at the batch price."""
    batch_saving_usd: float | None = None
    """What those requests cost less than at list price (None: none is priced)."""

    def add(self, model: str | None, tokens_in: int | None, tokens_out: int | None, plan: RunPlan,
            *, batch: bool = False) -> None:
        self.requests += 1
        self.batch_requests += batch
        if tokens_in is None and tokens_out is None:
            self.not_estimated += 1
            return
        self.tokens_in = (self.tokens_in or 0) + (tokens_in or 0)
        self.tokens_out_max = (self.tokens_out_max or 0) + (tokens_out or 0)
        cost = plan.services.cost_of(model, tokens_in or 0, tokens_out or 0)
        if cost is None:
            self.unpriced += 1
            return
        if batch:
            from evalh.providers.prices import BATCH_DISCOUNT

            saving = cost * (1 - BATCH_DISCOUNT)
            self.batch_saving_usd = (self.batch_saving_usd or 0.0) + saving
            cost -= saving
        self.cost_usd = (self.cost_usd or 0.0) + cost

    def merge(self, other: Tally) -> None:
        self.requests += other.requests
        self.requests_unknown += other.requests_unknown
        self.not_estimated += other.not_estimated
        self.unpriced += other.unpriced
        self.batch_requests += other.batch_requests
        for name in ("tokens_in", "tokens_out_max", "cost_usd", "batch_saving_usd"):
            theirs = getattr(other, name)
            if theirs is not None:
                setattr(self, name, (getattr(self, name) or 0) + theirs)


@dataclass
class SuiteEstimate:
    name: str
    regime: str
    tier: int
    cases: int
    arms: list[str]
    repeats: int
    items: int
    """(case, arm, attempt) triples still to run."""
    done: int
    """Triples already finished (resume)."""
    concurrency: int
    timeout_s: float
    target: Tally = field(default_factory=Tally)
    judges: Tally = field(default_factory=Tally)
    setup: Tally = field(default_factory=Tally)
    """Requests sent before the first case (judge calibration)."""
    basis: list[str] = field(default_factory=list)
    """How the tokens were estimated, one phrase per target or scorer."""
    detectable: dict[str, Any] | None = None
    """A stochastic suite: the pass-rate drop its planned cases and repeats catch with 80 %
    power (`noise.detectable_pass_rate`), with the noise of the baseline runs when BASELINE
    names runs with repeated cases, else at the worst case; None otherwise."""
    budget: bool = False
    """In rounds (`--until-decided`): the figures are the budget's, every case at the
    attempts of the last look (`repeats` is the most any case gets), an upper bound."""
    until_decided: dict[str, float] | None = None
    """A suite the run takes in rounds (`--until-decided`) against BASELINE: the calls an
    unchanged candidate is expected to spend (`compare.noise.expected_unchanged`)."""

    @property
    def total(self) -> Tally:
        t = Tally()
        t.merge(self.target)
        t.merge(self.judges)
        t.merge(self.setup)
        return t


@dataclass
class PlanEstimate:
    run_id: str
    seed: int
    suites: list[SuiteEstimate]
    skipped: list[tuple[str, list[str]]] = field(default_factory=list)

    @property
    def total(self) -> Tally:
        t = Tally()
        for s in self.suites:
            t.merge(s.total)
        return t

    def to_dict(self) -> dict[str, Any]:
        suites = []
        for s in self.suites:
            d = asdict(s)
            d["total"] = asdict(s.total)
            suites.append(d)
        return {
            "dry_run": True, "run_id": self.run_id, "seed": self.seed, "suites": suites,
            "total": asdict(self.total), "items": sum(s.items for s in self.suites),
            "skipped": [{"suite": n, "needs": m} for n, m in self.skipped],
            "notes": {
                "tokens_in": "estimated: rendered prompt (or case input) characters / 4 unless the target estimates",
                "tokens_out_max": "upper bound: max_tokens per request",
                "cost_usd": "from the price table; null when nothing is priced",
                "batch_saving_usd": "what batch = true saves against list prices (batch APIs bill 50 %); "
                                    "null when nothing batched is priced",
            },
        }


def _chars_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _prompt_tokens(target: Target, case: Case) -> tuple[int, str]:
    own = target.estimate_tokens(case)  # the Target hooks (evalh.targets.base)
    if own is not None:
        return int(own), "target's own estimate"
    text = target.prompt_text(case)
    if text is not None:
        return _chars_tokens(text), "rendered template chars/4"
    return _chars_tokens(orjson.dumps(case.input).decode()), "case input chars/4"


def _max_tokens(target: Target) -> int | None:
    return target.max_output_tokens()


def estimate_suite(plan: RunPlan, suite: SuitePlan) -> SuiteEstimate:
    done = {(r.case_id, r.arm, r.attempt) for r in plan.carried.get(suite.name, [])}
    est = SuiteEstimate(
        name=suite.name, regime=suite.regime, tier=suite.tier,
        cases=len(suite.cases), arms=[a.name for a in suite.arms], repeats=suite.repeats,
        items=0, done=0, concurrency=suite.concurrency, timeout_s=suite.timeout_s,
        budget=suite.attempts is not None,
    )
    bases: dict[str, None] = {}
    for arm in suite.arms:
        target = arm.target
        model = target.config.model_id() if target is not None else None
        batch = target is not None and is_batched(target.config)
        for i, case in enumerate(suite.cases):
            planned = suite.repeats if suite.attempts is None else min(suite.attempts[i], suite.repeats)
            todo = sum((case.id, arm.name, attempt) not in done for attempt in range(planned))
            est.done += planned - todo
            if not todo:
                continue
            est.items += todo
            if model is not None and target is not None:
                prompt, how = _prompt_tokens(target, case)
                bases[f"arm {arm.name}: {how}; output ≤ max_tokens" + ("; batch price" if batch else "")] = None
                for _ in range(todo):
                    est.target.add(model, prompt, _max_tokens(target), plan, batch=batch)
            else:
                if target is not None:
                    bases[f"arm {arm.name}: not a model target, tokens unknown"] = None
                for _ in range(todo):
                    est.target.add(None, None, None, plan)
            for scorer in suite.scorers:
                _judge_requests(plan, scorer, case, todo, est, bases, arm.name, suite.arms[0].name)
    for scorer in suite.scorers:  # the runner prepares every suite, even one with no item left
        _setup_requests(plan, scorer, est, bases)
    est.basis = list(bases)
    return est


def _judge_requests(
    plan: RunPlan, scorer: Scorer, case: Case, todo: int, est: SuiteEstimate, bases: dict[str, None],
    arm: str, baseline: str,
) -> None:
    name = scorer.config.display_name
    requests = scorer.estimate_arm(case, arm, baseline)  # the Scorer hooks (evalh.scorers.base)
    if requests is None:
        requests = scorer.estimate(case)
    if requests is not None:
        batched = _batched_models(scorer)
        bases[f"scorer {name}: its own estimate" + ("; batch price" if batched else "")] = None
        for _ in range(todo):
            for model, tokens_in, tokens_out in requests:
                est.judges.add(model, tokens_in, tokens_out, plan, batch=model in batched)
        return
    n = scorer.requests_per_case()
    if n is not None:
        if n:
            bases[f"scorer {name}: {n} request(s) per case, tokens unknown"] = None
        for _ in range(todo * n):
            est.judges.add(None, None, None, plan)
    elif scorer.kind == "judge":
        bases[f"scorer {name}: cannot say how many requests it makes"] = None
        est.judges.requests_unknown += todo


def _setup_requests(plan: RunPlan, scorer: Scorer, est: SuiteEstimate, bases: dict[str, None]) -> None:
    requests = scorer.estimate_setup()
    if requests:
        bases[f"scorer {scorer.config.display_name}: {len(requests)} calibration request(s) "
              "before the first case, output given"] = None
    batched = _batched_models(scorer)
    for model, tokens_in, tokens_out in requests:
        est.setup.add(model, tokens_in, tokens_out, plan, batch=model in batched)


def _batched_models(scorer: Scorer) -> set[str]:
    """The models a scorer asks through a batch API (its judges with `batch = true`)."""
    judges = getattr(scorer.config, "judges", None) or []
    return {j.model for j in judges if is_batched(j)}


def estimate_plan(plan: RunPlan, skipped: list[tuple[str, list[str]]] | None = None) -> PlanEstimate:
    """The estimate of every suite of `plan`, in run order."""
    return PlanEstimate(
        run_id=plan.run_id, seed=plan.seed,
        suites=[estimate_suite(plan, s) for s in plan.suites], skipped=list(skipped or []),
    )


def add_detectable(est: PlanEstimate, plan: RunPlan, baseline: Sequence[Run] = (), *,
                   rounds: bool = False, max_attempts: int | None = None) -> None:
    """Set each stochastic suite's `detectable`: the pass-rate drop that its planned cases
    and repeats, compared against `baseline` (the BASELINE runs, pooled) or a run like this
    one, catch with 80 % power at the level the family gives it. The noise is the baseline's
    per-case pass probabilities where it has two attempts of a case or more, else the worst
    case (p = 0.5 on every case, an upper bound of the drop). `rounds` (the run goes in
    rounds against `baseline`): each suite's `until_decided` too, within `max_attempts`."""
    from evalh.config import Thresholds
    from evalh.core.compare.noise import case_variances, detectable_pass_rate
    from evalh.core.stats.power import WORST_CASE_VARIANCE

    stochastic = sum(1 for s in plan.suites if s.regime == "stochastic")
    for suite, e in zip(plan.suites, est.suites, strict=True):
        if suite.regime != "stochastic":
            continue
        th = suite.config.thresholds if suite.config is not None else Thresholds()
        variances, base_attempts = case_variances(baseline, suite.name) if baseline else ([], 0.0)
        bound = not variances
        if bound:
            variances, base_attempts = [WORST_CASE_VARIANCE], float(suite.repeats)
        # in rounds (planned at its budget): the budget's attempts a case, on average
        attempts = (sum(suite.attempts) / len(suite.attempts) if suite.attempts
                    else float(suite.repeats))
        e.detectable = detectable_pass_rate(
            variances, cases=len(suite.cases), base_attempts=base_attempts,
            cand_attempts=attempts, allowance=th.pass_rate_drop, suites=stochastic, bound=bound,
        )
        cfg = suite.config
        if baseline and (rounds or (cfg is not None and cfg.until_decided)):
            from evalh.core.compare.noise import expected_unchanged
            from evalh.datasets import case_ids

            e.until_decided = expected_unchanged(
                baseline, suite.name, th.pass_rate_drop,
                budget=max_attempts or (cfg.max_attempts if cfg is not None else None),
                cases=case_ids(suite.cases), arms=[a.name for a in suite.arms])
