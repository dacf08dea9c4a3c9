"""Provider layer: the real anthropic SDK and the real httpx client against the loopback
mock provider, for every fault it can inject; retries, adaptive limits, the response
cache, prices and the budget rule."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from evalh.mock import MockProvider
from evalh.providers import (
    ChatRequest,
    ProviderConfig,
    ProviderError,
    close_providers,
    get_provider,
)
from evalh.providers.cache import ResponseCache, cache_key, credential_id, endpoint_of
from evalh.providers.clients import ManagedClient
from evalh.providers.prices import DEFAULT_PRICES, cost_usd, merged_prices, price_for
from evalh.providers.resilience import EndpointLimits, RetryPolicy, parse_retry_after
from evalh.services import Budget, Price, RunServices

KEY_ENV = "EVALH_TEST_PROVIDER_KEY"
MODEL = "claude-haiku-4-5"  # priced in the default table: $1 / $5 per million tokens


@pytest.fixture
def mp() -> Iterator[MockProvider]:
    with MockProvider([{"match": "hello", "text": "hello back to you"}]) as provider:
        yield provider


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proxy variable from the machine running the tests (each test sets its own)."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-0123456789")


def services(tmp_path: Path, *, cache: bool = False, prices: dict[str, Price] | None = None) -> RunServices:
    return RunServices(
        root=tmp_path,
        prices=merged_prices(prices or {}),
        budget=Budget(),
        cache=ResponseCache(tmp_path / "cache") if cache else None,
    )


def config(mp: MockProvider, provider: str = "anthropic", **kw: Any) -> ProviderConfig:
    base = mp.base_url if provider == "anthropic" else mp.openai_base_url
    fields: dict[str, Any] = {
        "provider": provider, "model": MODEL, "base_url": base, "api_key_env": KEY_ENV,
        "backoff_base_s": 0.001, "backoff_max_s": 0.01, "timeout_s": 5,
    }
    fields.update(kw)
    return ProviderConfig(**fields)


def request(text: str = "hello", **kw: Any) -> ChatRequest:
    return ChatRequest(model=kw.pop("model", MODEL), messages=[{"role": "user", "content": text}], **kw)


class Waits:
    """Records the waits between retries instead of spending them: a clock of its own that
    moves by what is slept (a retry waits to a deadline on its clock)."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.now = 0.0

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def client_for(cfg: ProviderConfig, svc: RunServices) -> tuple[ManagedClient, Waits]:
    client = get_provider(cfg, svc)
    waits = Waits()
    client.sleep, client.clock = waits, waits.clock
    return client, waits


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _chat_and_close(client: ManagedClient, svc: RunServices, req: ChatRequest) -> Any:
    try:
        return await client.chat(req)
    finally:
        await close_providers(svc)


PROVIDERS = ["anthropic", "openai"]


# --- unit: retry-after and backoff --------------------------------------------------


def test_retry_after_in_seconds_milliseconds_and_http_date() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    # retry-after-ms is more precise and wins when both are present
    assert parse_retry_after({"retry-after": "2", "retry-after-ms": "250"}) == 0.25
    now = datetime(2026, 1, 1, tzinfo=UTC)
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now.timestamp()) == pytest.approx(30.0)
    assert parse_retry_after({"retry-after": format_datetime(now - timedelta(seconds=9), usegmt=True)},
                             now=now.timestamp()) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_is_full_jitter_capped_and_yields_to_retry_after() -> None:
    policy = RetryPolicy(max_retries=5, backoff_base_s=1.0, backoff_max_s=5.0)
    rng = random.Random(7)
    for retry, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (6, 5.0)]:
        delays = [policy.delay(retry, None, rng) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling * 0.8  # full jitter spreads over the whole range
    assert policy.delay(0, 42.0, rng) == 42.0  # the server's retry-after is honoured as given


# --- unit: adaptive in-flight limit -------------------------------------------------


def test_adaptive_limit_halves_once_per_burst_and_recovers_by_one() -> None:
    lim = EndpointLimits("x", max_in_flight=16)
    lim.on_rate_limited(epoch=0, retry_after=None)
    assert lim.current == 8
    lim.on_rate_limited(epoch=0, retry_after=None)  # same burst: started before the halving
    assert lim.current == 8
    lim.on_rate_limited(epoch=1, retry_after=None)
    assert (lim.current, lim.min_reached, lim.rate_limited) == (4, 4, 3)
    for epoch in range(2, 10):
        lim.on_rate_limited(epoch=epoch, retry_after=None)
    assert lim.current == 1  # never below one
    for _ in range(30):
        lim.on_success()
    assert lim.current == 16  # grows back one by one, up to the ceiling
    d = lim.describe()
    assert (d["max_in_flight"], d["in_flight_limit"], d["in_flight_min"], d["rate_limited"]) == (16, 16, 1, 11)


def test_cancelled_requests_give_their_slots_back() -> None:
    async def scenario() -> EndpointLimits:
        lim = EndpointLimits("x", max_in_flight=1)

        async def hold() -> None:
            async with lim.slot():
                await asyncio.Event().wait()

        holder = asyncio.create_task(hold())
        await asyncio.sleep(0)
        waiter = asyncio.create_task(hold())  # queued behind the holder
        await asyncio.sleep(0)
        assert lim.in_flight == 1 and len(lim._waiters) == 1
        holder.cancel()
        waiter.cancel()  # cancelled while it may just have been woken
        await asyncio.gather(holder, waiter, return_exceptions=True)
        async with lim.slot():  # the endpoint is usable again
            pass
        return lim

    lim = run(scenario())
    assert lim.in_flight == 0 and not lim._waiters and lim.requests == 2


def test_in_flight_never_exceeds_the_limit(mp: MockProvider, tmp_path: Path) -> None:
    mp.latency_ms = 20
    svc = services(tmp_path)
    client, _ = client_for(config(mp, max_in_flight=3), svc)

    async def many() -> list[Any]:
        try:
            return await asyncio.gather(*[client.chat(request(f"hello {i}")) for i in range(12)])
        finally:
            await close_providers(svc)

    replies = run(many())
    assert len(replies) == 12 and mp.count() == 12
    assert svc.limits[client.endpoint].peak == 3


# --- integration: each fault, through the real clients ----------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_waits_the_retry_after_then_succeeds(mp: MockProvider, tmp_path: Path, provider: str) -> None:
    svc = services(tmp_path)
    client, waits = client_for(config(mp, provider), svc)
    mp.inject("rate_limit", retry_after=0.3)
    reply = run(_chat_and_close(client, svc, request()))
    assert reply.text == "hello back to you"
    assert waits.delays == [0.3]  # honoured, not replaced by the (tiny) backoff
    assert mp.count() == 2
    d = svc.limits[client.endpoint].describe()
    assert d["rate_limited"] == 1 and d["retries"] == 1 and d["in_flight_min"] == 8


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fault", ["server_error", "overloaded", "drop", "malformed_json"])
def test_transient_fault_is_retried_then_succeeds(
    mp: MockProvider, tmp_path: Path, provider: str, fault: str
) -> None:
    svc = services(tmp_path)
    client, waits = client_for(config(mp, provider), svc)
    mp.inject(fault)
    reply = run(_chat_and_close(client, svc, request()))
    assert reply.text == "hello back to you" and not reply.truncated
    assert mp.count() == 2 and len(waits.delays) == 1
    assert 0.0 <= waits.delays[0] <= 0.001  # first backoff: full jitter under the base


def test_529_overloaded_is_seen_as_such_on_the_anthropic_endpoint(mp: MockProvider, tmp_path: Path) -> None:
    svc = services(tmp_path)
    client, _ = client_for(config(mp, max_retries=1), svc)
    mp.inject("overloaded", times=2)
    with pytest.raises(ProviderError) as info:
        run(_chat_and_close(client, svc, request()))
    assert info.value.status == 529 and info.value.attempts == 2
    assert "overloaded" in str(info.value)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_slow_past_the_timeout_errors_after_bounded_attempts(
    mp: MockProvider, tmp_path: Path, provider: str
) -> None:
    svc = services(tmp_path)
    client, waits = client_for(config(mp, provider, timeout_s=0.2, max_retries=2), svc)
    mp.inject("slow", times=3, latency_ms=3000)
    with pytest.raises(ProviderError) as info:
        run(_chat_and_close(client, svc, request()))
    assert info.value.attempts == 3 and info.value.retryable
    assert "timed out" in str(info.value) and "3 attempts" in str(info.value)
    assert mp.count() == 3 and len(waits.delays) == 2
    assert svc.limits[client.endpoint].describe()["failures"] == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_persistent_server_errors_stop_at_max_retries(mp: MockProvider, tmp_path: Path, provider: str) -> None:
    svc = services(tmp_path)
    client, waits = client_for(config(mp, provider, max_retries=3), svc)
    mp.inject("server_error", times=50)
    with pytest.raises(ProviderError) as info:
        run(_chat_and_close(client, svc, request()))
    assert (info.value.status, info.value.attempts) == (500, 4)
    assert "HTTP 500" in str(info.value)
    assert mp.count() == 4 and len(waits.delays) == 3
    assert svc.budget.tokens == 0 and svc.budget.cost_usd == 0  # nothing was billed


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_json_every_time_is_a_clear_retryable_error(
    mp: MockProvider, tmp_path: Path, provider: str
) -> None:
    svc = services(tmp_path)
    client, _ = client_for(config(mp, provider, max_retries=1), svc)
    mp.inject("malformed_json", times=5)
    with pytest.raises(ProviderError) as info:
        run(_chat_and_close(client, svc, request()))
    assert "malformed" in str(info.value) and info.value.attempts == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_reply_cut_at_max_tokens_is_marked_truncated(mp: MockProvider, tmp_path: Path, provider: str) -> None:
    svc = services(tmp_path)
    client, _ = client_for(config(mp, provider), svc)
    reply = run(_chat_and_close(client, svc, request(max_tokens=2)))
    assert reply.truncated and reply.text == "hello back"
    assert reply.stop_reason == ("max_tokens" if provider == "anthropic" else "length")
    assert reply.tokens_out == 2


def test_client_errors_are_not_retried(mp: MockProvider, tmp_path: Path) -> None:
    svc = services(tmp_path)
    # An OpenAI-compatible base URL without /v1: the server answers 404, once.
    client, waits = client_for(config(mp, "openai", base_url=mp.base_url), svc)
    with pytest.raises(ProviderError) as info:
        run(_chat_and_close(client, svc, request()))
    assert info.value.status == 404 and info.value.attempts == 1 and not info.value.retryable
    assert "/v1" in str(info.value)  # the hint says what to fix
    assert waits.delays == [] and mp.count() == 1


@pytest.mark.parametrize(
    ("env", "key", "expected"),
    [
        ({"ALL_PROXY": "socks5://user:hunter2@proxy.invalid:1080"}, "sk-test-0123456789", "not an http:// or https:// proxy"),
        ({}, "sk-test\r\nX-Injected: 1", "line break"),
    ],
)
def test_an_unusable_proxy_or_key_is_a_permanent_error_before_any_request(
    mp: MockProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_proxy_env: None,
    env: dict[str, str], key: str, expected: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(KEY_ENV, key)
    svc = services(tmp_path)
    client, waits = client_for(config(mp, "openai"), svc)
    with pytest.raises(ProviderError) as info:
        run(_chat_and_close(client, svc, request()))
    assert expected in str(info.value) and not info.value.retryable and info.value.attempts == 1
    assert "hunter2" not in str(info.value)  # proxy credentials are not repeated
    assert waits.delays == [] and mp.count() == 0


def test_the_environment_proxy_is_found_once_and_no_proxy_is_honoured(
    monkeypatch: pytest.MonkeyPatch, no_proxy_env: None
) -> None:
    from evalh.providers.openai import env_proxy

    assert env_proxy("https://api.openai.com/v1") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    assert env_proxy("https://api.openai.com/v1") == "http://proxy.internal:3128"
    assert env_proxy("http://localhost:8000/v1") is None  # no proxy for http:// named
    monkeypatch.setenv("ALL_PROXY", "http://all.internal:3128")
    assert env_proxy("http://localhost:8000/v1") == "http://all.internal:3128"
    monkeypatch.setenv("NO_PROXY", "localhost,api.openai.com")
    assert env_proxy("http://localhost:8000/v1") is None
    assert env_proxy("https://api.openai.com/v1") is None


def test_requests_go_through_the_environment_proxy(mp: MockProvider, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch, no_proxy_env: None) -> None:
    """The mock answers absolute-form requests as a forward proxy would see them, so it can
    stand in for the proxy: the upstream host does not exist, the reply still comes back."""
    monkeypatch.setenv("HTTP_PROXY", mp.base_url)
    svc = services(tmp_path)
    client, _ = client_for(config(mp, "openai", base_url="http://upstream.invalid:9/v1"), svc)
    reply = run(_chat_and_close(client, svc, request("hello")))
    assert reply.text == "hello back to you"
    assert mp.requests[-1].path == "/v1/chat/completions"


# --- wire shapes ---------------------------------------------------------------------


def test_anthropic_usage_tools_and_wire_request(mp: MockProvider, tmp_path: Path) -> None:
    mp.set_script([{"match": "weather", "text": "Checking.",
                    "tool_calls": [{"name": "get_weather", "input": {"city": "Paris"}}]}])
    svc = services(tmp_path)
    client, _ = client_for(config(mp, temperature=0.2), svc)
    reply = run(_chat_and_close(client, svc, request("weather in Paris?", system="Be brief.",
                                                     params={"top_k": 5}, temperature=0.2)))
    assert reply.text == "Checking."
    assert reply.tool_calls and reply.tool_calls[0]["name"] == "get_weather"
    assert reply.tool_calls[0]["input"] == {"city": "Paris"}
    assert reply.tokens_in == 5 and reply.tokens_out == reply.tokens_out and reply.tokens_out > 0
    body = mp.requests[-1].body
    assert body["system"] == "Be brief." and body["top_k"] == 5 and body["temperature"] == 0.2
    assert mp.requests[-1].headers.get("x-stainless-retry-count") in (None, "0")


def test_openai_body_headers_and_tool_arguments(mp: MockProvider, tmp_path: Path) -> None:
    mp.set_script([{"match": "weather", "tool_calls": [{"name": "get_weather", "input": {"city": "Oslo"}}]}])
    svc = services(tmp_path)
    client, _ = client_for(config(mp, "openai"), svc)
    reply = run(_chat_and_close(
        client, svc, request("weather?", system="Be brief.", params={"max_completion_tokens": 50, "seed": 3})
    ))
    assert reply.tool_calls == [{"id": reply.tool_calls[0]["id"], "name": "get_weather", "input": {"city": "Oslo"}}]
    rec = mp.requests[-1]
    assert rec.path == "/v1/chat/completions"
    assert rec.headers["authorization"] == "Bearer ***"  # sent as Bearer (masked by the mock)
    assert rec.body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert rec.body["max_completion_tokens"] == 50 and "max_tokens" not in rec.body
    assert rec.body["seed"] == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_connections_are_kept_alive_and_bounded_by_requests_in_flight(
    mp: MockProvider, tmp_path: Path, provider: str
) -> None:
    """Throughput at many requests in flight rests on keep-alive: 5 rounds of 6 concurrent
    requests open at most 6 connections, and 10 sequential ones reuse a single one."""
    svc = services(tmp_path)
    client, _ = client_for(config(mp, provider), svc)

    async def go() -> None:
        try:
            for _ in range(5):
                await asyncio.gather(*(client.chat(request("hi")) for _ in range(6)))
            first = mp.connections_accepted
            for _ in range(10):
                await client.chat(request("hi"))
            assert mp.connections_accepted - first <= 1
        finally:
            await close_providers(svc)

    run(go())
    assert mp.count() == 40
    assert 1 <= mp.connections_accepted <= 7


def test_missing_key_is_a_provider_error_naming_the_variable(mp: MockProvider, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ProviderError, match=f"set {KEY_ENV}"):
        get_provider(config(mp), services(tmp_path))


def test_a_key_from_a_plainly_named_variable_is_still_scrubbed(mp: MockProvider, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`api_key_env` may name a variable the environment scrub would not recognise as secret:
    the key it holds must be scrubbed all the same once a provider has read it."""
    from evalh.redact import REDACTED, scrub_secrets, scrub_text

    key = "acc-plain-name-0123456789abcdef"
    monkeypatch.setenv("EVALH_LLM_ACCESS", key)
    assert scrub_text(f"echo {key}") == f"echo {key}"  # the name alone does not mark it secret
    svc = services(tmp_path)
    get_provider(config(mp, api_key_env="EVALH_LLM_ACCESS"), svc)
    asyncio.run(close_providers(svc))
    assert scrub_text(f"echo {key}") == f"echo {REDACTED}"
    assert key.encode() not in scrub_secrets(f'{{"output": "{key}"}}'.encode())


def test_clients_and_limits_are_shared_per_endpoint(mp: MockProvider, tmp_path: Path) -> None:
    svc = services(tmp_path)
    a = get_provider(config(mp), svc)
    assert get_provider(config(mp), svc) is a  # memoized per run
    b = get_provider(config(mp, model="other-model", max_tokens=10), svc)
    assert b is not a and b.backend is a.backend and b.limits is a.limits
    c = get_provider(config(mp, "openai"), svc)
    assert c.limits is not a.limits
    assert sorted(svc.limits) == [f"anthropic@{mp.base_url}", f"openai@{mp.openai_base_url}"]
    run(close_providers(svc))
    assert svc.providers == {}


# --- prices and budget ---------------------------------------------------------------


def test_prices_defaults_dated_aliases_overrides_and_unknown_models() -> None:
    assert price_for(DEFAULT_PRICES, "claude-sonnet-4-5") == Price(input=3.0, output=15.0)
    assert price_for(DEFAULT_PRICES, "claude-sonnet-4-5-20250929") == Price(input=3.0, output=15.0)
    assert price_for(DEFAULT_PRICES, "gpt-4o-mini") == Price(input=0.15, output=0.6)
    assert cost_usd(DEFAULT_PRICES, "no-such-model", 1000, 1000) is None  # unknown: null, never 0
    assert cost_usd(DEFAULT_PRICES, MODEL, None, 10) is None  # unknown usage: null too
    prices = merged_prices({MODEL: Price(input=2.0, output=4.0)})
    assert cost_usd(prices, MODEL, 1_000_000, 500_000) == pytest.approx(4.0)


def test_judge_calls_charge_the_budget_target_calls_do_not(mp: MockProvider, tmp_path: Path) -> None:
    svc = services(tmp_path)
    client, _ = client_for(config(mp), svc)

    async def both() -> tuple[Any, Any]:
        try:
            judge = await client.chat(request("hello judge"))
            target = await client.chat(request("hello target", billed_by_runner=True))
            return judge, target
        finally:
            await close_providers(svc)

    judge, target = run(both())
    assert judge.cost_usd == pytest.approx((judge.tokens_in * 1.0 + judge.tokens_out * 5.0) / 1e6)
    assert svc.budget.tokens == judge.tokens_in + judge.tokens_out  # the target's are the runner's
    assert svc.budget.cost_usd == pytest.approx(judge.cost_usd)
    assert target.cost_usd is not None


def test_unpriced_model_has_null_cost(mp: MockProvider, tmp_path: Path) -> None:
    svc = services(tmp_path)
    client, _ = client_for(config(mp, model="house-model-7b"), svc)
    reply = run(_chat_and_close(client, svc, request(model="house-model-7b")))
    assert reply.tokens_in and reply.cost_usd is None


# --- the response cache --------------------------------------------------------------


def test_cache_hit_is_marked_cached_free_and_without_latency(mp: MockProvider, tmp_path: Path) -> None:
    svc = services(tmp_path, cache=True)
    client, _ = client_for(config(mp), svc)

    async def twice() -> tuple[Any, Any]:
        try:
            return await client.chat(request()), await client.chat(request())
        finally:
            await close_providers(svc)

    first, second = run(twice())
    assert not first.cached and first.cost_usd and first.latency_ms is not None
    assert second.cached and second.cost_usd == 0.0 and second.latency_ms is None
    assert second.text == first.text and second.tokens_out == first.tokens_out
    assert mp.count() == 1
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 1 and files[0].parent.name == files[0].name[:2]  # sharded by 2 hex
    assert svc.budget.tokens == first.tokens_in + first.tokens_out  # the hit charged nothing


def test_errors_and_truncated_replies_are_never_cached(mp: MockProvider, tmp_path: Path) -> None:
    svc = services(tmp_path, cache=True)
    client, _ = client_for(config(mp, max_retries=0), svc)
    mp.inject("server_error")

    async def go() -> tuple[Any, Any, Any]:
        try:
            with pytest.raises(ProviderError):
                await client.chat(request())
            ok = await client.chat(request())  # the error was not stored: asked again
            cut1 = await client.chat(request(max_tokens=1))
            cut2 = await client.chat(request(max_tokens=1))
            return ok, cut1, cut2
        finally:
            await close_providers(svc)

    ok, cut1, cut2 = run(go())
    assert not ok.cached and cut1.truncated and cut2.truncated and not cut2.cached
    assert mp.count() == 4


def test_concurrent_identical_requests_are_made_once(mp: MockProvider, tmp_path: Path) -> None:
    mp.latency_ms = 30
    svc = services(tmp_path, cache=True)
    client, _ = client_for(config(mp), svc)

    async def burst() -> list[Any]:
        try:
            return await asyncio.gather(*[client.chat(request()) for _ in range(5)])
        finally:
            await close_providers(svc)

    replies = run(burst())
    assert mp.count() == 1
    assert sum(not r.cached for r in replies) == 1 and all(r.text == "hello back to you" for r in replies)


def test_cache_key_covers_what_changes_the_reply_and_never_the_key() -> None:
    base = request(system="s", params={"top_p": 0.9})
    k = cache_key("anthropic", "https://api.anthropic.com", base)
    variants = [
        cache_key("openai", "https://api.anthropic.com", base),
        cache_key("anthropic", "https://proxy.example.com", base),
        cache_key("anthropic", "https://api.anthropic.com", request(model="other", system="s", params={"top_p": 0.9})),
        cache_key("anthropic", "https://api.anthropic.com", request(system="t", params={"top_p": 0.9})),
        cache_key("anthropic", "https://api.anthropic.com", request("bye", system="s", params={"top_p": 0.9})),
        cache_key("anthropic", "https://api.anthropic.com", request(system="s", params={"top_p": 0.8})),
        cache_key("anthropic", "https://api.anthropic.com", request(system="s", params={"top_p": 0.9}, max_tokens=9)),
        cache_key("anthropic", "https://api.anthropic.com", request(system="s", params={"top_p": 0.9}, temperature=0.0)),
        cache_key("anthropic", "https://api.anthropic.com", request(system="s", params={"top_p": 0.9}, attempt=1)),
        cache_key("anthropic", "https://api.anthropic.com", request(system="s", params={"top_p": 0.9}, cache_salt="rubric")),
    ]
    assert len({k, *variants}) == len(variants) + 1
    # credentials in the URL are not part of the key; the identity of the key sent is
    assert cache_key("anthropic", "https://user:pw@api.anthropic.com", base) == k
    a, b = credential_id("sk-account-a-0123456789"), credential_id("sk-account-b-0123456789")
    assert cache_key("anthropic", "https://api.anthropic.com", base, credential=a) not in (
        k, cache_key("anthropic", "https://api.anthropic.com", base, credential=b))
    assert "sk-account-a" not in a and len(a) == 64
    assert endpoint_of("http://u:secret@127.0.0.1:8000/v1/") == "127.0.0.1:8000/v1"


def test_repeats_get_their_own_reply_unless_the_suite_shares_them(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path, shared_repeats=["shared"])
    assert [cache.attempt_for("own", a) for a in range(3)] == [0, 1, 2]
    assert [cache.attempt_for("shared", a) for a in range(3)] == [0, 0, 0]
    keys = {cache_key("anthropic", None, request(attempt=cache.attempt_for("own", a))) for a in range(3)}
    assert len(keys) == 3


def test_unreadable_cache_entry_is_a_miss(mp: MockProvider, tmp_path: Path) -> None:
    svc = services(tmp_path, cache=True)
    client, _ = client_for(config(mp), svc)
    key = client.cache_key(request())
    path = svc.cache.path_for(key)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"{not json")
    reply = run(_chat_and_close(client, svc, request()))
    assert not reply.cached and mp.count() == 1
    assert svc.cache.get(key) is not None  # rewritten with the fresh reply


def test_rate_limits_let_a_request_bigger_than_the_minute_through(mp: MockProvider, tmp_path: Path) -> None:
    svc = services(tmp_path)
    # the request reserves ~1024 tokens (its max_tokens) against a 10-token minute: it goes, alone
    client, _ = client_for(config(mp, rpm=60, tpm=10), svc)
    reply = run(_chat_and_close(client, svc, request()))
    assert reply.text == "hello back to you"
    d = svc.limits[client.endpoint].describe()
    assert (d["rpm"], d["tpm"], d["requests"]) == (60, 10, 1)


def test_an_edited_mock_script_is_not_served_from_the_cache(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('[{"match": "hello", "text": "first"}]')
    cfg = ProviderConfig(provider="anthropic", model=MODEL, base_url="mock:script.json")

    def ask() -> Any:
        svc = services(tmp_path, cache=True)
        return run(_chat_and_close(get_provider(cfg, svc), svc, request()))

    assert ask().text == "first"
    assert ask().cached
    script.write_text('[{"match": "hello", "text": "second"}]')
    reply = ask()
    assert reply.text == "second" and not reply.cached


def test_an_anthropic_reply_of_the_wrong_shape_is_a_retryable_malformed_reply() -> None:
    from evalh.providers.anthropic import _response
    from evalh.providers.resilience import TransientError

    for data in ([], {"type": "message"}, {"content": "text"}, None):
        with pytest.raises(TransientError, match="malformed reply from Anthropic"):
            _response(data, MODEL)
    reply = _response({"content": [{"type": "text", "text": "a"}, "junk", {"type": "tool_use", "id": "t1",
                       "name": "f", "input": {"x": 1}}], "stop_reason": "max_tokens", "usage": {"input_tokens": 3}},
                      MODEL)
    assert (reply.text, reply.model, reply.tokens_in, reply.tokens_out, reply.truncated) == ("a", MODEL, 3, None, True)
    assert reply.tool_calls == [{"id": "t1", "name": "f", "input": {"x": 1}}]
