"""promptfoo's Python provider for the import fixtures: `answers.answer`, the version from
the provider's `config.version`; tokens counted in words and a cost, as a priced provider
reports them."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from answers import ProductDown, answer  # noqa: E402


def call_api(prompt: str, options: dict, context: dict) -> dict:
    version = (options.get("config") or {}).get("version", "v1")
    try:
        reply = answer(prompt, version)
    except ProductDown as exc:
        return {"error": f"ProductDown: {exc}"}
    tokens_in, tokens_out = len(prompt.split()), len(reply.split())
    return {"output": reply, "tokenUsage": {"prompt": tokens_in, "completion": tokens_out, "total": tokens_in + tokens_out},
            "cost": (tokens_in + 2 * tokens_out) / 1_000_000}
