"""Wire shapes of the mock provider: prompt rendering, token counts, response and error
bodies for each endpoint. Pure functions, no I/O.

Tokens are counted as whitespace-separated words (`count_tokens`), for prompts and
replies alike, so a script author can predict `usage` and `max_tokens` cuts exactly.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from evalh.mock.script import Endpoint, Fault, Reply, ToolCall

_WORD = re.compile(r"\S+")

Stop = Literal["end", "max_tokens", "stop_sequence", "tool_use"]
ErrorKind = Literal[
    "invalid_request", "authentication", "not_found", "rate_limit", "server_error", "overloaded"
]

_ANTHROPIC_STOP: dict[Stop, str] = {
    "end": "end_turn",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "tool_use": "tool_use",
}
_OPENAI_FINISH: dict[Stop, str] = {
    "end": "stop",
    "max_tokens": "length",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
}


def count_tokens(text: str) -> int:
    """The mock's token count: the number of whitespace-separated words."""
    return len(_WORD.findall(text))


def cut_tokens(text: str, n: int) -> str:
    """`text` up to the end of its `n`-th word (original spacing kept)."""
    if n <= 0:
        return ""
    for i, m in enumerate(_WORD.finditer(text), start=1):
        if i == n:
            return text[: m.end()]
    return text


def _content_text(content: Any) -> list[str]:
    """Text of a message `content`: a string, or a list of blocks / parts."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str):
                out.append(block)
            elif isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    out.append(block["text"])
                elif block.get("type") == "tool_result":
                    out.extend(_content_text(block.get("content")))
    return out


def _string_leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _string_leaves(v)]
    if isinstance(value, list):
        return [s for v in value for s in _string_leaves(v)]
    return []


def _as_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def score_pairs(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The (text_1, text_2) pairs of a score request; one side of length 1 broadcasts."""
    left, right = _as_list(body["text_1"]), _as_list(body["text_2"])
    if len(left) == 1:
        left = left * len(right)
    elif len(right) == 1:
        right = right * len(left)
    if len(left) != len(right) or not left:
        raise ValueError("text_1 and text_2 must have the same length (or one of them 1)")
    return list(zip(left, right, strict=True))


def prompt_text(endpoint: Endpoint, body: Any) -> str:
    """The text rules are matched against: the system prompt and every message's text,
    joined by newlines (model endpoints); `text_1\\ntext_2` (score, whole request); every
    string in the body, in order (product)."""
    if endpoint == "anthropic":
        parts = _content_text(body.get("system"))
        for msg in body.get("messages") or []:
            if isinstance(msg, dict):
                parts.extend(_content_text(msg.get("content")))
        return "\n".join(parts)
    if endpoint == "openai":
        parts = []
        for msg in body.get("messages") or []:
            if isinstance(msg, dict):
                parts.extend(_content_text(msg.get("content")))
        return "\n".join(parts)
    if endpoint == "score":
        return "\n".join(_as_list(body.get("text_1", "")) + _as_list(body.get("text_2", "")))
    return "\n".join(_string_leaves(body))


def validate(endpoint: Endpoint, body: Any) -> str | None:
    """Why a request body is refused (400), or None when it is acceptable."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if endpoint in ("anthropic", "openai", "score") and not isinstance(body.get("model"), str):
        return "model: Field required"
    if endpoint in ("anthropic", "openai") and not isinstance(body.get("messages"), list):
        return "messages: Field required"
    if endpoint == "anthropic" and not isinstance(body.get("max_tokens"), int):
        return "max_tokens: Field required"
    if endpoint in ("anthropic", "openai") and body.get("stream"):
        return "stream: the mock provider does not stream"
    if endpoint == "score":
        if "text_1" not in body or "text_2" not in body:
            return "text_1 and text_2 are required"
        try:
            score_pairs(body)
        except ValueError as exc:
            return str(exc)
    return None


def max_tokens_of(endpoint: Endpoint, body: dict[str, Any]) -> int | None:
    """The request's output token limit, if it set one."""
    keys = ("max_completion_tokens", "max_tokens") if endpoint == "openai" else ("max_tokens",)
    for key in keys:
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def stop_sequences_of(endpoint: Endpoint, body: dict[str, Any]) -> list[str]:
    """Anthropic `stop_sequences` / OpenAI `stop` (a string or a list); none elsewhere."""
    if endpoint not in ("anthropic", "openai"):
        return []
    value = body.get("stop_sequences" if endpoint == "anthropic" else "stop")
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str) and v] if isinstance(value, list) else []


@dataclass
class Composed:
    """A reply after `max_tokens`, stop sequences and faults were applied."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    stop: Stop = "end"
    stop_sequence: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0


def _tool_tokens(calls: list[ToolCall]) -> int:
    return sum(count_tokens(c.name + " " + json.dumps(c.input)) for c in calls)


def compose(
    reply: Reply,
    prompt: str,
    *,
    max_tokens: int | None = None,
    stop_sequences: list[str] | None = None,
    truncate: Fault | None = None,
) -> Composed:
    """Apply the request's limits to a scripted reply.

    The earliest stop sequence found in the text cuts it there (stop `stop_sequence`).
    Output longer than `max_tokens` (text plus tool calls) is cut to `max_tokens` words
    and loses its tool calls (stop `max_tokens`). A `truncate` fault always cuts: to
    `fault.tokens`, else half the text, never beyond `max_tokens`.
    """
    out = Composed(text=reply.render_text(), tool_calls=list(reply.tool_calls))
    if out.tool_calls:
        out.stop = "tool_use"
    hits = [(out.text.find(s), s) for s in stop_sequences or [] if s in out.text]
    if hits:
        idx, seq = min(hits)
        out.text, out.tool_calls = out.text[:idx], []
        out.stop, out.stop_sequence = "stop_sequence", seq
    limit, forced = max_tokens, False
    if truncate is not None:
        n = truncate.tokens if truncate.tokens is not None else count_tokens(out.text) // 2
        limit, forced = (n if limit is None else min(limit, n)), True
    used = count_tokens(out.text) + _tool_tokens(out.tool_calls)
    if limit is not None and (forced or used > limit):
        out.text, out.tool_calls, out.stop = cut_tokens(out.text, limit), [], "max_tokens"
        out.stop_sequence = None
    out.input_tokens = max(1, count_tokens(prompt))
    out.output_tokens = count_tokens(out.text) + _tool_tokens(out.tool_calls)
    if reply.usage is not None:
        if reply.usage.input_tokens is not None:
            out.input_tokens = reply.usage.input_tokens
        if reply.usage.output_tokens is not None:
            out.output_tokens = reply.usage.output_tokens
    return out


def new_id(prefix: str, n: int = 24) -> str:
    return prefix + uuid.uuid4().hex[:n]


def anthropic_message(model: str, c: Composed) -> dict[str, Any]:
    """An Anthropic Messages API response body."""
    content: list[dict[str, Any]] = []
    if c.text or not c.tool_calls:
        content.append({"type": "text", "text": c.text})
    content.extend(
        {"type": "tool_use", "id": new_id("toolu_"), "name": t.name, "input": t.input}
        for t in c.tool_calls
    )
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _ANTHROPIC_STOP[c.stop],
        "stop_sequence": c.stop_sequence,
        "usage": {
            "input_tokens": c.input_tokens,
            "output_tokens": c.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def openai_completion(model: str, c: Composed) -> dict[str, Any]:
    """An OpenAI chat completion response body."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": c.text if (c.text or not c.tool_calls) else None,
        "refusal": None,
    }
    if c.tool_calls:
        message["tool_calls"] = [
            {
                "id": new_id("call_"),
                "type": "function",
                "function": {"name": t.name, "arguments": json.dumps(t.input)},
            }
            for t in c.tool_calls
        ]
    return {
        "id": new_id("chatcmpl-", 29),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _OPENAI_FINISH[c.stop],
            }
        ],
        "usage": {
            "prompt_tokens": c.input_tokens,
            "completion_tokens": c.output_tokens,
            "total_tokens": c.input_tokens + c.output_tokens,
        },
    }


def overlap_score(a: str, b: str) -> float:
    """Default score of a pair: Jaccard overlap of their lower-cased word sets."""
    wa, wb = set(a.lower().split()), set(b.lower().split())
    return round(len(wa & wb) / len(wa | wb), 4) if wa | wb else 0.0


def score_response(model: str, scores: list[float], prompt_tokens: int) -> dict[str, Any]:
    """A vLLM `/v1/score` response body."""
    return {
        "id": new_id("score-", 32),
        "object": "list",
        "created": int(time.time()),
        "model": model,
        "data": [{"index": i, "object": "score", "score": s} for i, s in enumerate(scores)],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens,
            "completion_tokens": 0,
        },
    }


def product_response(body: Any, reply: Reply, c: Composed) -> dict[str, Any]:
    """The generic product endpoint's body: the request echoed, the reply under `output`
    (the scripted JSON value itself when the reply is `json`, else the text)."""
    output = reply.json_ if reply.text is None and reply.json_ is not None else c.text
    return {
        "request": body,
        "output": output,
        "tool_calls": [t.model_dump() for t in c.tool_calls],
        "usage": {"input_tokens": c.input_tokens, "output_tokens": c.output_tokens},
        "truncated": c.stop == "max_tokens",
    }


_ANTHROPIC_ERR = {
    "invalid_request": (400, "invalid_request_error"),
    "authentication": (401, "authentication_error"),
    "not_found": (404, "not_found_error"),
    "rate_limit": (429, "rate_limit_error"),
    "server_error": (500, "api_error"),
    "overloaded": (529, "overloaded_error"),
}
_OPENAI_ERR: dict[str, tuple[int, str, str | None]] = {
    "invalid_request": (400, "invalid_request_error", None),
    "authentication": (401, "invalid_request_error", "invalid_api_key"),
    "not_found": (404, "invalid_request_error", "unknown_url"),
    "rate_limit": (429, "requests", "rate_limit_exceeded"),
    "server_error": (500, "server_error", None),
    "overloaded": (503, "server_error", None),
}


def error_response(
    endpoint: Endpoint | None, kind: ErrorKind, message: str
) -> tuple[int, dict[str, Any]]:
    """Status and body of an error in the endpoint's provider shape: Anthropic's
    `{"type":"error","error":{type,message}}` for `anthropic`, OpenAI's
    `{"error":{message,type,param,code}}` for everything else."""
    if endpoint == "anthropic":
        status, etype = _ANTHROPIC_ERR[kind]
        return status, {
            "type": "error",
            "error": {"type": etype, "message": message},
            "request_id": new_id("req_"),
        }
    status, etype, code = _OPENAI_ERR[kind]
    return status, {"error": {"message": message, "type": etype, "param": None, "code": code}}
