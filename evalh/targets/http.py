"""HTTP targets: POST a JSON body templated from the case to your product's endpoint.

    [suites.product.target]
    kind = "http"
    url = "http://localhost:8000/answer"
    body = '{"question": {{ input.question | tojson }}, "user": "eval"}'   # optional
    headers = { Authorization = "Bearer ${PRODUCT_TOKEN}" }
    output_field = "answer.text"        # dotted path into the JSON reply ("." = all of it)
    trace_field = "tool_calls"          # optional: a list stored as the case's trace
    usage_field = "usage"               # optional: {input_tokens, output_tokens[, cost_usd]}

The body is a Jinja2 template (sandboxed, strict; it sees `input` and `case`, never
`expected`) that must render JSON; without one evalh sends `{"input": <case input>}`.
Header values and strings in the body may name environment variables as `${VAR}`: they
are expanded when the request is sent, the suite needs the variables to run, and headers
never reach the run document (only `url`, with any credentials stripped, and the
non-header keys do; a secret-looking key written literally in the body template has its
value redacted there). Every credential evalh sends is a registered secret, scrubbed from
everything evalh writes or shows should the product echo it: header values, `${VAR}`
values, the literal value of a credential-named key in the body template, the user, password and `Authorization: Basic` value of a `user:pass@` URL, and
the values of credential-looking query parameters (`?token=`, `?api_key=`, `?sig=`). Every
request carries `X-Evalh-Run-Id`, `X-Evalh-Case-Id`, `X-Evalh-Attempt` and `X-Evalh-Seed` (the
attempt's seed, `evalh.core.run.shuffle`); the body template sees `attempt` and `seed` too.

429, 5xx, timeouts and dropped connections are retried like provider calls (backoff,
`retry-after`, bounded attempts); any other non-2xx reply, or a 2xx that is not JSON,
makes the case `errored` with the status and the start of the body.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from evalh.errors import TargetError
from evalh.models import Case
from evalh.providers.base import ProviderError
from evalh.redact import credential_literals, register_secret, register_url_secrets
from evalh.targets.base import CallContext, Target, TargetConfig, TargetOutput
from evalh.targets.templates import compile_template, render, template_vars

if TYPE_CHECKING:
    from jinja2 import Template

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class HttpTargetConfig(TargetConfig):
    SNAPSHOT_JSON_TEXT: ClassVar[frozenset[str]] = frozenset({"body"})
    SNAPSHOT = frozenset(
        {"kind", "url", "method", "body", "output_field", "trace_field", "usage_field", "model",
         "timeout_s", "max_retries", "max_in_flight", "rpm", "backoff_base_s", "backoff_max_s", "pace_ms"}
    )
    SNAPSHOT_IF_SET: ClassVar[frozenset[str]] = frozenset({"pace_ms"})

    kind: Literal["http"] = "http"
    url: str = Field(pattern=r"^https?://")
    """The endpoint. Recorded in the run with any credentials in it replaced."""
    method: Literal["POST", "PUT"] = "POST"
    body: str | None = None
    """A Jinja2 template rendering the JSON body; default `{"input": <case input>}`."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra headers; values may reference `${VAR}`. Never written to a run document."""
    output_field: str = "output"
    """Dotted path of the output in the JSON reply (`answer.text`, `choices.0`); `.` = all."""
    trace_field: str | None = None
    """Dotted path of a list of tool calls, stored as the case's trace."""
    usage_field: str | None = None
    """Dotted path of `{input_tokens, output_tokens[, cost_usd]}` (OpenAI names accepted)."""
    model: str | None = None
    """The model behind the endpoint, if known: prices its usage, keeps judges off it."""
    timeout_s: float = Field(60.0, gt=0)
    """Per attempt; a timed-out attempt is retried."""
    max_retries: int = Field(2, ge=0)
    """Retries on 429, 5xx, timeouts and dropped connections."""
    max_in_flight: int = Field(16, ge=1)
    """Ceiling of requests in flight to this URL; halved on 429, regained one by one."""
    rpm: int | None = Field(None, ge=1)
    """Requests per minute (optional)."""
    backoff_base_s: float = Field(0.5, ge=0)
    """First retry waits up to this long (full jitter), doubling per attempt."""
    backoff_max_s: float = Field(30.0, ge=0)
    """Cap of one backoff wait (a server's `retry-after` is honoured even when longer)."""
    pace_ms: float | None = Field(None, ge=0)
    """Calls start at least this many milliseconds apart (`--sleep-ms` sets it for every
    target); the pause is neither latency nor part of the timeout."""

    def requires_env(self) -> list[str]:
        texts = [*self.headers.values(), self.body or ""]
        return sorted({m for v in texts for m in _ENV_REF.findall(v)})

    def model_id(self) -> str | None:
        return self.model


CONFIGS: dict[str, type[TargetConfig]] = {"http": HttpTargetConfig}

_MISSING = object()


def pick_path(data: Any, path: str) -> Any:
    """`a.b.0.c` into nested dicts and lists; `_MISSING` when absent; "." is the whole value."""
    if path in (".", ""):
        return data
    cur = data
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return _MISSING
    return cur


def _usage(raw: Any) -> tuple[int | None, int | None, float | None]:
    if not isinstance(raw, dict):
        return None, None, None

    def first(*names: str) -> Any:
        return next((raw[n] for n in names if isinstance(raw.get(n), int | float)), None)

    tin = first("input_tokens", "prompt_tokens", "tokens_in")
    tout = first("output_tokens", "completion_tokens", "tokens_out")
    cost = first("cost_usd")
    return (int(tin) if tin is not None else None, int(tout) if tout is not None else None,
            float(cost) if cost is not None else None)


def _placeholders(template: str) -> tuple[str, dict[str, str]]:
    """The body template with each `${VAR}` replaced by a token no case data can contain,
    and the token → variable map: only the template's references are expanded, never a
    `${...}` that arrives in a case's input."""
    tag = secrets.token_hex(8)
    names: dict[str, str] = {}

    def token(m: re.Match[str]) -> str:
        key = f"evalh-env-{tag}-{len(names)}"
        names[key] = m.group(1)
        return key

    return _ENV_REF.sub(token, template), names


def _env_value(name: str, where: str) -> str:
    value = os.environ.get(name)
    if value is None:
        raise TargetError(f"{where} references ${{{name}}}, which is not set")
    return value


class HttpTarget(Target):
    def __init__(self, config: HttpTargetConfig) -> None:
        self.config = config
        self._env: dict[str, str] = {}
        self._body: Template | None
        if config.body:
            source, self._env = _placeholders(config.body)
            self._body = compile_template(source, "body")
        else:
            self._body = None
        self._token = re.compile("|".join(map(re.escape, self._env))) if self._env else None
        # A product that echoes its request must not leak a credential into the run: the
        # variables' values and the header values (a bearer token's token) are registered
        # once, here, before the run's journal is opened, not on every request.
        register_url_secrets(config.url)  # user:pass@ (and the Basic header), ?token=
        for literal in credential_literals(config.body or ""):  # "api_key": "literal-…"
            register_secret(literal)
        for name in config.requires_env():
            register_secret(os.environ.get(name))
        for value in config.headers.values():
            expanded = _ENV_REF.sub(lambda m: os.environ.get(m.group(1), m.group(0)), value)
            if not _ENV_REF.search(expanded):  # an unset variable: the run will refuse to start
                register_secret(expanded.split(" ", 1)[-1])
        self._client: Any = None

    def request_body(self, case: Case) -> Any:
        if self._body is None:
            return {"input": case.input}
        text = render(self._body, "body", template_vars(case))
        try:
            body = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TargetError(f"template `body` rendered invalid JSON: {exc.msg} at char {exc.pos}") from None
        return self._expand(body) if self._token is not None else body

    def _expand(self, value: Any) -> Any:
        """The template's `${VAR}` tokens in the parsed body, from the environment (after
        parsing, so a value needs no JSON escaping)."""
        if isinstance(value, dict):
            return {k: self._expand(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._expand(v) for v in value]
        if isinstance(value, str) and self._token is not None:
            return self._token.sub(lambda m: _env_value(self._env[m.group(0)], "body"), value)
        return value

    def request_headers(self, case: Case, ctx: CallContext) -> dict[str, str]:
        headers = {
            k: _ENV_REF.sub(lambda m: _env_value(m.group(1), "header"), v)
            for k, v in self.config.headers.items()
        }
        headers.update({
            "X-Evalh-Run-Id": ctx.run_id, "X-Evalh-Case-Id": case.id,
            "X-Evalh-Attempt": str(ctx.attempt),
        })
        from evalh.context import current

        case_ctx = current()
        if case_ctx is not None and case_ctx.seed is not None:  # the attempt's seed (evalh.core.run.shuffle)
            headers["X-Evalh-Seed"] = str(case_ctx.seed)
        return headers

    async def call(self, case: Case, ctx: CallContext) -> TargetOutput:
        import httpx

        from evalh.providers.clients import limits_name
        from evalh.providers.resilience import EndpointLimits, RetryPolicy, call_with_retries
        from evalh.targets.pacing import before_call

        cfg = self.config
        await before_call(cfg, case, ctx.services)  # a failed generation is refused, then paced
        body, headers = self.request_body(case), self.request_headers(case, ctx)
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(cfg.timeout_s))
        name = limits_name("http", cfg.url)
        limits = ctx.services.limits.get(name)
        if limits is None:
            limits = ctx.services.limits[name] = EndpointLimits(
                name, cfg.max_in_flight, cfg.rpm, max_wait_s=ctx.services.max_retry_wait_s
            )
        try:
            data = await call_with_retries(
                lambda: self._send(body, headers),
                policy=RetryPolicy(cfg.max_retries, cfg.backoff_base_s, cfg.backoff_max_s),
                limits=limits, what=f"{cfg.method} {name[len('http@'):]}",
            )
        except ProviderError as exc:
            raise TargetError(str(exc)) from None
        output = pick_path(data, cfg.output_field)
        if output is _MISSING:
            raise TargetError(f"reply has no field {cfg.output_field!r}; reply starts {json.dumps(data)[:200]!r}")
        trace = pick_path(data, cfg.trace_field) if cfg.trace_field else None
        if trace is _MISSING or trace is None:
            trace = None
        elif not isinstance(trace, list):
            raise TargetError(f"trace field {cfg.trace_field!r} is not a list")
        else:
            trace = [t if isinstance(t, dict) else {"value": t} for t in trace]
        usage = pick_path(data, cfg.usage_field) if cfg.usage_field else None
        tin, tout, cost = _usage(usage)
        return TargetOutput(output=output, trace=trace, tokens_in=tin, tokens_out=tout,
                            cost_usd=cost, model=cfg.model)

    async def _send(self, body: Any, headers: dict[str, str]) -> Any:
        import httpx

        from evalh.providers.resilience import (
            PermanentError,
            TransientError,
            is_retryable,
            parse_retry_after,
        )

        try:
            resp = await self._client.request(self.config.method, self.config.url, json=body, headers=headers)
        except httpx.TimeoutException:
            raise TransientError(f"no reply within {self.config.timeout_s:g}s") from None
        except httpx.TransportError as exc:
            raise TransientError(f"connection failed: {type(exc).__name__}: {exc}") from None
        excerpt = resp.text[:200]
        if not 200 <= resp.status_code < 300:
            text = f"HTTP {resp.status_code}: {excerpt!r}"
            if is_retryable(resp.status_code):
                raise TransientError(text, status=resp.status_code,
                                     retry_after=parse_retry_after(dict(resp.headers)))
            raise PermanentError(text, status=resp.status_code)
        try:
            return resp.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise PermanentError(f"HTTP {resp.status_code} reply is not JSON: {excerpt!r}",
                                 status=resp.status_code) from None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def build(config: TargetConfig, root: Path) -> HttpTarget:
    assert isinstance(config, HttpTargetConfig)
    return HttpTarget(config)
