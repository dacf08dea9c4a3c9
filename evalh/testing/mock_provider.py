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
* `GET /health`: 200 `{"status": "ok"}`.
* Control, for out-of-process use: `GET /_mock/requests`, `POST /_mock/inject`
  (`{"fault": kind, "times": N, "endpoint"?: ..., **params}`), `POST /_mock/script`
  (a script document), `POST /_mock/reset`.

Health and control requests are not recorded nor counted, and never consume faults.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sys
import threading
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from evalh.errors import ConfigError
from evalh.testing.engine import Action, Engine, RecordedRequest, ScriptLike
from evalh.testing.script import Endpoint, Fault, FaultKind, Script

__all__ = ["MockProvider", "RecordedRequest", "main", "serve"]

_CONTROL = "/_mock/"


class _Server(ThreadingHTTPServer):
    """One daemon thread per connection; tracks open connections so `stop` can end them."""

    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True

    def __init__(self, addr: tuple[str, int], provider: MockProvider) -> None:
        self.provider = provider
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(addr, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Client gone or server stopping: nothing worth reporting from a test server."""

    def close_connections(self) -> None:
        with self._conns_lock:
            conns, self._conns = list(self._conns), set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "evalh-mock/1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: library code does not print."""

    def handle(self) -> None:
        with contextlib.suppress(OSError):
            super().handle()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            chunks: list[bytes] = []
            while size := int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, action: Action) -> None:
        provider = self.server.provider
        if action.delay_s > 0:
            provider._stopping.wait(action.delay_s)
        if action.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.send_response(action.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(action.body)))
        for key, value in action.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(action.body)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        engine = self.server.provider._engine
        if path == "/health":
            self._send(Action.json(200, {"status": "ok"}))
        elif path == _CONTROL + "requests":
            reqs = [asdict(r) for r in engine.requests()]
            self._send(Action.json(200, {"requests": reqs}))
        else:
            self._send(engine.not_found(path))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        raw = self._read_body()
        provider = self.server.provider
        if path.startswith(_CONTROL):
            self._send(provider._control(path[len(_CONTROL) :], raw))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        self._send(provider._engine.handle(path, headers, raw, provider.latency_ms))


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
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle ---------------------------------------------------------------------
    def start(self) -> Self:
        """Bind and serve in a daemon thread. Returns self."""
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server((self.host, self._requested_port), self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"evalh-mock-provider:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake sleeping replies and close every open connection."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (the real one when started with port 0)."""
        if self._server is None:
            raise RuntimeError("MockProvider is not started")
        return int(self._server.server_address[1])

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

    def set_script(self, script: ScriptLike) -> None:
        """Replace the script; its rule counters start at zero."""
        self._engine.state.replace(Script.coerce(script))

    @property
    def script(self) -> Script:
        return self._engine.state.script

    def reset(self) -> None:
        """Forget recorded requests and pending injected faults; zero the rule counters."""
        self._engine.reset()

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


def serve(
    port: int, script_path: Path | None, latency_ms: float = 0, host: str = "127.0.0.1"
) -> None:
    """Run a mock provider until Ctrl-C. Writes one line with the base URL to stderr.

    Raises `ConfigError` if the script cannot be read, `OSError` if the port is taken.
    """
    script = Script.load(script_path) if script_path is not None else Script()
    with MockProvider(script, port=port, host=host, latency_ms=latency_ms) as mp:
        sys.stderr.write(f"evalh mock provider listening on {mp.base_url}\n")
        sys.stderr.flush()
        with contextlib.suppress(KeyboardInterrupt):
            while not mp._stopping.wait(1.0):
                pass


def main(argv: list[str] | None = None) -> int:
    """`python -m evalh.testing.mock_provider --port N --script FILE [--latency-ms MS]`."""
    parser = argparse.ArgumentParser(prog="python -m evalh.testing.mock_provider")
    parser.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    parser.add_argument("--script", type=Path, default=None, help="JSON or TOML script")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    try:
        serve(args.port, args.script, args.latency_ms, args.host)
    except (ConfigError, OSError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
