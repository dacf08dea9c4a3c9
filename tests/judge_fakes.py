"""A scripted fake `ProviderClient` for judge unit tests, and helpers to build judges."""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from evalh.models import Case
from evalh.providers.base import ChatRequest, ChatResponse, ProviderConfig
from evalh.scorers.base import ScoreContext
from evalh.services import RunServices
from evalh.targets.base import TargetOutput

Reply = ChatResponse | Exception | Callable[[ChatRequest], ChatResponse | Exception]


def reply(obj: Any = None, *, text: str | None = None, truncated: bool = False, tokens: int = 10) -> ChatResponse:
    """A judge reply: `obj` as JSON text (or raw `text`)."""
    body = text if text is not None else json.dumps(obj)
    return ChatResponse(text=body, model="fake", tokens_in=tokens, tokens_out=tokens, truncated=truncated,
                        stop_reason="max_tokens" if truncated else "end_turn", cost_usd=0.001)


class FakeClient:
    """Answers from a queue of scripted replies (the last one repeats); records requests."""

    def __init__(self, model: str, *replies: Reply) -> None:
        self.config = ProviderConfig(provider="anthropic", model=model)
        self.replies: deque[Reply] = deque(replies)
        self.requests: list[ChatRequest] = []

    async def chat(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        await asyncio.sleep(0)
        r = self.replies.popleft() if len(self.replies) > 1 else self.replies[0]
        out = r(request) if callable(r) and not isinstance(r, Exception) else r
        if isinstance(out, Exception):
            raise out
        return out

    async def aclose(self) -> None:
        return None


def factory(*clients: FakeClient) -> Callable[[ProviderConfig, RunServices], FakeClient]:
    by_model = {c.config.model: c for c in clients}
    return lambda cfg, services: by_model[cfg.model]


def services(tmp: Path | None = None, *, allow_self_judge: bool = False) -> RunServices:
    return RunServices(root=tmp or Path.cwd(), allow_self_judge=allow_self_judge)


def ctx(svc: RunServices, *, subject: str | None = None, attempt: int = 0, arm: str = "default") -> ScoreContext:
    return ScoreContext(run_id="r", suite="s", arm=arm, attempt=attempt, target_output=TargetOutput(output=None),
                        services=svc, subject_model=subject)


def case(cid: str = "c1", *, input: Any = None, expected: Any = None, metadata: dict[str, Any] | None = None) -> Case:
    return Case(id=cid, input=input if input is not None else {"question": "What is the capital of France?"},
                expected=expected, metadata=metadata or {})


def suite_plan(*, models: list[str | None], scorers: list[Any] | None = None, name: str = "s") -> SimpleNamespace:
    """A SuiteView (evalh.scorers.base): the parts of a SuitePlan the judges' prepare/finalize read."""
    targets = [(f"arm{i}" if len(models) > 1 else "default", SimpleNamespace(model_id=lambda m=m: m))
               for i, m in enumerate(models)]
    return SimpleNamespace(
        name=name, subject_models=[m for m in models if m], details={},
        arms=[SimpleNamespace(name=n) for n, _ in targets], scorers=scorers or [], concurrency=4,
    )

