"""answerer — answers a question from numbered sources, behind the citecheck gate.

The product asks a Claude model through the official `anthropic` SDK (as a real product
would: `ANTHROPIC_API_KEY`, optional `ANTHROPIC_BASE_URL`), runs the answer through
:func:`examples.citecheck.check`, and:

- delivers it when the gate accepts it;
- when the gate rejects it, asks once more with the gate's reasons as feedback, and
  delivers the second answer only if the gate accepts that one;
- fails closed: an answer cut at ``max_tokens``, a second rejection, or an upstream failure
  (errors after the SDK's own retries) delivers nothing — never an unchecked answer.

Money. A call is *billed* when the provider returned a reply (with its ``usage``); a
failed call (5xx, 429, dropped connection, timeout) is not. The result reports the tokens
of billed calls only, so evalh's cost is the provider spend — including the spend on
answers the gate then rejected, because the provider charged for them. What the product
*books* to its user is another matter: only a delivered answer is booked
(``"booked": true``); a rejected or unavailable answer books $0 (``"booked": false``).

Entry points for evalh: :func:`live` (the real API) and :func:`scenario` (a loopback mock
provider with scripted replies, started in-process on first use unless
``EVALH_SCENARIOS_BASE_URL`` points at one, e.g. ``evalh mock-provider --script
datasets/scenarios.script.json``).
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalh.targets import TargetOutput
from examples.citecheck import check

MODEL = "claude-haiku-4-5"
MAX_TOKENS = 400
SYSTEM = (
    "You answer questions using only the numbered sources you are given. End every "
    "sentence that states a figure or a quote with the marker of the source it comes from, "
    "like [1]. Copy figures and quotes exactly. If the sources do not answer, say so."
)
FEEDBACK = (
    "Your answer was rejected by the sourcing gate:\n{reasons}\n"
    "Rewrite it so that every figure and quote appears in the source it cites."
)
SCRIPT = Path(__file__).resolve().parent.parent / "datasets" / "scenarios.script.json"


def prompt(question: str, sources: Mapping[str, str]) -> str:
    listed = "\n".join(f"[{n}] {text}" for n, text in sources.items())
    return f"Sources:\n{listed}\n\nQuestion: {question}"


def _text(message: Any) -> str:
    return "".join(b.text for b in message.content if getattr(b, "type", None) == "text")


async def answer(
    question: str,
    sources: Mapping[str, str],
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    model: str = MODEL,
    max_retries: int = 2,
    timeout_s: float = 60.0,
) -> TargetOutput:
    """Answer `question` from `sources`; see the module docstring for the contract."""
    import anthropic

    trace: list[dict[str, Any]] = []
    tokens_in = tokens_out = 0
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt(question, sources)}]
    reasons: list[str] = []

    def result(status: str, text: str | None, attempts: int) -> TargetOutput:
        return TargetOutput(
            output={"status": status, "answer": text, "attempts": attempts,
                    "booked": status == "answered", "reasons": reasons},
            trace=trace, tokens_in=tokens_in, tokens_out=tokens_out, model=model,
        )

    client = _client(base_url, api_key, max_retries, timeout_s)  # one per event loop
    for attempt in (1, 2):
        try:
            message = await client.messages.create(
                model=model, max_tokens=MAX_TOKENS, system=SYSTEM, messages=messages
            )
        except anthropic.APIError as exc:
            status = getattr(exc, "status_code", None)
            trace.append({"tool": "model", "attempt": attempt, "error": type(exc).__name__,
                          "status": status})
            reasons = [f"upstream failure: {type(exc).__name__}" + (f" (HTTP {status})" if status else "")]
            return result("unavailable", None, attempt)
        tokens_in += message.usage.input_tokens
        tokens_out += message.usage.output_tokens
        text = _text(message)
        trace.append({"tool": "model", "attempt": attempt, "stop_reason": message.stop_reason,
                      "input_tokens": message.usage.input_tokens,
                      "output_tokens": message.usage.output_tokens})
        if message.stop_reason == "max_tokens":
            gate = {"verdict": "reject", "reasons": ["answer cut at max_tokens"]}
        else:
            gate = check({"answer": text, "sources": dict(sources)})
        trace.append({"tool": "citecheck", "attempt": attempt, "verdict": gate["verdict"],
                      "reasons": gate["reasons"]})
        reasons = list(gate["reasons"])
        if gate["verdict"] == "accept":
            return result("answered", text, attempt)
        messages += [
            {"role": "assistant", "content": text or "(no answer)"},
            {"role": "user", "content": FEEDBACK.format(reasons="\n".join(f"- {r}" for r in reasons))},
        ]
    return result("rejected", None, 2)


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary()
)


def _client(base_url: str | None, api_key: str | None, max_retries: int, timeout_s: float) -> Any:
    """The SDK client for these settings on the running loop (made once: ~40 ms each)."""
    import anthropic

    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    key = (base_url, api_key, max_retries, timeout_s)
    if key not in per_loop:
        per_loop[key] = anthropic.AsyncAnthropic(
            base_url=base_url, api_key=api_key, max_retries=max_retries, timeout=timeout_s
        )
    return per_loop[key]


async def live(case_input: Mapping[str, Any]) -> TargetOutput:
    """evalh entry point against the real API (`ANTHROPIC_API_KEY`; `ANSWERER_MODEL`
    overrides the model)."""
    return await answer(
        case_input["question"], case_input["sources"],
        base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
        api_key=os.environ.get("ANTHROPIC_API_KEY"),
        model=os.environ.get("ANSWERER_MODEL", MODEL),
    )


_mock_lock = threading.Lock()
_mock: Any = None


def scenario_base_url() -> str:
    """`EVALH_SCENARIOS_BASE_URL`, else a mock provider started in this process from
    `datasets/scenarios.script.json` (once; it lives as long as the process)."""
    global _mock
    url = os.environ.get("EVALH_SCENARIOS_BASE_URL")
    if url:
        return url
    with _mock_lock:
        if _mock is None:
            from evalh.mock.mock_provider import MockProvider

            _mock = MockProvider(SCRIPT).start()
        return str(_mock.base_url)


async def scenario(case_input: Mapping[str, Any]) -> TargetOutput:
    """evalh entry point against the scripted mock provider (no key, offline). The SDK
    retries once, quickly, so an upstream failure is seen to fail closed in well under a
    second."""
    return await answer(
        case_input["question"], case_input["sources"], base_url=scenario_base_url(),
        api_key="scenario-key", max_retries=1, timeout_s=10.0,
    )


def billing(case: Any, output: Any, ctx: Any) -> dict[str, Any]:
    """Scorer: tokens (hence cost) are reported exactly when some call was billed.
    `expected.billed` says whether one was."""
    billed = bool(case.expected.get("billed"))
    out = ctx.target_output
    tokens = (out.tokens_in or 0) + (out.tokens_out or 0)
    ok = (tokens > 0) == billed
    return {"value": 1.0 if ok else 0.0, "passed": ok,
            "rationale": f"{tokens} tokens reported; expected {'some' if billed else 'none'}"}
