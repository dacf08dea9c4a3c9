"""The mock provider's request logic, apart from HTTP: recording, auth, validation,
injected and scripted faults, reply selection. `Engine.handle` turns one request into an
`Action` (what to send, after how long, or to drop the connection). Thread-safe."""

from __future__ import annotations

import json
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalh.mock import shapes
from evalh.mock.script import DEFAULT_SLOW_MS, Endpoint, Fault, Reply, Script, ScriptState

ScriptLike = Script | dict[str, Any] | list[Any] | str | Path | None

ENDPOINTS: dict[str, Endpoint] = {
    "/v1/messages": "anthropic",
    "/v1/chat/completions": "openai",
    "/v1/score": "score",
    "/v1/product": "product",
}
SECRET_HEADERS = frozenset(
    {"x-api-key", "authorization", "proxy-authorization", "api-key", "x-goog-api-key", "cookie"}
)
_REPLYING_FAULTS = frozenset({"slow", "truncate"})
"""Faults that still send a (scripted) reply, as opposed to replacing it."""


def endpoint_for(path: str) -> Endpoint | None:
    """Which endpoint a path addresses (`/v1/product/anything` is the product endpoint)."""
    if path in ENDPOINTS:
        return ENDPOINTS[path]
    return "product" if path.startswith("/v1/product/") else None


def mask_headers(headers: dict[str, str]) -> dict[str, str]:
    """Headers with lower-cased names and credential values replaced by `***`
    (`Bearer ***` for bearer tokens)."""
    out: dict[str, str] = {}
    for name, value in headers.items():
        key = name.lower()
        if key in SECRET_HEADERS:
            value = "Bearer ***" if value[:7].lower() == "bearer " else "***"
        out[key] = value
    return out


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received (credentials masked)."""

    method: str
    path: str
    endpoint: Endpoint | None
    headers: dict[str, str]
    body: Any
    """The parsed JSON body; None when it was empty or not JSON."""


@dataclass
class Action:
    """What the server does with one request."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False
    """Close the connection without any response."""
    content_type: str = "application/json"

    @classmethod
    def json(cls, status: int, obj: Any, **kw: Any) -> Action:
        return cls(status=status, body=json.dumps(obj).encode(), **kw)


def _authorized(endpoint: Endpoint, headers: dict[str, str]) -> bool:
    auth = headers.get("authorization", "")
    bearer = auth[:7].lower() == "bearer " and bool(auth[7:].strip())
    if endpoint == "anthropic":
        return bool(headers.get("x-api-key", "").strip()) or bearer
    if endpoint == "openai":
        return bearer
    return True


_AUTH_MESSAGE = {
    "anthropic": "x-api-key header is required",
    "openai": "You didn't provide an API key. You need to provide your API key in an "
    "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
}
_FAULT_ERRORS: dict[str, shapes.ErrorKind] = {
    "rate_limit": "rate_limit",
    "server_error": "server_error",
    "overloaded": "overloaded",
}
_FAULT_MESSAGES = {
    "rate_limit": "Number of requests has exceeded your rate limit (mock provider).",
    "server_error": "Internal server error (mock provider).",
    "overloaded": "Overloaded",
}


def _echoed(reply: Reply, target: str, headers: dict[str, str], body: Any) -> Reply:
    """`reply` with the request it answers added (see `Reply.echo`)."""
    echo = {"path": target, "headers": dict(headers), "body": body}
    if isinstance(reply.json_, dict) and reply.text is None:
        return reply.model_copy(update={"json_": {**reply.json_, "echo": echo}})
    text = reply.render_text()
    line = json.dumps(echo, separators=(",", ":"))
    return reply.model_copy(update={"text": f"{text}\n{line}" if text else line, "json_": None})


class Engine:
    """Script state, recorded requests and the queue of injected faults."""

    def __init__(self, script: Script, max_recorded: int | None = None) -> None:
        self.state = ScriptState(script)
        self._lock = threading.Lock()
        self._requests: deque[RecordedRequest] = deque(maxlen=max_recorded)
        self._counts: Counter[str] = Counter()
        self._injected: deque[list[Any]] = deque()  # [fault, remaining, endpoint | None]

    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def count(self, path: str | None = None) -> int:
        with self._lock:
            return self._counts.total() if path is None else self._counts[path]

    def inject(self, fault: Fault, times: int, endpoint: Endpoint | None) -> None:
        if times < 1:
            raise ValueError("times must be at least 1")
        with self._lock:
            self._injected.append([fault, times, endpoint])

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()
            self._counts.clear()
            self._injected.clear()
        self.state.reset()

    def _take_injected(self, endpoint: Endpoint) -> Fault | None:
        with self._lock:
            for entry in self._injected:
                if entry[2] is None or entry[2] == endpoint:
                    entry[1] -= 1
                    if entry[1] <= 0:
                        self._injected.remove(entry)
                    return entry[0]
        return None

    @staticmethod
    def error(endpoint: Endpoint | None, kind: shapes.ErrorKind, message: str, **kw: Any) -> Action:
        status, body = shapes.error_response(endpoint, kind, message)
        return Action.json(status, body, **kw)

    def not_found(self, path: str) -> Action:
        return self.error(None, "not_found", f"no such endpoint: {path}")

    def handle(
        self, path: str, headers: dict[str, str], raw: bytes, latency_ms: float = 0.0,
        target: str | None = None, *, record: bool = True,
    ) -> Action:
        """The action for one POST to a provider endpoint (`headers` lower-cased; `target`
        is the request target with its query, for replies that echo the request).
        `record=False`: a batch's request, answered when its batch is processed, is neither
        recorded nor counted as a request that came to `path`."""
        endpoint = endpoint_for(path)
        try:
            body, bad_json = (json.loads(raw) if raw.strip() else None), False
        except ValueError:
            body, bad_json = None, True
        with self._lock:
            if record:
                self._counts[path] += 1
                self._requests.append(
                    RecordedRequest("POST", path, endpoint, mask_headers(headers), body)
                )
        if endpoint is None:
            return self.not_found(path)
        if not _authorized(endpoint, headers):
            return self.error(endpoint, "authentication", _AUTH_MESSAGE[endpoint])
        problem = "request body is not valid JSON" if bad_json else shapes.validate(endpoint, body)
        if problem is not None:
            return self.error(endpoint, "invalid_request", problem)
        assert isinstance(body, dict)

        if endpoint == "score":
            pairs = shapes.score_pairs(body)
            prompts = [f"{a}\n{b}" for a, b in pairs]
        else:
            pairs, prompts = [], [shapes.prompt_text(endpoint, body)]
        model = body.get("model") if isinstance(body.get("model"), str) else None
        injected = self._take_injected(endpoint)
        replies: list[Reply]
        if injected is not None and injected.kind not in _REPLYING_FAULTS:
            replies = [self.state.script.default] * len(prompts)  # the script is bypassed
        else:
            replies = [self.state.select(endpoint, model, p) for p in prompts]
        fault = injected or next((r.fault for r in replies if r.fault is not None), None)

        delay_ms = max(r.latency_ms for r in replies)
        if fault is not None and fault.kind == "slow":
            delay_ms = fault.latency_ms or delay_ms or DEFAULT_SLOW_MS
        delay = (latency_ms + delay_ms) / 1000.0
        extra = (
            {"request-id": shapes.new_id("req_")}
            if endpoint == "anthropic"
            else {"x-request-id": shapes.new_id("req_")}
        )

        if fault is not None and fault.kind in _FAULT_ERRORS:
            if fault.kind == "rate_limit":
                extra["retry-after"] = f"{fault.retry_after:g}"
                extra["retry-after-ms"] = str(round(fault.retry_after * 1000))
            message = fault.message or _FAULT_MESSAGES[fault.kind]
            return self.error(
                endpoint, _FAULT_ERRORS[fault.kind], message, headers=extra, delay_s=delay
            )
        if fault is not None and fault.kind == "drop":
            return Action(drop=True, delay_s=delay)

        if replies and replies[0].echo:
            replies = [_echoed(replies[0], target or path, headers, body), *replies[1:]]
        truncate = fault if fault is not None and fault.kind == "truncate" else None
        payload = self._payload(endpoint, body, model or "", prompts, pairs, replies, truncate)
        data = json.dumps(payload).encode()
        if fault is not None and fault.kind == "malformed_json":
            data = data[: len(data) // 2]
        return Action(status=200, body=data, headers=extra, delay_s=delay)

    @staticmethod
    def _payload(
        endpoint: Endpoint,
        body: dict[str, Any],
        model: str,
        prompts: list[str],
        pairs: list[tuple[str, str]],
        replies: list[Reply],
        truncate: Fault | None,
    ) -> dict[str, Any]:
        if endpoint == "score":
            scores = [
                r.score if r.score is not None else shapes.overlap_score(a, b)
                for r, (a, b) in zip(replies, pairs, strict=True)
            ]
            tokens = sum(shapes.count_tokens(p) for p in prompts)
            return shapes.score_response(model, scores, tokens)
        composed = shapes.compose(
            replies[0],
            prompts[0],
            max_tokens=shapes.max_tokens_of(endpoint, body),
            stop_sequences=shapes.stop_sequences_of(endpoint, body),
            truncate=truncate,
        )
        if endpoint == "anthropic":
            return shapes.anthropic_message(model, composed)
        if endpoint == "openai":
            return shapes.openai_completion(model, composed)
        return shapes.product_response(body, replies[0], composed)
