"""`demo_shout`: sends the case's text to a model through evalh's provider layer (the
`demo_echo` provider by default) and returns the reply."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from evalh.models import Case
from evalh.providers.base import ChatRequest, ProviderConfig
from evalh.targets.base import CallContext, Target, TargetConfig, TargetOutput


class ShoutConfig(TargetConfig):
    SNAPSHOT = frozenset({"kind", "provider", "model"})
    kind: Literal["demo_shout"] = "demo_shout"
    provider: str = "demo_echo"
    model: str = "echo-1"


CONFIGS: dict[str, type[TargetConfig]] = {"demo_shout": ShoutConfig}


class ShoutTarget(Target):
    def __init__(self, config: ShoutConfig) -> None:
        self.config = config
        self.provider = ProviderConfig(provider=config.provider, model=config.model,
                                       api_key_env="DEMO_ECHO_KEY")

    async def call(self, case: Case, ctx: CallContext) -> TargetOutput:
        from evalh.providers.clients import get_provider

        client = get_provider(self.provider, ctx.services)
        text = case.input["text"] if isinstance(case.input, dict) else str(case.input)
        reply = await client.chat(ChatRequest(model=self.config.model, messages=[{"role": "user", "content": text}]))
        return TargetOutput(output=reply.text, tokens_in=reply.tokens_in, tokens_out=reply.tokens_out,
                            model=reply.model)



def build(config: TargetConfig, root: Path) -> ShoutTarget:
    assert isinstance(config, ShoutConfig)
    return ShoutTarget(config)
