"""Scripted replies for the mock provider.

A `Script` is an ordered list of `Rule`s plus a `default` reply. For each request the
server renders the prompt text (see `evalh.mock.shapes.prompt_text`) and takes the
first rule that applies:

* `endpoint` (if set) names the endpoint (`anthropic`, `openai`, `score`, `product`),
* `model` (if set) equals the request's model, or is `regex:<pattern>` searched in it,
* `match` (if set) is a substring of the prompt text, or `regex:<pattern>` searched in it,
* the rule is not used up: `times: N` makes it apply to its first N matching requests only.

A matching rule answers with its own reply fields, or, when it has a `sequence`, with the
successive items of the sequence (the last item repeats once the sequence is exhausted;
combine with `times` to fall through to later rules instead). No rule → `default`
(text "ok").

File format (JSON, or TOML by the `.toml` suffix)::

    {"rules": [
      {"match": "capital of France", "times": 1, "text": "garbage"},
      {"match": "capital of France", "text": "Paris"},
      {"match": "regex:^Weather", "tool_calls": [{"name": "get_weather",
                                                  "input": {"city": "Paris"}}]},
      {"endpoint": "score", "match": "Paris", "score": 0.9},
      {"match": "flaky", "sequence": [{"fault": "rate_limit"}, "fine now"]},
      {"match": "json please", "json": {"answer": 42}, "usage": {"output_tokens": 7}},
      {"match": "who am I", "text": "you are", "echo": true}
    ],
     "default": {"text": "ok"}}

A bare JSON list is read as the rules. In TOML write the rules as `[[rules]]` tables.
"""

from __future__ import annotations

import json
import re
import threading
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from evalh.errors import ConfigError

Endpoint = Literal["anthropic", "openai", "score", "product"]
FaultKind = Literal[
    "rate_limit", "server_error", "overloaded", "slow", "drop", "malformed_json", "truncate"
]
DEFAULT_SLOW_MS = 10_000.0
"""How long a `slow` fault sleeps when neither the fault nor the reply gives `latency_ms`."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Fault(_Strict):
    """A failure the server produces instead of (or on top of) a normal reply.

    * `rate_limit`: 429 with `retry-after` (seconds) and `retry-after-ms` headers.
    * `server_error`: 500 (`api_error` / `server_error`).
    * `overloaded`: 529 `overloaded_error` on the Anthropic endpoint, 503 elsewhere.
    * `slow`: sleep `latency_ms` (default: the reply's `latency_ms`, else 10 s), then reply.
    * `drop`: close the connection without sending a response.
    * `malformed_json`: 200 whose body is the real reply cut in half (invalid JSON).
    * `truncate`: the reply cut to `tokens` tokens (default: half of it, at most the
      request's `max_tokens`) with stop reason `max_tokens` / finish reason `length`.
    """

    kind: FaultKind
    retry_after: float = 1.0
    latency_ms: float | None = None
    tokens: int | None = Field(default=None, ge=0)
    message: str | None = None


def _coerce_fault(value: Any) -> Any:
    return {"kind": value} if isinstance(value, str) else value


class ToolCall(_Strict):
    """A scripted tool call: an Anthropic `tool_use` block / an OpenAI `tool_calls` item."""

    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class UsageOverride(_Strict):
    """Reported token counts that replace the computed ones (each one optional)."""

    input_tokens: int | None = Field(
        default=None, ge=0, validation_alias=AliasChoices("input_tokens", "prompt_tokens")
    )
    output_tokens: int | None = Field(
        default=None, ge=0, validation_alias=AliasChoices("output_tokens", "completion_tokens")
    )


class Reply(_Strict):
    """One scripted answer. With no `text`, `json` or `tool_calls` the text is "ok"."""

    text: str | None = None
    json_: Any = Field(default=None, alias="json")
    """Any JSON value; serialized (compact) as the reply text on the model endpoints, and
    returned as the object itself under `output` on the product endpoint."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    score: float | None = None
    """Score returned by `/v1/score`; without one the score is the prompt's word overlap."""
    usage: UsageOverride | None = None
    latency_ms: float = Field(default=0.0, ge=0)
    fault: Fault | None = None
    echo: bool = False
    """Echo the request as received, credentials included (a careless product or proxy):
    `{"path": <path and query>, "headers": {<every header, unmasked>}, "body": <the JSON
    body>}` is added under
    `echo` to a `json` object reply, else appended to the text on a line of its own."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"text": data}
        if isinstance(data, int | float) and not isinstance(data, bool):
            return {"score": data}
        if isinstance(data, dict) and "fault" in data:
            data = {**data, "fault": _coerce_fault(data["fault"])}
        return data

    def render_text(self) -> str:
        """The reply text as the model endpoints send it."""
        if self.text is not None:
            return self.text
        if self.json_ is not None:
            return json.dumps(self.json_, ensure_ascii=False, separators=(",", ":"))
        return "" if self.tool_calls else "ok"


_REPLY_FIELDS = frozenset(Reply.model_fields)


def _matcher(pattern: str) -> re.Pattern[str] | str:
    if pattern.startswith("regex:"):
        try:
            return re.compile(pattern[len("regex:") :])
        except re.error as exc:
            raise ValueError(f"bad regex {pattern!r}: {exc}") from exc
    return pattern


def _test(matcher: re.Pattern[str] | str, text: str, *, exact: bool) -> bool:
    if isinstance(matcher, str):
        return matcher == text if exact else matcher in text
    return matcher.search(text) is not None


class Rule(Reply):
    """A reply plus the conditions under which it is given (see the module docstring)."""

    match: str | None = None
    endpoint: Endpoint | list[Endpoint] | None = None
    model: str | None = None
    times: int | None = Field(default=None, ge=1)
    sequence: list[Reply] | None = Field(default=None, min_length=1)

    _match_m: re.Pattern[str] | str | None = PrivateAttr(default=None)
    _model_m: re.Pattern[str] | str | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self) -> Rule:
        if self.sequence is not None:
            own = self.model_fields_set & _REPLY_FIELDS
            if own:
                raise ValueError(
                    f"a rule with `sequence` cannot also set {sorted(own)}: "
                    "put them in the sequence items"
                )
        if self.match is not None:
            self._match_m = _matcher(self.match)
        if self.model is not None:
            self._model_m = _matcher(self.model)
        return self

    def applies(self, endpoint: Endpoint, model: str | None, prompt: str) -> bool:
        """Whether the filters accept this request (ignores `times`)."""
        if self.endpoint is not None:
            allowed = [self.endpoint] if isinstance(self.endpoint, str) else self.endpoint
            if endpoint not in allowed:
                return False
        if self._model_m is not None and not _test(self._model_m, model or "", exact=True):
            return False
        return self._match_m is None or _test(self._match_m, prompt, exact=False)

    def reply_for(self, hit: int) -> Reply:
        """The reply for this rule's `hit`-th match (0-based)."""
        if self.sequence is None:
            return self
        return self.sequence[min(hit, len(self.sequence) - 1)]


class BatchSettings(_Strict):
    """How the batch APIs behave (`evalh.mock.batches`)."""

    polls: int = Field(default=1, ge=0)
    """Retrieves that still see a batch in progress; it ends on the next one."""
    expire_after: int | None = Field(default=None, ge=0)
    """The batch expires after processing its first N requests: the rest are `expired`."""


class Script(_Strict):
    """Ordered rules and the default reply. Immutable; `ScriptState` keeps the counters."""

    rules: list[Rule] = Field(default_factory=list)
    default: Reply = Field(default_factory=lambda: Reply(text="ok"))
    batches: BatchSettings = Field(default_factory=BatchSettings)
    """`{"polls": N, "expire_after": K}`: how the batch endpoints progress."""

    @model_validator(mode="before")
    @classmethod
    def _bare_list(cls, data: Any) -> Any:
        return {"rules": data} if isinstance(data, list) else data

    @classmethod
    def load(cls, path: str | Path) -> Script:
        """Read a script file: TOML if the name ends in `.toml`, JSON otherwise.

        Raises `ConfigError` when the file is missing, unparsable or invalid.
        """
        p = Path(path)
        try:
            raw = p.read_text(encoding="utf-8")
            data = tomllib.loads(raw) if p.suffix.lower() == ".toml" else json.loads(raw)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read mock script {p}: {exc}") from exc
        return cls.coerce(data, source=str(p))

    @classmethod
    def coerce(
        cls,
        value: Script | dict[str, Any] | list[Any] | str | Path | None,
        *,
        source: str = "script",
    ) -> Script:
        """A `Script` from a Script, a dict / list of rules, a file path, or None (empty)."""
        if value is None:
            return cls()
        if isinstance(value, Script):
            return value
        if isinstance(value, str | Path):
            return cls.load(value)
        from pydantic import ValidationError

        try:
            return cls.model_validate(value)
        except ValidationError as exc:  # one line: the first problem's field and why
            from evalh.errors import first_validation_error

            where, why = first_validation_error(exc)
            raise ConfigError(f"invalid mock {source}: {where}: {why}" if where else f"invalid mock {source}: {why}") from None
        except ValueError as exc:
            raise ConfigError(f"invalid mock {source}: {exc}") from exc


class ScriptState:
    """A script with its per-rule hit counters. Thread-safe."""

    def __init__(self, script: Script) -> None:
        self._lock = threading.Lock()
        self._script = script
        self._hits = [0] * len(script.rules)

    @property
    def script(self) -> Script:
        return self._script

    def replace(self, script: Script) -> None:
        """Use `script` from now on, with fresh counters."""
        with self._lock:
            self._script = script
            self._hits = [0] * len(script.rules)

    def reset(self) -> None:
        """Zero the counters (`times` and `sequence` start over)."""
        with self._lock:
            self._hits = [0] * len(self._script.rules)

    def select(self, endpoint: Endpoint, model: str | None, prompt: str) -> Reply:
        """The reply for one request; counts the hit against the rule that gave it."""
        with self._lock:
            for i, rule in enumerate(self._script.rules):
                if rule.times is not None and self._hits[i] >= rule.times:
                    continue
                if rule.applies(endpoint, model, prompt):
                    hit = self._hits[i]
                    self._hits[i] += 1
                    return rule.reply_for(hit)
            return self._script.default
