"""`evalh.providers.eager_body` against real loopback servers: whatever happens to a request
while its body is written (a body larger than the socket's buffers, `Expect: 100-continue`,
a server that stops reading, resets the connection or answers before reading, the request
cancelled mid-body, a proxy, TLS), `EagerBodyRequest` ends as aiohttp's own request does;
and a run of an `openai` target records the same errors, retries and results with either."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import struct
import subprocess
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from typer.testing import CliRunner

from evalh.cli.main import app
from evalh.providers.eager_body import EagerBodyRequest

BIG = b"x" * (8 * 1024 * 1024)  # far more than a loopback socket's buffers
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _echo(request: web.Request) -> web.Response:
    return web.json_response({"n": len(await request.read())})


async def _web(handler: Callable[[web.Request], Awaitable[web.Response]],
               ssl_context: ssl.SSLContext | None = None) -> tuple[web.AppRunner, int]:
    application = web.Application(client_max_size=64 * 1024 * 1024)
    application.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(application)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with an RST: SO_LINGER on, zero seconds."""
    writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


def _raw(behaviour: str) -> Handler:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        if behaviour == "stalls":  # stops reading: the client's transport pauses
            await asyncio.sleep(30)
        elif behaviour == "resets":
            await reader.read(100_000)
            _reset(writer)
            return
        elif behaviour == "answers_first":  # 413 before reading the body
            writer.write(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno")
            await writer.drain()
            await asyncio.sleep(0.3)
        writer.close()

    return serve


def _certificate(tmp: Path) -> tuple[Path, Path]:
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    try:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                        "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no openssl to make a self-signed certificate")
    return cert, key


async def _scenario(name: str, request_class: type[aiohttp.ClientRequest], tmp: Path) -> Any:
    if name in ("large", "expect_100", "proxy"):
        runner, port = await _web(_echo)
        try:
            if name == "proxy":  # a forward proxy gets the absolute URL; this one answers itself
                proxy = f"http://127.0.0.1:{port}"
                async with (aiohttp.ClientSession(request_class=request_class, proxy=proxy) as s,
                            s.post("http://upstream.invalid/v1/x", data=BIG) as resp):
                    return await resp.json()
            async with aiohttp.ClientSession(request_class=request_class) as s:
                async with s.post(f"http://127.0.0.1:{port}/", data=BIG, expect100=name == "expect_100") as resp:
                    first = await resp.json()
                async with s.post(f"http://127.0.0.1:{port}/", data=b"small") as resp:  # the connection reused
                    return first, await resp.json()
        finally:
            await runner.cleanup()
    if name == "tls":
        cert, key = _certificate(tmp)
        server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_side.load_cert_chain(cert, key)
        runner, port = await _web(_echo, server_side)
        try:
            trusted = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=str(cert)))
            async with (aiohttp.ClientSession(request_class=request_class, connector=trusted) as s,
                        s.post(f"https://127.0.0.1:{port}/", data=BIG) as resp):
                first = await resp.json()
            async with aiohttp.ClientSession(request_class=request_class) as s:  # not trusted: refused
                try:
                    await s.post(f"https://127.0.0.1:{port}/", data=b"ab")
                except aiohttp.ClientError as exc:
                    return first, type(exc).__name__
            return first, None
        finally:
            await runner.cleanup()
    server = await asyncio.start_server(_raw(name), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with aiohttp.ClientSession(request_class=request_class) as s:
            try:
                if name == "stalls":  # the case's timeout cancels the request mid-body
                    await asyncio.wait_for(s.post(f"http://127.0.0.1:{port}/", data=BIG), 0.3)
                async with s.post(f"http://127.0.0.1:{port}/", data=BIG) as resp:
                    return resp.status, await resp.read()
            except (aiohttp.ClientError, TimeoutError) as exc:
                return f"{type(exc).__name__}: {exc}"
    finally:
        server.close()


@pytest.mark.filterwarnings("ignore:Sending a large body directly")
@pytest.mark.parametrize("name", ["large", "expect_100", "proxy", "tls", "stalls", "resets", "answers_first"])
def test_a_body_written_at_once_ends_as_aiohttps_own(name: str, tmp_path: Path) -> None:
    ours = asyncio.run(_scenario(name, EagerBodyRequest, tmp_path))
    theirs = asyncio.run(_scenario(name, aiohttp.ClientRequest, tmp_path))
    assert ours == theirs
    expected = {"large": ({"n": len(BIG)}, {"n": 5}), "expect_100": ({"n": len(BIG)}, {"n": 5}),
                "proxy": {"n": len(BIG)}, "tls": ({"n": len(BIG)}, "ClientConnectorCertificateError"),
                "stalls": "TimeoutError: ", "answers_first": (413, b"no")}
    if name == "resets":
        assert str(ours).startswith("ClientOSError: ")
    else:
        assert ours == expected[name]


class _Server:
    """A loopback HTTP server on its own thread whose answer depends on the prompt:
    `reset` (an RST mid-body), `fail` (500 on the first attempt), `limit` (429, Retry-After 0,
    on the first attempt), `hangup` (the request read, no answer), anything else a reply."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.ready.wait(30)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._answer, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(next(h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")))
                start = await reader.readexactly(min(length, 65536))
                word = next(w for w in ("reset", "fail", "limit", "hangup", "ok") if w.encode() in start or w == "ok")
                if word == "reset":
                    _reset(writer)
                    return
                await reader.readexactly(length - len(start))
                n = self.seen[word] = self.seen.get(word, 0) + 1
                if word == "hangup":
                    writer.close()
                    return
                if word in ("fail", "limit") and n == 1:
                    status, body, extra = ((500, b'{"error": {"message": "boom"}}', b"") if word == "fail" else
                                           (429, b'{"error": {"message": "slow down"}}', b"Retry-After: 0\r\n"))
                else:
                    status, extra = 200, b""
                    body = json.dumps({"id": "x", "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": word}}],
                                       "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
                writer.write(b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n"
                             % (status, len(body), extra) + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)


@pytest.fixture
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.close()


def _run(tmp: Path, port: int) -> dict[tuple[str, int], Any]:
    pad = "p" * (2 * 1024 * 1024)  # each body larger than the socket's buffers
    cases = [{"id": w, "input": {"q": f"{w} {pad}"}, "expected": w} for w in ("ok", "fail", "limit", "reset", "hangup")]
    (tmp / "qa.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (tmp / "evalh.toml").write_text(
        '[evalh]\nconcurrency = 4\ntimeout_s = 20\n\n[suites.qa]\ndataset = "qa.jsonl"\n'
        'scorers = [{ type = "contains" }]\n\n[suites.qa.target]\nkind = "openai"\nmodel = "m"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\napi_key_env = "EVALH_TEST_KEY"\nmax_retries = 1\n'
        'prompt = "{{ input.q }}"\n', encoding="utf-8")
    runs = tmp / "runs"
    result = CliRunner().invoke(app, ["run", "--config", str(tmp / "evalh.toml"), "--runs-dir", str(runs),
                                      "--no-cache", "-q", "--seed", "1"])
    [path] = runs.glob("*.json")
    doc = json.loads(path.read_text())
    out: dict[tuple[str, int], Any] = {(r["case_id"], r.get("attempt", 0)): (r["status"], r.get("error"), r.get("output"))
           for r in doc["suites"]["qa"]["cases"]}
    (limits,) = doc["limits"].values()
    out[("exit", 0)] = (result.exit_code, {k: limits[k] for k in ("requests", "rate_limited", "retries", "failures")})
    return out


def test_a_run_records_the_same_errors_and_retries_as_with_aiohttps_request(
        server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALH_TEST_KEY", "k")
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "a").mkdir()
    ours = _run(tmp_path / "a", server.port)
    server.seen.clear()
    monkeypatch.setattr("evalh.providers.eager_body.EagerBodyRequest", aiohttp.ClientRequest)
    (tmp_path / "b").mkdir()
    theirs = _run(tmp_path / "b", server.port)
    assert ours == theirs
    assert ours[("ok", 0)][0] == "passed" and ours[("fail", 0)][0] == "passed" and ours[("limit", 0)][0] == "passed"
    assert ours[("reset", 0)][0] == "errored" and ours[("hangup", 0)][0] == "errored"
