"""Shared services a run hands to its targets and scorers: prices, budget, cache, limits.

One `RunServices` per run. Targets and judges reach providers through it, so budgets,
the response cache and rate limits apply to every call the run makes. It sits in the
lowest layer (it imports nothing of evalh), so targets, scorers and providers can take it
without importing `evalh.core` or `evalh.config` (docs/architecture.md).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field


class Price(BaseModel):
    """USD per million tokens (`[prices."MODEL"]` in evalh.toml)."""

    model_config = ConfigDict(extra="forbid")
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset({"input", "output"})

    input: float = Field(ge=0)
    """USD per million input (prompt) tokens."""
    output: float = Field(ge=0)
    """USD per million output (completion) tokens."""


@dataclass
class Budget:
    """Cost and token budget for one run. When reached, no new case starts."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    cost_usd: float = 0.0
    tokens: int = 0
    unpriced: int = 0
    """Replies that used tokens but have no cost (a model missing from the price table)."""
    reserved_tokens: int = 0
    reserved_cost_usd: float = 0.0
    """Room held by requests admitted (`admit`) and not answered yet."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def admit(self, *, tokens: int, cost_usd: float | None, what: str) -> str | None:
        """Hold room for requests about to be sent (their estimate: prompt characters / 4
        plus the whole `max_tokens`), or say why they would overrun the budget. For the
        calls evalh makes before or after a suite's cases (judge calibration), which no
        per-case check stops; `release` gives the room back once they are charged."""
        reason = self.exhausted()
        if reason:
            return f"{reason}, before {what}"
        with self._lock:
            if self.max_tokens is not None and self.tokens + self.reserved_tokens + tokens > self.max_tokens:
                return (f"token budget reached: {self.tokens + self.reserved_tokens} of {self.max_tokens} "
                        f"tokens spent or held, and {what} may use up to {tokens} more")
            if self.max_cost_usd is not None:
                if cost_usd is None:
                    return (f"cost budget cannot be kept: {what} would call a model at no known price "
                            "(a model missing from [prices] in evalh.toml)")
                if self.cost_usd + self.reserved_cost_usd + cost_usd > self.max_cost_usd:
                    return (f"cost budget reached: ${self.cost_usd + self.reserved_cost_usd:.4f} of "
                            f"${self.max_cost_usd:.4f} spent or held, and {what} may cost up to ${cost_usd:.4f} more")
            self.reserved_tokens += tokens
            self.reserved_cost_usd += cost_usd or 0.0
        return None

    def release(self, *, tokens: int, cost_usd: float | None) -> None:
        with self._lock:
            self.reserved_tokens -= tokens
            self.reserved_cost_usd -= cost_usd or 0.0

    def charge(
        self, *, cost_usd: float | None, tokens_in: int | None, tokens_out: int | None,
        resumed: bool = False,
    ) -> None:
        """Book a reply. `resumed`: a result a resumed run already has (its spend counts; an
        unpriced one does not stop the run again before anything new is spent)."""
        with self._lock:
            self.cost_usd += cost_usd or 0.0
            self.tokens += (tokens_in or 0) + (tokens_out or 0)
            if cost_usd is None and (tokens_in or tokens_out) and not resumed:
                self.unpriced += 1

    def exhausted(self) -> str | None:
        """The reason the budget is spent (or can no longer be kept), or None."""
        if self.max_cost_usd is not None and self.unpriced:
            # Counting an unpriced reply as $0 would let a cost budget be overrun unseen.
            return (f"cost budget cannot be kept: {self.unpriced} repl"
                    f"{'y' if self.unpriced == 1 else 'ies'} used tokens at no known price "
                    "(a model missing from [prices] in evalh.toml, or a target reporting tokens "
                    "without its model)")
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return f"cost budget reached: ${self.cost_usd:.4f} of ${self.max_cost_usd:.4f}"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"token budget reached: {self.tokens} of {self.max_tokens} tokens"
        return None


@dataclass
class RunServices:
    root: Path
    prices: dict[str, Price] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)
    cache: Any = None
    """A response cache (evalh.cache.ResponseCache) or None when disabled."""
    limits: dict[str, Any] = field(default_factory=dict)
    """Per-provider limiters, created on first use; their settled values go in the run."""
    allow_self_judge: bool = False
    max_retry_wait_s: float = 120.0
    """The longest a request waits for an endpoint's rate limit (`[evalh] max_retry_wait_s`):
    a longer `retry-after` fails the requests it would hold, at once."""
    providers: dict[str, Any] = field(default_factory=dict)
    """Provider clients of this run (evalh.providers.get_provider), closed at its end."""
    pacers: dict[int, Any] = field(default_factory=dict)
    """A paced target's pacer (evalh.targets.pacing), by its config, made at its first call."""
    journal: Any = None
    """The run's journal (evalh.journal.Journal) once the runner opened it: batch clients note
    the batches they submit there (evalh.providers.batch), so a resumed run re-attaches."""

    def cost_of(self, model: str | None, tokens_in: int | None, tokens_out: int | None) -> float | None:
        """Cost from the price table; unknown model → None, never 0."""
        if model is None or model not in self.prices or tokens_in is None or tokens_out is None:
            return None
        p = self.prices[model]
        return (tokens_in * p.input + tokens_out * p.output) / 1_000_000
