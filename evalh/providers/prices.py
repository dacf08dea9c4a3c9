"""Default price table (USD per million tokens) and cost lookup.

The defaults are list prices of current Anthropic and OpenAI models (standard tier, no
batch or prompt-cache discounts) as published late 2025; a reply through a batch API
(`batch = true`) costs `BATCH_DISCOUNT` of it (`batch_cost_usd`). Prices change: a `[prices]` table
in evalh.toml overrides any entry, and a model in neither table has an unknown cost
(null, never 0):

    [prices."claude-sonnet-4-5"]
    input = 3.0
    output = 15.0

A dated model id (`claude-sonnet-4-5-20250929`) falls back to its undated alias when only
the alias is priced.
"""

from __future__ import annotations

import re

from evalh.services import Price

_TABLE: dict[str, tuple[float, float]] = {
    # Anthropic
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4-0": (15.0, 75.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4-0": (3.0, 15.0),
    "claude-3-7-sonnet-latest": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-3-5-haiku-latest": (0.8, 4.0),
    "claude-3-haiku-20240307": (0.25, 1.25),
    # OpenAI
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5-nano": (0.05, 0.4),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.4, 1.6),
    "gpt-4.1-nano": (0.1, 0.4),
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.6),
    "o3": (2.0, 8.0),
    "o4-mini": (1.1, 4.4),
}

DEFAULT_PRICES: dict[str, Price] = {
    model: Price(input=i, output=o) for model, (i, o) in _TABLE.items()
}
"""Merged under the config's `[prices]` when a run's services are made (config wins)."""

_DATED = re.compile(r"^(?P<alias>.+?)-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


def merged_prices(configured: dict[str, Price]) -> dict[str, Price]:
    """The defaults overridden by the config's table."""
    return {**DEFAULT_PRICES, **configured}


def price_for(prices: dict[str, Price], model: str | None) -> Price | None:
    """The price of `model`: an exact entry, else its undated alias, else None."""
    if not model:
        return None
    if model in prices:
        return prices[model]
    m = _DATED.match(model)
    return prices.get(m["alias"]) if m else None


def cost_usd(
    prices: dict[str, Price], model: str | None, tokens_in: int | None, tokens_out: int | None
) -> float | None:
    """USD for one reply; None when the model is unpriced or usage is unknown."""
    price = price_for(prices, model)
    if price is None or tokens_in is None or tokens_out is None:
        return None
    return (tokens_in * price.input + tokens_out * price.output) / 1_000_000


BATCH_DISCOUNT = 0.5
"""What a request through a provider's batch API costs, as a share of the list price: both
Anthropic's Message Batches and OpenAI's Batch API bill 50 % of standard input and output."""


def batch_cost_usd(
    prices: dict[str, Price], model: str | None, tokens_in: int | None, tokens_out: int | None
) -> float | None:
    """USD for one reply through a batch API (`BATCH_DISCOUNT` of `cost_usd`); None as there."""
    cost = cost_usd(prices, model, tokens_in, tokens_out)
    return None if cost is None else cost * BATCH_DISCOUNT
