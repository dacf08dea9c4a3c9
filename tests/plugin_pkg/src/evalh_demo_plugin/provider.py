"""`demo_echo`: a provider that answers in-process with the prompt in capitals (no network)."""

from __future__ import annotations

from evalh.providers.base import ChatRequest, ChatResponse, ProviderConfig

KEY_ENV = "DEMO_ECHO_KEY"


def resolve_base_url(config: ProviderConfig) -> str:
    return config.base_url or "echo://local"


class EchoBackend:
    provider = "demo_echo"

    def __init__(self, config: ProviderConfig, api_key: str) -> None:
        self.base_url = resolve_base_url(config)

    async def send(self, request: ChatRequest) -> ChatResponse:
        text = " ".join(str(m["content"]) for m in request.messages).upper()
        return ChatResponse(text=text, model=request.model, tokens_in=len(text.split()),
                            tokens_out=len(text.split()), stop_reason="end_turn")

    async def aclose(self) -> None:
        return None


def make_backend(config: ProviderConfig, api_key: str) -> EchoBackend:
    return EchoBackend(config, api_key)
