"""A loopback HTTP server that speaks the Anthropic Messages API, OpenAI chat completions,
a vLLM-style `/v1/score` and a generic `/v1/product` endpoint, with scripted replies and
injectable faults. Standard library only on the server side.

    with MockProvider(Script.coerce([{"match": "France", "text": "Paris"}])) as mp:
        client = anthropic.Anthropic(base_url=mp.base_url, api_key="k", max_retries=0)

Endpoints (all bodies JSON):

* `POST /v1/messages` (endpoint `anthropic`): needs a non-empty `x-api-key` or
  `Authorization: Bearer` header (the anthropic SDK sends either, by version), else 401.
* `POST /v1/chat/completions` (`openai`): needs `Authorization: Bearer <key>`, else 401.
* `POST /v1/score` (`score`): `{"model", "text_1", "text_2"}`; a list on either side gives
  one score per pair, each pair matched against the rules on its own.
* `POST /v1/product[/...]` (`product`): any JSON; replies `{request, output, tool_calls,
  usage, truncated}`.
* The Anthropic Message Batches API (`/v1/messages/batches`, `…/{id}`, `…/{id}/results`)
  and the OpenAI Batch API (`/v1/files`, `/v1/batches`, `/v1/files/{id}/content`): see
  `evalh.mock.batches`. `GET /_mock/batches` lists the batches created and counts creates.
* `GET /health`: 200 `{"status": "ok"}`.
* Control, for out-of-process use: `GET /_mock/requests`, `POST /_mock/inject`
  (`{"fault": kind, "times": N, "endpoint"?: ..., **params}`), `POST /_mock/script`
  (a script document), `POST /_mock/reset`.

Health and control requests are not recorded nor counted, and never consume faults.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import select
import selectors
import socket
import sys
import threading
from dataclasses import asdict
from email.utils import formatdate
from http import HTTPStatus
from pathlib import Path
from typing import Any, Self

from evalh.errors import ConfigError
from evalh.mock.batches import Batches
from evalh.mock.engine import Action, Engine, RecordedRequest, ScriptLike
from evalh.mock.script import Endpoint, Fault, FaultKind, Script

__all__ = ["MockProvider", "RecordedRequest", "main", "serve"]

_CONTROL = "/_mock/"


_REASONS = {int(code): code.phrase for code in HTTPStatus}
_MAX_HEAD = 64 * 1024
_MAX_BODY = 64 * 1024 * 1024


class _BadRequest(Exception):
    """The bytes on a connection are not an HTTP/1.x request: 400, then close."""


def _dechunk(buf: bytearray, pos: int) -> tuple[bytes | None, int]:
    """A chunked body starting at `pos`: `(body, end)`, or `(None, pos)` while incomplete.
    Raises `_BadRequest` for a malformed or oversized body."""
    chunks: list[bytes] = []
    total = 0
    while True:
        eol = buf.find(b"\n", pos)
        if eol < 0:
            return None, pos
        field = bytes(buf[pos:eol]).split(b";", 1)[0].strip()
        if not field or not all(c in b"0123456789abcdefABCDEF" for c in field):
            raise _BadRequest("bad chunk size")
        size = int(field, 16)
        total += size
        if total > _MAX_BODY:
            raise _BadRequest("request body too large")
        pos = eol + 1
        if size == 0:
            while True:  # trailers, up to an empty line
                eol = buf.find(b"\n", pos)
                if eol < 0:
                    return None, pos
                empty, pos = not bytes(buf[pos:eol]).strip(), eol + 1
                if empty:
                    return b"".join(chunks), pos
        if len(buf) < pos + size + 1:
            return None, pos
        chunks.append(bytes(buf[pos : pos + size]))
        pos += size
        crlf = b"\r\n" if buf[pos : pos + 1] == b"\r" else b"\n"
        if len(buf) < pos + len(crlf):
            return None, pos
        if bytes(buf[pos : pos + len(crlf)]) != crlf:
            raise _BadRequest("chunk data not followed by CRLF")
        pos += len(crlf)


def _head_end(buf: bytearray) -> tuple[int, int]:
    """Where the request head ends and its body starts (`(-1, -1)` while incomplete). Bare
    LF line ends are accepted, as `http.server` does."""
    crlf, lf = buf.find(b"\r\n\r\n"), buf.find(b"\n\n")
    if crlf >= 0 and (lf < 0 or crlf < lf):
        return crlf, crlf + 4
    if lf >= 0:
        return lf, lf + 2
    return -1, -1


class _Connection(asyncio.Protocol):
    """One client connection: HTTP/1.1 keep-alive, one request at a time (a pipelined
    request waits in the buffer until the reply before it is sent). A client that shuts
    down its sending side still gets the reply it is waiting for."""

    def __init__(self, server: _LoopServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.busy = False
        self.eof = False
        self.continued = False  # `100 Continue` already sent for the request being read
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.connections.add(self)
        self.server.accepted += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        self.abort()

    def abort(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        transport, self.transport = self.transport, None
        if transport is not None:
            transport.abort()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._next()

    def eof_received(self) -> bool:
        """The client is done sending: answer what it sent, then close."""
        self.eof = True
        self._next()
        return True  # keep the transport open for the replies still owed

    def _next(self) -> None:
        """Answer every complete request in the buffer, in order, until one is delayed."""
        while not self.busy and self.transport is not None:
            try:
                request = self._parse()
            except _BadRequest as exc:
                error = {"error": {"type": "invalid_request_error", "message": str(exc)}}
                self._send(Action.json(400, error), keep=False)
                return
            if request is None:
                if self.eof:
                    self._close()
                return
            self._dispatch(*request)

    def _parse(self) -> tuple[str, str, dict[str, str], bytes, bool] | None:
        buf = self.buffer
        while buf and buf[0] in b"\r\n":  # empty lines before a request line are allowed
            del buf[:1]
        end, pos = _head_end(buf)
        if end < 0:
            if len(buf) > _MAX_HEAD:
                raise _BadRequest("request head too large")
            return None
        lines = bytes(buf[:end]).decode("latin-1").replace("\r\n", "\n").split("\n")
        parts = lines[0].split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _BadRequest(f"not an HTTP/1.x request line: {lines[0][:80]!r}")
        method, target, version = parts
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name.strip():
                raise _BadRequest(f"bad header line: {line[:80]!r}")
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body, pos = _dechunk(buf, pos)
        else:
            try:
                length = int(headers.get("content-length") or 0)
            except ValueError:
                raise _BadRequest("bad content-length") from None
            if not 0 <= length <= _MAX_BODY:
                raise _BadRequest("bad content-length")
            body = bytes(buf[pos : pos + length]) if len(buf) >= pos + length else None
            pos += length
        if body is None:
            if headers.get("expect", "").lower() == "100-continue" and not self.continued:
                self.continued = True
                assert self.transport is not None
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            return None
        del buf[:pos]
        self.continued = False
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        return method, target, headers, body, keep

    def _dispatch(self, method: str, target: str, headers: dict[str, str], body: bytes, keep: bool) -> None:
        provider = self.server.provider
        engine = provider._engine
        if target.startswith(("http://", "https://")):  # absolute form, as sent to a proxy
            target = "/" + target.split("/", 3)[3] if target.count("/") >= 3 else "/"
        path = target.split("?", 1)[0]
        try:
            if method == "GET" and path == "/health":
                action = Action.json(200, {"status": "ok"})
            elif method == "GET" and path == _CONTROL + "batches":
                action = Action.json(200, {"creates": dict(provider._batches.creates),
                                           "batches": provider.batch_requests()})
            elif method == "GET" and path == _CONTROL + "requests":
                action = Action.json(200, {"requests": [asdict(r) for r in engine.requests()]})
            elif provider._batches.handles(method, path):
                action = provider._batches.dispatch(method, path, headers, body)
            elif method == "GET":
                action = engine.not_found(path)
            elif method == "POST" and path.startswith(_CONTROL):
                action = provider._control(path[len(_CONTROL) :], body)
            elif method == "POST":
                action = engine.handle(path, headers, body, provider.latency_ms, target)
            else:
                message = f"unsupported method {method}"
                action = Action.json(501, {"error": {"type": "not_implemented", "message": message}})
        except Exception as exc:  # a bug in a script rule: the client gets a 500 that says so
            message = f"mock provider failed: {type(exc).__name__}: {exc}"
            action = Action.json(500, {"error": {"type": "api_error", "message": message}})
        if action.delay_s > 0:
            self.busy = True
            self.server.delayed += 1
            self.server.delayed_peak = max(self.server.delayed_peak, self.server.delayed)
            loop = asyncio.get_running_loop()
            self.timer = loop.call_later(action.delay_s, self._delayed, action, keep)
        else:
            self._send(action, keep)

    def _delayed(self, action: Action, keep: bool) -> None:
        """A delayed reply is due: send it, then go on with what the client sent since."""
        self.timer, self.busy = None, False
        self.server.delayed -= 1
        self._send(action, keep)
        self._next()

    def _close(self) -> None:
        transport, self.transport = self.transport, None
        if transport is not None:
            transport.close()

    def _send(self, action: Action, keep: bool) -> None:
        transport = self.transport
        if transport is None:
            return
        if action.drop:  # no response at all: the client sees the connection closed
            self._close()
            return
        head = [
            f"HTTP/1.1 {action.status} {_REASONS.get(action.status, 'Unknown')}",
            "server: evalh-mock/1",
            f"date: {formatdate(usegmt=True)}",
            f"content-type: {action.content_type}",
            f"content-length: {len(action.body)}",
            *(f"{key}: {value}" for key, value in action.headers.items()),
        ]
        if not keep:
            head.append("connection: close")
        transport.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + action.body)
        if not keep:
            self._close()


_EPOLL: Any = getattr(selectors, "EpollSelector", selectors.DefaultSelector)


class _PreciseEpoll(_EPOLL):
    """epoll, waiting with select(2) on its own descriptor: a timeout to the microsecond.
    `epoll_wait` takes whole milliseconds (Python rounds up), so a reply delayed by 50 ms
    left 50-51 ms after its request (0.4 ms late on average), and every reply due within
    the same millisecond left together."""

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        fd = self._selector.fileno()
        if timeout is not None and timeout > 0 and fd < _SELECT_LIMIT:
            select.select([fd], [], [], timeout)  # readable as soon as any event is pending
            timeout = 0
        return super().select(timeout)


_SELECT_LIMIT = 1024
"""select(2) takes descriptors below FD_SETSIZE only; the epoll descriptor, made when the
server starts, is one of the first."""


def _server_loop() -> asyncio.AbstractEventLoop:
    """The server's event loop: with microsecond timers where epoll is what waits (Linux)."""
    if hasattr(selectors, "EpollSelector"):
        return asyncio.SelectorEventLoop(_PreciseEpoll())
    return asyncio.new_event_loop()


class _LoopServer:
    """The server: an asyncio event loop in a daemon thread, one `_Connection` per client.
    Replies wait on the loop's timers, not in threads, so thousands of slow replies in
    flight cost nothing but memory."""

    def __init__(self, provider: MockProvider, host: str, port: int) -> None:
        self.provider = provider
        self.connections: set[_Connection] = set()
        self.accepted = 0
        self.delayed = 0  # replies waiting out their latency now, and the most at once
        self.delayed_peak = 0
        self.sock = socket.create_server((host, port), backlog=1024)  # OSError if taken
        self.port = int(self.sock.getsockname()[1])
        self.loop = _server_loop()
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"evalh-mock-provider:{self.port}", daemon=True)
        self.thread.start()
        self._ready.wait()
        if self._failed is not None:
            raise self._failed

    def _run(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        try:
            server = loop.run_until_complete(loop.create_server(lambda: _Connection(self), sock=self.sock))
        except BaseException as exc:  # reported by __init__ in the caller's thread
            self._failed = exc
            self.sock.close()
            loop.close()
            self._ready.set()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            for conn in list(self.connections):
                conn.abort()
            loop.run_until_complete(asyncio.sleep(0))  # let the aborted transports finish
            loop.close()

    def stop(self) -> None:
        """Stop serving, drop pending replies and close every open connection."""
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


class MockProvider:
    """The mock provider server, running in a background thread while started.

    `script` is a `Script`, a dict / list of rules, a path to a JSON/TOML script, or None
    (every reply "ok"). `port=0` picks a free port. `latency_ms` is added to every reply
    (and may be changed while running). `max_recorded` bounds `requests` to the latest N
    (for long benchmarks); `count` always counts every request. Use as a context manager,
    or `start()`/`stop()`.
    """

    def __init__(
        self,
        script: ScriptLike = None,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        latency_ms: float = 0.0,
        max_recorded: int | None = None,
    ) -> None:
        self.host = host
        self.latency_ms = latency_ms
        self._requested_port = port
        self._engine = Engine(Script.coerce(script), max_recorded)
        self._batches = Batches(self._engine)
        self._stopping = threading.Event()
        self._server: _LoopServer | None = None

    # lifecycle ---------------------------------------------------------------------
    def start(self) -> Self:
        """Bind and serve in a daemon thread. Returns self. Raises `OSError` if the port is
        taken."""
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _LoopServer(self, self.host, self._requested_port)
        return self

    def stop(self) -> None:
        """Stop serving, wake sleeping replies and close every open connection."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (the real one when started with port 0)."""
        if self._server is None:
            raise RuntimeError("MockProvider is not started")
        return self._server.port

    @property
    def base_url(self) -> str:
        """`http://host:port`, what the anthropic SDK takes as `base_url`."""
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """`http://host:port/v1`, what the openai SDK takes as `base_url`."""
        return self.base_url + "/v1"

    # control & introspection -------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the recorded requests, oldest first (credentials masked)."""
        return self._engine.requests()

    @property
    def connections_accepted(self) -> int:
        """TCP connections accepted since start (keep-alive reuse shows as fewer than requests)."""
        return self._server.accepted if self._server is not None else 0

    @property
    def peak_delayed(self) -> int:
        """The most replies that were waiting out their latency at the same time since start:
        1 for a server that answers one request after another, however fast the machine."""
        return self._server.delayed_peak if self._server is not None else 0

    def batch_creates(self, provider: str | None = None) -> int:
        """Batches created (`POST /v1/messages/batches`, `POST /v1/batches`), of one provider
        (`anthropic`, `openai`) or all: a batch submitted twice counts twice."""
        creates = self._batches.creates
        return creates.total() if provider is None else creates[provider]

    def batch_requests(self) -> list[dict[str, Any]]:
        """Every batch created, oldest first: `{"id", "provider", "status", "retrieves",
        "custom_ids", "models"}` (its requests' custom_ids and models, in order)."""
        return [
            {"id": b.id, "provider": b.provider, "status": b.status, "retrieves": b.retrieves,
             "custom_ids": [cid for cid, _ in b.requests], "models": [body.get("model") for _, body in b.requests]}
            for b in list(self._batches.batches.values())
        ]

    def count(self, path: str | None = None) -> int:
        """How many requests arrived (health/control excluded), optionally only to `path`."""
        return self._engine.count(path)

    def inject(
        self,
        fault: FaultKind | Fault,
        times: int = 1,
        *,
        endpoint: Endpoint | None = None,
        **params: Any,
    ) -> None:
        """Force `fault` on the next `times` requests (to `endpoint` only, if given).
        `params` are `Fault` fields (`retry_after`, `latency_ms`, `tokens`, `message`).
        Injections queue up in order; a forced fault overrides the script, and only
        `slow` and `truncate` still consume a scripted reply."""
        f = fault if isinstance(fault, Fault) else Fault(kind=fault, **params)
        self._engine.inject(f, times, endpoint)

    def set_batches(self, *, polls: int = 1, expire_after: int | None = None) -> None:
        """How batches progress from now on (the script's `batches`; see `evalh.mock.batches`).
        A batch in progress ends on the next retrieve once it has had `polls` retrieves."""
        from evalh.mock.script import BatchSettings

        script = self._engine.state.script
        self._engine.state.replace(script.model_copy(update={"batches": BatchSettings(polls=polls, expire_after=expire_after)}))

    def set_script(self, script: ScriptLike) -> None:
        """Replace the script; its rule counters start at zero."""
        self._engine.state.replace(Script.coerce(script))

    @property
    def script(self) -> Script:
        return self._engine.state.script

    def reset(self) -> None:
        """Forget recorded requests, pending injected faults and batches; zero the rule counters."""
        self._engine.reset()
        self._batches.reset()

    def _control(self, command: str, raw: bytes) -> Action:
        try:
            data = json.loads(raw) if raw.strip() else {}
            if command == "reset":
                self.reset()
            elif command == "script":
                self.set_script(data)
            elif command == "inject" and isinstance(data, dict):
                params = dict(data)
                self.inject(
                    params.pop("fault"),
                    int(params.pop("times", 1)),
                    endpoint=params.pop("endpoint", None),
                    **params,
                )
            else:
                return self._engine.not_found(_CONTROL + command)
        except Exception as exc:  # a bad control request is the caller's problem: 400
            return Action.json(
                400, {"error": {"type": "invalid_request_error", "message": str(exc)}}
            )
        return Action.json(200, {"ok": True})


SERVE_MAX_RECORDED = 10_000
"""Requests a long-running server keeps for `GET /_mock/requests` (the latest ones; `count`
still counts all): without a bound, its memory and its collector's work grow with every
request it answers."""


def serve(
    port: int, script_path: Path | None, latency_ms: float = 0, host: str = "127.0.0.1",
    max_recorded: int | None = SERVE_MAX_RECORDED,
) -> None:
    """Run a mock provider until Ctrl-C. Writes one line with the base URL to stderr.

    Raises `ConfigError` if the script cannot be read, `OSError` if the port is taken.
    """
    script = Script.load(script_path) if script_path is not None else Script()
    with MockProvider(script, port=port, host=host, latency_ms=latency_ms, max_recorded=max_recorded) as mp:
        sys.stderr.write(f"evalh mock provider listening on {mp.base_url}\n")
        sys.stderr.flush()
        with contextlib.suppress(KeyboardInterrupt):
            while not mp._stopping.wait(1.0):
                pass


def main(argv: list[str] | None = None) -> int:
    """`python -m evalh.mock.mock_provider --port N --script FILE [--latency-ms MS]`."""
    parser = argparse.ArgumentParser(prog="python -m evalh.mock.mock_provider")
    parser.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    parser.add_argument("--script", type=Path, default=None, help="JSON or TOML script")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--max-recorded", type=int, default=SERVE_MAX_RECORDED,
                        help="requests kept for /_mock/requests (the latest ones)")
    args = parser.parse_args(argv)
    try:
        serve(args.port, args.script, args.latency_ms, args.host, max_recorded=max(0, args.max_recorded))
    except (ConfigError, OSError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
