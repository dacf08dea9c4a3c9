"""Model targets: a model with a prompt template (kinds `anthropic`, `openai`, and every
provider an installed plugin registers).

    [suites.qa.target]
    kind = "anthropic"                  # or "openai" (any OpenAI-compatible server), or a plugin's provider
    model = "claude-haiku-4-5"
    system = "Answer from the sources only."
    prompt = "Question: {{ input.question }}"
    max_tokens = 512
    output = "text"                     # or "json": the reply parsed as JSON

Instead of `prompt`, `messages = [{role = "user", content = "…"}, …]` gives a whole
conversation of templates. Every `ProviderConfig` key is accepted (`base_url`,
`api_key_env`, `temperature`, `timeout_s`, `max_retries`, `max_in_flight`, `rpm`, `tpm`,
`params`, …). Templates are Jinja2 (sandboxed, strict): they see `input` and `case`
(`id`, `metadata`), never `expected`.

Each call records tokens, cost (from the price table; null for an unpriced model), the
model's tool calls as the trace, and whether the reply was truncated at `max_tokens`.
The runner charges the budget per result (`billed_by_runner=True`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalh.errors import TargetError
from evalh.models import Case
from evalh.providers.base import ChatRequest, ProviderConfig
from evalh.targets.base import CallContext, Target, TargetConfig, TargetOutput
from evalh.targets.templates import compile_template, render, template_vars


class MessageTemplate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset({"role", "content"})

    role: Literal["user", "assistant"]
    content: str


class ModelTargetConfig(TargetConfig, ProviderConfig):
    """A model target. `provider` follows `kind` and need not be written."""

    SNAPSHOT = ProviderConfig.SNAPSHOT | frozenset({"kind", "prompt", "system", "messages", "output", "pace_ms"})
    SNAPSHOT_IF_SET: ClassVar[frozenset[str]] = frozenset({"pace_ms"})

    kind: str
    """The provider: `anthropic`, `openai`, or one an installed plugin registers
    (`evalh plugins` lists them)."""
    provider: str | None = None  # type: ignore[assignment]
    """Follows `kind`; need not be written."""
    prompt: str | None = None
    """The user message, a template."""
    system: str | None = None
    """The system prompt, a template."""
    messages: list[MessageTemplate] | None = Field(None, min_length=1)
    """A conversation of templates, instead of `prompt`; the last one is the user's."""
    output: Literal["text", "json"] = "text"
    """`json`: the reply is parsed as JSON (one Markdown code fence tolerated); a reply that
    does not parse makes the case `errored`."""
    pace_ms: float | None = Field(None, ge=0)
    """Calls start at least this many milliseconds apart (`--sleep-ms` sets it for every
    target); the pause is neither latency nor part of the timeout."""

    @field_validator("kind")
    @classmethod
    def _model_kind(cls, kind: str) -> str:
        from evalh import registry

        if kind not in registry.model_kinds():
            raise ValueError(f"unknown model target kind {kind!r} "
                             f"(known: {', '.join(registry.model_kinds())})")
        return kind

    @model_validator(mode="before")
    @classmethod
    def _provider_from_kind(cls, data: Any) -> Any:
        if isinstance(data, dict) and "provider" not in data and isinstance(data.get("kind"), str):
            data = {**data, "provider": data["kind"]}
        return data

    @model_validator(mode="after")
    def _check(self) -> ModelTargetConfig:
        if self.provider != self.kind:
            raise ValueError(f"provider {self.provider!r} contradicts kind {self.kind!r}")
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("give exactly one of `prompt` (a template) or `messages`")
        return self

    def provider_config(self) -> ProviderConfig:
        fields = {k: getattr(self, k) for k in ProviderConfig.model_fields}
        return ProviderConfig.model_validate(fields)

    def requires_env(self) -> list[str]:
        from evalh.providers.loopback import is_mock_url

        return [] if is_mock_url(self.base_url) else [self.key_env()]

    def model_id(self) -> str | None:
        return self.model


class _ModelConfigs(dict[str, type[TargetConfig]]):
    """Kind → config: `ModelTargetConfig` for every provider, built-in or plugin."""

    def __missing__(self, kind: str) -> type[TargetConfig]:
        from evalh import registry

        if kind in registry.model_kinds():
            return ModelTargetConfig
        raise KeyError(kind)


CONFIGS: dict[str, type[TargetConfig]] = _ModelConfigs(
    anthropic=ModelTargetConfig,
    openai=ModelTargetConfig,
)


class ModelTarget(Target):
    def __init__(self, config: ModelTargetConfig) -> None:
        self.config = config
        self._provider_config = config.provider_config()
        self._system = compile_template(config.system, "system") if config.system else None
        if config.messages is not None:
            self._messages = [
                (m.role, compile_template(m.content, f"messages[{i}]"), f"messages[{i}]")
                for i, m in enumerate(config.messages)
            ]
        else:
            assert config.prompt is not None
            self._messages = [("user", compile_template(config.prompt, "prompt"), "prompt")]
        self._client: tuple[Any, Any] | None = None
        """(services, client): the run's client for this target, looked up once per run."""

    def render(self, case: Case) -> tuple[str | None, list[dict[str, Any]]]:
        """(system, messages) for one case. Raises TemplateError naming the template."""
        variables = template_vars(case)
        system = render(self._system, "system", variables) if self._system else None
        messages = [
            {"role": role, "content": render(tpl, name, variables)}
            for role, tpl, name in self._messages
        ]
        return system, messages

    def prompt_text(self, case: Case) -> str | None:
        system, messages = self.render(case)
        return (system or "") + "".join(str(m.get("content", "")) for m in messages)

    def max_output_tokens(self) -> int | None:
        return self.config.max_tokens

    async def call(self, case: Case, ctx: CallContext) -> TargetOutput:
        from evalh.targets.pacing import before_call

        await before_call(self.config, case, ctx.services)
        system, messages = self.render(case)
        services = ctx.services
        cache = services.cache
        memo = self._client
        # still the run's (closing the run's providers forgets them)
        if memo is not None and memo[0] is services and any(c is memo[1] for c in services.providers.values()):
            client = memo[1]
        else:  # get_provider digests the config to find the run's client: once per run
            from evalh.providers.clients import get_provider

            client = get_provider(self._provider_config, services)
            self._client = (services, client)
        cfg = self.config
        reply = await client.chat(
            ChatRequest(
                model=cfg.model, messages=messages, system=system, max_tokens=cfg.max_tokens,
                temperature=cfg.temperature, params=dict(cfg.params),
                attempt=cache.attempt_for(ctx.suite, ctx.attempt) if cache is not None else ctx.attempt,
                billed_by_runner=True,
            )
        )
        output: Any = reply.text
        if cfg.output == "json":
            output = parse_json_reply(reply.text, truncated=reply.truncated)
        return TargetOutput(
            output=output, trace=reply.tool_calls, tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out, cost_usd=reply.cost_usd, cached=reply.cached,
            truncated=reply.truncated, model=reply.model,
            extra={"stop_reason": reply.stop_reason},
        )

    async def aclose(self) -> None:
        """Provider clients are shared by the run and closed at its end."""


def parse_json_reply(text: str, *, truncated: bool = False) -> Any:
    """The reply as JSON; one surrounding Markdown code fence is tolerated.
    Raises TargetError with an excerpt when it is not JSON."""
    body = text.strip()
    if body.startswith("```"):
        first, _, rest = body.partition("\n")
        if rest.rstrip().endswith("```"):
            body = rest.rstrip()[:-3].strip()
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        why = " (the reply was cut at max_tokens)" if truncated else ""
        raise TargetError(
            f"reply is not valid JSON{why}: {exc.msg} at char {exc.pos}; reply starts {text[:120]!r}"
        ) from None


def build(config: TargetConfig, root: Path) -> ModelTarget:
    assert isinstance(config, ModelTargetConfig)
    return ModelTarget(config)
