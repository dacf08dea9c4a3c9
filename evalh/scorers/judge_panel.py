"""Asking judges: one call with bounded re-asks, and a panel that votes.

`ask` sends one request and reads the reply on a `Scale`. Failures are named, never
guessed around:

- transport failure after the provider's retries → `judge call failed: …`;
- reply stopped at max_tokens → `truncated: …`, with what parsed before the cut kept in
  `salvaged` (a cut reply is never called "unparseable");
- reply without JSON, without a rationale or with a verdict outside the scale → asked
  again (the reply and what was wrong with it are shown to the judge), `reply_retries`
  times; then `invalid reply: …`.

`run_panel` asks every judge `repeats` times. Each judge's repeats give its vote (their
most common label; a split is `low_confidence` and goes to the worse label); the panel's
verdict is the most common vote, and a tie between votes is the explicit `no_majority`.
A panel with a failed judge gives no verdict: the judgment is incomplete.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from evalh.models import Score
from evalh.providers.base import ChatRequest, ChatResponse, ProviderClient, ProviderError
from evalh.scorers.judge_reply import ReplyInvalid, extract_json, salvage_json
from evalh.scorers.judge_scale import NO_MAJORITY, Judgment, Scale


@dataclass
class Usage:
    """Tokens and cost of judge calls. Cost is null when any call's cost is unknown."""

    calls: int = 0
    cached: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = 0.0

    def add_response(self, r: ChatResponse) -> None:
        self.calls += 1
        self.cached += bool(r.cached)
        self.tokens_in += r.tokens_in or 0
        self.tokens_out += r.tokens_out or 0
        cost = 0.0 if r.cached else r.cost_usd
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + cost

    def add(self, other: Usage) -> None:
        self.calls += other.calls
        self.cached += other.cached
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        if self.cost_usd is None or other.cost_usd is None:
            self.cost_usd = None
        else:
            self.cost_usd += other.cost_usd

    def as_dict(self) -> dict[str, Any]:
        cost = None if self.cost_usd is None else round(self.cost_usd, 8)
        return {"calls": self.calls, "cached": self.cached, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "cost_usd": cost}


@dataclass
class Call:
    """One judge asked once (re-asks included)."""

    model: str
    judgment: Judgment | None = None
    error: str | None = None
    truncated: bool = False
    salvaged: Any = None
    reasks: int = 0
    usage: Usage = field(default_factory=Usage)


async def ask(client: ProviderClient, request: ChatRequest, scale: Scale, reply_retries: int) -> Call:
    """Ask one judge; see the module docstring for how failures are named."""
    call = Call(model=request.model)
    messages = list(request.messages)
    problem = ""
    for n in range(reply_retries + 1):
        call.reasks = n
        try:
            resp = await client.chat(replace(request, messages=messages))
        except ProviderError as exc:
            call.error = f"judge call failed: {exc}"
            return call
        except Exception as exc:  # an SDK error the client did not wrap: still the judge's
            call.error = f"judge call failed: {type(exc).__name__}: {exc}"
            return call
        call.usage.add_response(resp)
        try:
            call.judgment = scale.read(extract_json(resp.text))
            call.truncated = resp.truncated
            return call
        except ReplyInvalid as exc:
            problem = str(exc)
        if resp.truncated:
            call.truncated = True
            call.salvaged = scale.salvage(salvage_json(resp.text))
            kept = "; kept what parsed before the cut" if call.salvaged else ""
            call.error = (f"truncated: the judge's reply stopped at max_tokens={request.max_tokens} "
                          f"before it was complete{kept} (raise max_tokens)")
            return call
        messages = [
            *request.messages,
            {"role": "assistant", "content": resp.text.strip() or "(empty reply)"},
            {"role": "user", "content": f"That reply cannot be used: {problem}. "
                                        f"Reply again with only the JSON object:\n{scale.shape}"},
        ]
    call.error = f"invalid reply after {reply_retries + 1} attempts: {problem}"
    return call


@dataclass
class Vote:
    """One judge's vote: its repeats combined."""

    model: str
    calls: list[Call]
    judgment: Judgment | None = None
    low_confidence: bool = False
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"model": self.model}
        if self.judgment is not None:
            j = self.judgment
            d.update(verdict=j.label, value=j.value, passed=j.passed, rationale=j.rationale)
            if j.items:
                d["criteria"] = j.items
        if self.error:
            d["error"] = self.error
        if len(self.calls) > 1:
            d["repeats"] = [
                {"verdict": c.judgment.label, "rationale": c.judgment.rationale} if c.judgment
                else {"error": c.error} for c in self.calls
            ]
            d["low_confidence"] = self.low_confidence
        salvaged = [c.salvaged for c in self.calls if c.salvaged]
        if salvaged:
            d["salvaged"] = salvaged[0]
        if any(c.truncated for c in self.calls):
            d["truncated"] = True
        reasks = sum(c.reasks for c in self.calls)
        if reasks:
            d["reasks"] = reasks
        return d


def combine(model: str, calls: list[Call], scale: Scale) -> Vote:
    vote = Vote(model=model, calls=calls)
    failed = next((c for c in calls if c.judgment is None), None)
    if failed is not None:
        vote.error = failed.error
        return vote
    judgments = [c.judgment for c in calls if c.judgment is not None]
    counts = Counter(j.label for j in judgments)
    top = max(counts.values())
    tied = [label for label, n in counts.items() if n == top]
    label = min(tied, key=scale.rank)
    vote.judgment = next(j for j in judgments if j.label == label)
    vote.low_confidence = len(counts) > 1
    return vote


@dataclass
class Panel:
    """What a panel of judges decided about one thing judged."""

    votes: list[Vote]
    judgment: Judgment | None = None
    verdict: str | None = None
    """The winning label, `no_majority`, or None when a judge failed."""
    error: str | None = None
    usage: Usage = field(default_factory=Usage)

    @property
    def low_confidence(self) -> bool:
        return any(v.low_confidence for v in self.votes)

    @property
    def truncated(self) -> bool:
        return any(c.truncated for v in self.votes for c in v.calls)

    def details(self) -> dict[str, Any]:
        d: dict[str, Any] = {"judges": [v.as_dict() for v in self.votes], "usage": self.usage.as_dict()}
        if self.low_confidence:
            d["low_confidence"] = True
        if self.truncated:
            d["truncated"] = True
        return d


Build = Callable[[Any, int], ChatRequest]
"""(judge model config, repeat index) → the request to send."""


async def run_panel(
    judges: Sequence[tuple[Any, ProviderClient]],
    build: Build,
    scale: Scale,
    *,
    repeats: int = 1,
    reply_retries: int = 2,
) -> Panel:
    """Ask every judge `repeats` times (all at once; the providers' limits pace them)."""
    tasks = [
        ask(client, build(cfg, r), scale, reply_retries) for cfg, client in judges for r in range(repeats)
    ]
    calls = await asyncio.gather(*tasks)
    votes = [
        combine(cfg.model, list(calls[i * repeats:(i + 1) * repeats]), scale)
        for i, (cfg, _) in enumerate(judges)
    ]
    panel = Panel(votes=votes)
    for c in calls:
        panel.usage.add(c.usage)
    failed = [(i, v) for i, v in enumerate(votes) if v.judgment is None]
    if failed:
        i, v = failed[0]
        who = f"judge {i + 1} of {len(votes)} ({v.model})" if len(votes) > 1 else f"judge {v.model}"
        panel.error = f"{who}: {v.error}"
        return panel
    counts = Counter(v.judgment.label for v in votes if v.judgment is not None)
    top = max(counts.values())
    winners = [label for label, n in counts.items() if n == top]
    if len(winners) > 1:
        split = ", ".join(f"{label}: {n}" for label, n in counts.most_common())
        panel.verdict = NO_MAJORITY
        panel.error = f"no_majority: the judges split ({split})"
        return panel
    panel.verdict = winners[0]
    panel.judgment = next(v.judgment for v in votes if v.judgment and v.judgment.label == winners[0])
    return panel


def panel_score(panel: Panel, *, scorer: str, models: list[str], rubric_sha256: str | None,
                extra: dict[str, Any] | None = None) -> Score:
    """The Score of a panel: its verdict, or the judge's failure as `error` (judge_error)."""
    details = {**panel.details(), **(extra or {})}
    common: dict[str, Any] = dict(scorer=scorer, judge_model=", ".join(models), rubric_sha256=rubric_sha256,
                                  details=details)
    if panel.judgment is None:
        rationale = panel.error
        return Score(verdict=panel.verdict, error=panel.error, rationale=rationale, **common)
    j = panel.judgment
    return Score(value=j.value, passed=j.passed, verdict=j.label, rationale=j.rationale, **common)
