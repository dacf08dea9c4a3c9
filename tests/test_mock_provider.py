"""The mock provider, driven by the real anthropic SDK and a real httpx client."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from runner_project import default_sigint

from evalh.errors import ConfigError
from evalh.mock import MockProvider, Script
from evalh.mock.shapes import count_tokens

KEY = "test-key"
MODEL = "claude-test"
OPENAI_AUTH = {"authorization": f"Bearer {KEY}"}


@pytest.fixture
def mp() -> Iterator[MockProvider]:
    with MockProvider() as provider:
        yield provider


def client(mp: MockProvider, **kw: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=mp.base_url, api_key=KEY, max_retries=0, **kw)


def ask(mp: MockProvider, prompt: str, *, max_tokens: int = 100, **kw: Any) -> Any:
    return client(mp).messages.create(
        model=MODEL, max_tokens=max_tokens, messages=[{"role": "user", "content": prompt}], **kw
    )


def text_of(msg: Any) -> str:
    return "".join(b.text for b in msg.content if b.type == "text")


def chat(mp: MockProvider, prompt: str, **body: Any) -> httpx.Response:
    payload = {"model": "gpt-test", "messages": [{"role": "user", "content": prompt}], **body}
    return httpx.post(mp.base_url + "/v1/chat/completions", json=payload, headers=OPENAI_AUTH)


# --- scripted replies ------------------------------------------------------------------


def test_scripted_text_by_prompt_match(mp: MockProvider) -> None:
    mp.set_script(
        [
            {"match": "capital of France", "text": "Paris"},
            {"match": "regex:^Translate .+ to German$", "text": "Hallo"},
            {"match": "be terse", "text": "terse reply"},
            {"model": "claude-other", "text": "other model"},
            {"endpoint": "openai", "text": "only openai"},
        ]
    )
    msg = ask(mp, "What is the capital of France?")
    assert text_of(msg) == "Paris"
    assert msg.type == "message" and msg.role == "assistant" and msg.model == MODEL
    assert msg.id.startswith("msg_") and msg.stop_reason == "end_turn" and msg.stop_sequence is None
    assert text_of(ask(mp, "Translate hello to German")) == "Hallo"
    assert text_of(ask(mp, "hello", system="You must be terse.")) == "terse reply"
    other = client(mp).messages.create(
        model="claude-other", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert text_of(other) == "other model"
    assert text_of(ask(mp, "nothing matches")) == "ok"
    assert chat(mp, "nothing matches").json()["choices"][0]["message"]["content"] == "only openai"


def test_prompt_text_includes_every_message_and_blocks(mp: MockProvider) -> None:
    mp.set_script([{"match": "regex:(?s)first.*second.*third", "text": "saw all"}])
    msg = client(mp).messages.create(
        model=MODEL,
        max_tokens=50,
        system=[{"type": "text", "text": "first"}],
        messages=[
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "third"}]},
        ],
    )
    assert text_of(msg) == "saw all"


def test_times_gives_garbage_first_then_good(mp: MockProvider) -> None:
    mp.set_script(
        [
            {"match": "question", "times": 2, "text": "garbage"},
            {"match": "question", "json": {"answer": 42}},
        ]
    )
    replies = [text_of(ask(mp, "a question")) for _ in range(4)]
    assert replies == ["garbage", "garbage", '{"answer":42}', '{"answer":42}']


def test_sequence_then_last_repeats_and_reset(mp: MockProvider) -> None:
    mp.set_script([{"match": "q", "sequence": ["one", {"text": "two"}, "three"]}])
    assert [text_of(ask(mp, "q")) for _ in range(4)] == ["one", "two", "three", "three"]
    mp.reset()
    assert text_of(ask(mp, "q")) == "one"
    assert mp.count() == 1


def test_sequence_with_times_falls_through(mp: MockProvider) -> None:
    mp.set_script([{"match": "q", "times": 2, "sequence": ["one", "two"]}])
    assert [text_of(ask(mp, "q")) for _ in range(3)] == ["one", "two", "ok"]


def test_usage_counts_and_override(mp: MockProvider) -> None:
    mp.set_script(
        [
            {"match": "count me", "text": "three word reply"},
            {"match": "override", "text": "x", "usage": {"input_tokens": 11, "output_tokens": 22}},
        ]
    )
    prompt = "please count me now"
    msg = ask(mp, prompt)
    assert msg.usage.input_tokens == count_tokens(prompt) == 4
    assert msg.usage.output_tokens == 3
    msg = ask(mp, "override")
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (11, 22)
    usage = chat(mp, "override").json()["usage"]
    assert usage == {"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33}


def test_tool_use_blocks(mp: MockProvider) -> None:
    mp.set_script(
        [
            {
                "match": "weather",
                "text": "Let me check.",
                "tool_calls": [{"name": "get_weather", "input": {"city": "Paris"}}],
            }
        ]
    )
    msg = ask(mp, "what's the weather in Paris?")
    assert msg.stop_reason == "tool_use"
    text, tool = msg.content
    assert text.type == "text" and text.text == "Let me check."
    assert tool.type == "tool_use" and tool.name == "get_weather"
    assert tool.input == {"city": "Paris"} and tool.id.startswith("toolu_")

    choice = chat(mp, "weather?").json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}


def test_max_tokens_truncation(mp: MockProvider) -> None:
    mp.set_script([{"match": "long", "text": "one two three four five six"}])
    msg = ask(mp, "long please", max_tokens=3)
    assert text_of(msg) == "one two three"
    assert msg.stop_reason == "max_tokens" and msg.usage.output_tokens == 3
    assert ask(mp, "long please", max_tokens=6).stop_reason == "end_turn"
    choice = chat(mp, "long", max_tokens=2).json()["choices"][0]
    assert choice["finish_reason"] == "length" and choice["message"]["content"] == "one two"
    assert (
        chat(mp, "long", max_completion_tokens=4).json()["choices"][0]["finish_reason"] == "length"
    )


def test_stop_sequences(mp: MockProvider) -> None:
    mp.set_script([{"text": "alpha beta END gamma"}])
    msg = ask(mp, "go", stop_sequences=["END"])
    assert text_of(msg) == "alpha beta " and msg.stop_reason == "stop_sequence"
    assert msg.stop_sequence == "END"


def test_truncate_fault(mp: MockProvider) -> None:
    mp.set_script([{"match": "cut", "text": "a b c d e f", "fault": "truncate"}])
    msg = ask(mp, "cut it")
    assert text_of(msg) == "a b c" and msg.stop_reason == "max_tokens"
    mp.inject("truncate", tokens=1)
    assert text_of(ask(mp, "cut it")) == "a"


# --- faults surface as the SDK's real exceptions ----------------------------------------


def test_rate_limit(mp: MockProvider) -> None:
    mp.inject("rate_limit", retry_after=2)
    with pytest.raises(anthropic.RateLimitError) as info:
        ask(mp, "hi")
    err = info.value
    assert err.status_code == 429
    assert err.response.headers["retry-after"] == "2"
    assert err.response.headers["retry-after-ms"] == "2000"
    assert err.body["type"] == "error" and err.body["error"]["type"] == "rate_limit_error"
    assert text_of(ask(mp, "hi")) == "ok"  # only the next request was forced


def test_server_error(mp: MockProvider) -> None:
    mp.inject("server_error")
    with pytest.raises(anthropic.InternalServerError) as info:
        ask(mp, "hi")
    assert info.value.status_code == 500
    assert not isinstance(info.value, anthropic.OverloadedError)
    assert info.value.body["error"]["type"] == "api_error"


def test_overloaded_is_529(mp: MockProvider) -> None:
    mp.inject("overloaded")
    with pytest.raises(anthropic.APIStatusError) as info:
        ask(mp, "hi")
    # anthropic 2.x maps 529 to OverloadedError, a subclass of InternalServerError.
    assert info.value.status_code == 529
    assert isinstance(info.value, anthropic.OverloadedError)
    assert isinstance(info.value, anthropic.InternalServerError)
    assert info.value.body["error"]["type"] == "overloaded_error"


def test_slow_exceeds_client_timeout(mp: MockProvider) -> None:
    mp.inject("slow", latency_ms=3000)
    started = time.monotonic()
    with pytest.raises(anthropic.APITimeoutError):
        ask(mp, "hi", timeout=0.3)
    assert time.monotonic() - started < 2.0
    mp.set_script([{"match": "slowish", "fault": "slow", "latency_ms": 150}])
    started = time.monotonic()
    assert text_of(ask(mp, "slowish")) == "ok"
    assert time.monotonic() - started >= 0.14


def test_drop_is_connection_error(mp: MockProvider) -> None:
    mp.inject("drop")
    with pytest.raises(anthropic.APIConnectionError) as info:
        ask(mp, "hi")
    assert not isinstance(info.value, anthropic.APITimeoutError)
    assert text_of(ask(mp, "hi")) == "ok"


def test_malformed_json(mp: MockProvider) -> None:
    mp.set_script([{"match": "broken", "fault": "malformed_json"}])
    # Real behaviour of anthropic 2.14: the JSON decode error escapes unwrapped.
    with pytest.raises(json.JSONDecodeError):
        ask(mp, "broken")
    resp = httpx.post(
        mp.base_url + "/v1/messages",
        headers={"x-api-key": KEY},
        json={"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "broken"}]},
    )
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    with pytest.raises(json.JSONDecodeError):
        resp.json()


def test_rule_fault_with_times_then_good(mp: MockProvider) -> None:
    mp.set_script(
        [
            {"match": "flaky", "times": 1, "fault": {"kind": "rate_limit", "retry_after": 0.5}},
            {"match": "flaky", "text": "fine now"},
        ]
    )
    with pytest.raises(anthropic.RateLimitError) as info:
        ask(mp, "flaky")
    assert info.value.response.headers["retry-after"] == "0.5"
    assert text_of(ask(mp, "flaky")) == "fine now"


def test_sdk_retries_through_injected_faults(mp: MockProvider) -> None:
    mp.inject("rate_limit", times=1, retry_after=0.01)
    mp.inject("server_error", times=1)
    c = anthropic.Anthropic(base_url=mp.base_url, api_key=KEY, max_retries=2)
    msg = c.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert text_of(msg) == "ok"
    assert mp.count("/v1/messages") == 3


def test_injected_faults_queue_and_endpoint_filter(mp: MockProvider) -> None:
    mp.set_script([{"match": "q", "times": 1, "text": "first"}, {"text": "later"}])
    mp.inject("server_error", times=1, endpoint="openai")
    mp.inject("rate_limit", times=2)
    with pytest.raises(anthropic.RateLimitError):
        ask(mp, "q")
    assert chat(mp, "q").status_code == 500  # the openai-only fault comes first for openai
    assert chat(mp, "q").status_code == 429
    # forced faults bypass the script: the `times: 1` rule is still unused
    assert text_of(ask(mp, "q")) == "first"


# --- auth, OpenAI shape, score, product, introspection ----------------------------------


def test_missing_key_is_401_in_provider_shape(mp: MockProvider) -> None:
    no_auth = anthropic.Anthropic(
        base_url=mp.base_url,
        api_key=KEY,
        max_retries=0,
        default_headers={"Authorization": anthropic.Omit()},
    )
    with pytest.raises(anthropic.AuthenticationError) as info:
        no_auth.messages.create(
            model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    assert info.value.body["error"]["type"] == "authentication_error"

    body = {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
    assert httpx.post(
        mp.base_url + "/v1/messages", json=body, headers={"x-api-key": "k"}
    ).is_success
    resp = httpx.post(mp.base_url + "/v1/chat/completions", json=body)
    assert resp.status_code == 401
    err = resp.json()["error"]
    assert err["type"] == "invalid_request_error" and err["code"] == "invalid_api_key"
    wrong_scheme = httpx.post(
        mp.base_url + "/v1/chat/completions", json=body, headers={"x-api-key": "k"}
    )
    assert wrong_scheme.status_code == 401


def test_bad_request_is_400(mp: MockProvider) -> None:
    resp = httpx.post(
        mp.base_url + "/v1/messages",
        headers={"x-api-key": KEY},
        json={"model": MODEL, "messages": [{"role": "user", "content": "x"}]},
    )
    assert resp.status_code == 400
    assert resp.json()["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in resp.json()["error"]["message"]
    bad = httpx.post(mp.base_url + "/v1/chat/completions", content=b"{nope", headers=OPENAI_AUTH)
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    assert httpx.post(mp.base_url + "/v1/nowhere", json={}).status_code == 404


def test_openai_shape(mp: MockProvider) -> None:
    mp.set_script([{"match": "hello", "text": "hi there"}])
    resp = chat(mp, "hello")
    assert resp.status_code == 200
    data = resp.json()
    assert data["object"] == "chat.completion" and data["model"] == "gpt-test"
    assert data["id"].startswith("chatcmpl-") and isinstance(data["created"], int)
    (choice,) = data["choices"]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"] == "hi there"
    assert data["usage"] == {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}

    mp.inject("rate_limit", retry_after=3)
    limited = chat(mp, "hello")
    assert limited.status_code == 429 and limited.headers["retry-after"] == "3"
    assert set(limited.json()["error"]) == {"message", "type", "param", "code"}
    mp.inject("overloaded")
    assert chat(mp, "hello").status_code == 503


def test_score_endpoint(mp: MockProvider) -> None:
    mp.set_script(
        [
            {"endpoint": "score", "match": "Paris", "score": 0.87},
            {"endpoint": "score", "match": "bananas", "sequence": [0.1, 0.2]},
        ]
    )
    url = mp.base_url + "/v1/score"
    data = httpx.post(
        url, json={"model": "rr", "text_1": "capital?", "text_2": "Paris is the capital"}
    ).json()
    assert data["data"] == [{"index": 0, "object": "score", "score": 0.87}]
    assert data["model"] == "rr" and data["object"] == "list"
    many = httpx.post(
        url, json={"model": "rr", "text_1": "q", "text_2": ["Paris", "bananas", "bananas", "q"]}
    ).json()
    assert [d["score"] for d in many["data"]] == [0.87, 0.1, 0.2, 1.0]  # last: word overlap
    assert [d["index"] for d in many["data"]] == [0, 1, 2, 3]
    assert httpx.post(url, json={"model": "rr", "text_1": "q"}).status_code == 400


def test_product_endpoint(mp: MockProvider) -> None:
    mp.set_script(
        [
            {"endpoint": "product", "match": "refund", "json": {"intent": "refund", "score": 1}},
            {"endpoint": "product", "text": "plain answer"},
        ]
    )
    body = {"query": "I want a refund", "user": {"id": 7}}
    data = httpx.post(mp.base_url + "/v1/product", json=body).json()
    assert data["request"] == body
    assert data["output"] == {"intent": "refund", "score": 1}
    assert data["truncated"] is False and data["usage"]["input_tokens"] == 4
    other = httpx.post(mp.base_url + "/v1/product/chat", json={"q": "hello"}).json()
    assert other["output"] == "plain answer"


def test_health_requests_and_masking(mp: MockProvider) -> None:
    assert httpx.get(mp.base_url + "/health").status_code == 200
    ask(mp, "hi")
    chat(mp, "hi")
    assert mp.count() == 2 and mp.count("/v1/messages") == 1
    first, second = mp.requests
    assert first.path == "/v1/messages" and first.endpoint == "anthropic"
    assert first.body["messages"] == [{"role": "user", "content": "hi"}]
    assert KEY not in json.dumps([first.headers, second.headers])
    assert second.headers["authorization"] == "Bearer ***"


def test_async_client(mp: MockProvider) -> None:
    mp.set_script([{"match": "async", "text": "async ok"}])

    async def go() -> str:
        async with anthropic.AsyncAnthropic(base_url=mp.base_url, api_key=KEY, max_retries=0) as c:
            msg = await c.messages.create(
                model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "async?"}]
            )
            return text_of(msg)

    assert asyncio.run(go()) == "async ok"


def test_concurrent_requests_are_not_serialized() -> None:
    n = 64
    with MockProvider(latency_ms=50, max_recorded=8) as mp:

        async def go() -> list[str]:
            async with anthropic.AsyncAnthropic(
                base_url=mp.base_url, api_key=KEY, max_retries=0
            ) as c:
                msgs = await asyncio.gather(
                    *(
                        c.messages.create(
                            model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}]
                        )
                        for _ in range(n)
                    )
                )
            return [text_of(m) for m in msgs]

        replies = asyncio.run(go())
        assert replies == ["ok"] * n and mp.count() == n and len(mp.requests) == 8
        # Counted at the server, not timed: a wall-clock bound failed on a loaded machine
        # (1.67 s against 1.5 s) while the server overlapped its replies as it should.
        assert mp.peak_delayed >= 8, f"at most {mp.peak_delayed} of {n} replies waited at once: the server serializes"


# --- script files, control API, CLI ------------------------------------------------------


def test_script_files(tmp_path: Path) -> None:
    js = tmp_path / "s.json"
    js.write_text(json.dumps([{"match": "x", "text": "from json"}]))
    toml = tmp_path / "s.toml"
    toml.write_text(
        '[default]\ntext = "fallback"\n\n[[rules]]\nmatch = "x"\n'
        'sequence = ["a", "b"]\n\n[[rules]]\nmatch = "regex:^boom$"\nfault = "server_error"\n'
    )
    assert Script.load(js).rules[0].text == "from json"
    with MockProvider(toml) as mp:
        assert [text_of(ask(mp, "x")) for _ in range(3)] == ["a", "b", "b"]
        assert text_of(ask(mp, "nothing")) == "fallback"
        with pytest.raises(anthropic.InternalServerError):
            ask(mp, "boom")
    bad = tmp_path / "bad.json"
    bad.write_text('[{"match": "x", "fault": "explode"}]')
    with pytest.raises(ConfigError):
        Script.load(bad)
    with pytest.raises(ConfigError):
        Script.load(tmp_path / "missing.toml")
    with pytest.raises(ConfigError):
        Script.coerce([{"sequence": ["a"], "text": "b"}])


def test_control_http_api(mp: MockProvider) -> None:
    control = mp.base_url + "/_mock/"
    assert httpx.post(control + "script", json=[{"match": "x", "text": "remote"}]).is_success
    assert httpx.post(control + "inject", json={"fault": "rate_limit", "retry_after": 4}).is_success
    with pytest.raises(anthropic.RateLimitError):
        ask(mp, "x")
    assert text_of(ask(mp, "x")) == "remote"
    recorded = httpx.get(control + "requests").json()["requests"]
    assert [r["path"] for r in recorded] == ["/v1/messages", "/v1/messages"]
    assert httpx.post(control + "reset").is_success and mp.count() == 0
    assert httpx.post(control + "inject", json={"fault": "nope"}).status_code == 400


def test_module_entry_point(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"rules": [{"match": "cli", "text": "from the cli"}]}))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evalh.mock.mock_provider",
            "--port",
            "0",
            "--script",
            str(script),
        ],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,  # interrupted below, however the suite was started
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        base_url = line.strip().rsplit(" ", 1)[-1]
        assert base_url.startswith("http://127.0.0.1:")
        assert httpx.get(base_url + "/health").status_code == 200
        resp = httpx.post(
            base_url + "/v1/messages",
            headers={"x-api-key": KEY},
            json={
                "model": MODEL,
                "max_tokens": 9,
                "messages": [{"role": "user", "content": "cli"}],
            },
        )
        assert resp.json()["content"] == [{"type": "text", "text": "from the cli"}]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --- the HTTP/1.1 front-end on the wire ----------------------------------------------------


def _exchange(mp: MockProvider, raw: bytes, *, replies: int = 1) -> list[tuple[bytes, dict[str, str], bytes]]:
    """Send `raw` on one socket and read `replies` responses (status line, headers, body)."""
    import socket

    out = []
    with socket.create_connection(("127.0.0.1", mp.port), timeout=5) as sock:
        sock.sendall(raw)
        buf = b""
        for _ in range(replies):
            while b"\r\n\r\n" not in buf:
                chunk = sock.recv(65536)
                if not chunk:
                    return out
                buf += chunk
            head, _, buf = buf.partition(b"\r\n\r\n")
            status, *lines = head.split(b"\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (ln.decode().partition(":") for ln in lines)}
            length = int(headers["content-length"])
            while len(buf) < length:
                buf += sock.recv(65536)
            out.append((status, headers, buf[:length]))
            buf = buf[length:]
        if any(h.get("connection") == "close" for _, h, _ in out):
            assert sock.recv(10) == b"", "the server keeps a connection open after `connection: close`"
    return out


def _post(path: str, body: bytes, extra: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def test_wire_chunked_request_body(mp: MockProvider) -> None:
    mp.set_script([{"match": "chunky", "text": "got it"}])
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "chunky"}]}).encode()
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:7], body[7:])) + b"0\r\n\r\n"
    raw = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n" + chunked)
    [(status, _, reply)] = _exchange(mp, raw)
    assert status.startswith(b"HTTP/1.1 200")
    assert json.loads(reply)["choices"][0]["message"]["content"] == "got it"


def test_wire_pipelined_requests_answered_in_order(mp: MockProvider) -> None:
    mp.set_script([{"match": "one", "text": "1"}, {"match": "two", "text": "2"}])
    reqs = [json.dumps({"model": "m", "messages": [{"role": "user", "content": w}]}).encode() for w in ("one", "two")]
    replies = _exchange(mp, b"".join(_post("/v1/chat/completions", r) for r in reqs), replies=2)
    assert [json.loads(b)["choices"][0]["message"]["content"] for _, _, b in replies] == ["1", "2"]


def test_wire_connection_close_is_honoured(mp: MockProvider) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    [(status, headers, _)] = _exchange(mp, _post("/v1/chat/completions", body, "Connection: close\r\n"))
    assert status.startswith(b"HTTP/1.1 200") and headers["connection"] == "close"


def test_wire_garbage_is_400_and_closed(mp: MockProvider) -> None:
    [(status, headers, body)] = _exchange(mp, b"HELLO THERE\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 400") and headers["connection"] == "close"
    assert "request line" in json.loads(body)["error"]["message"]
    [(status, _, _)] = _exchange(mp, b"POST /v1/messages HTTP/1.1\r\nContent-Length: nope\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 400")
    assert mp.count() == 0


def test_stop_drops_pending_slow_replies_promptly() -> None:
    import socket

    mp = MockProvider(latency_ms=30_000).start()
    sock = socket.create_connection(("127.0.0.1", mp.port), timeout=10)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    sock.sendall(_post("/v1/chat/completions", body))
    deadline = time.monotonic() + 5
    while mp.count() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    mp.stop()
    assert sock.recv(10) == b""  # the connection is closed, no reply
    assert time.monotonic() - started < 5
    sock.close()


def test_wire_bad_chunk_sizes_are_400_and_the_server_stays_up(mp: MockProvider) -> None:
    for bad in (b"-6\r\nabcdef\r\n0\r\n\r\n", b"zz\r\n", b"3\r\nabcXY0\r\n\r\n"):
        raw = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + bad
        [(status, headers, _)] = _exchange(mp, raw)
        assert status.startswith(b"HTTP/1.1 400") and headers["connection"] == "close", bad
    [(status, _, _)] = _exchange(mp, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 200")


def test_wire_many_pipelined_requests_are_all_answered(mp: MockProvider) -> None:
    n = 1500  # one call stack for all of them would overflow
    replies = _exchange(mp, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" * n, replies=n)
    assert len(replies) == n and all(s.startswith(b"HTTP/1.1 200") for s, _, _ in replies)


def test_wire_a_half_closed_client_still_gets_its_delayed_reply() -> None:
    import socket

    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    with MockProvider(latency_ms=200) as mp, socket.create_connection(("127.0.0.1", mp.port), timeout=5) as sock:
        sock.sendall(_post("/v1/chat/completions", body))
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        assert data.startswith(b"HTTP/1.1 200") and b'"choices"' in data


def test_wire_bare_lf_heads_and_expect_continue(mp: MockProvider) -> None:
    [(status, _, body)] = _exchange(mp, b"GET /health HTTP/1.1\nHost: x\n\n")
    assert status.startswith(b"HTTP/1.1 200") and json.loads(body) == {"status": "ok"}
    import socket

    payload = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    with socket.create_connection(("127.0.0.1", mp.port), timeout=5) as sock:
        sock.sendall(_post("/v1/chat/completions", b"", "Expect: 100-continue\r\n").replace(
            b"Content-Length: 0", b"Content-Length: %d" % len(payload)))
        assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(payload)
        reply = b""
        while b'"choices"' not in reply:
            chunk = sock.recv(65536)
            assert chunk, "connection closed without the reply"
            reply += chunk
        assert reply.startswith(b"HTTP/1.1 200")


@pytest.mark.skipif(not hasattr(__import__("selectors"), "EpollSelector"), reason="epoll: Linux only")
def test_the_server_waits_to_the_microsecond(monkeypatch: pytest.MonkeyPatch) -> None:
    """A delayed reply's timer is waited for with select(2)'s microseconds, not epoll's
    whole milliseconds (rounded up: every reply up to 1 ms late, those due within one
    millisecond released together); epoll then only collects what is ready."""
    import select as select_module

    from evalh.mock import mock_provider

    waits: list[float | None] = []
    polls: list[float | None] = []
    real_select = select_module.select

    def timed_select(r: Any, w: Any, x: Any, timeout: float | None = None) -> Any:
        waits.append(timeout)
        return real_select(r, w, x, timeout)

    monkeypatch.setattr(select_module, "select", timed_select)
    selector = mock_provider._PreciseEpoll()
    epoll = selector._selector

    class Recorded:
        def fileno(self) -> int:
            return int(epoll.fileno())

        def poll(self, timeout: float | None = -1, maxevents: int = -1) -> Any:
            polls.append(timeout)
            return epoll.poll(timeout, maxevents)

    selector._selector = Recorded()
    try:
        assert selector.select(0.0003) == []
        assert selector.select(0) == []
    finally:
        epoll.close()
    assert waits == [0.0003]  # the timeout as asked, to the microsecond
    assert polls == [0, 0]  # epoll never waits itself
    with MockProvider(latency_ms=1) as mp:  # the server's loop is the precise one
        server: Any = mp._server
        assert isinstance(server.loop._selector, mock_provider._PreciseEpoll)
