"""The dashboard's HTTP server: one HTML document and its JSON endpoints.

Standard library only (`ThreadingHTTPServer`). GET only. Bound to 127.0.0.1 by default;
while bound to a loopback address it answers only requests whose Host header names a
loopback host, so a web page elsewhere cannot read runs through DNS rebinding. The page
is sent with a Content-Security-Policy that allows its own script (by hash), inline
styles and same-origin fetches, and nothing else.

Routes::

    GET /                                  the dashboard (one self-contained document)
    GET /api/runs                          history: summaries of every run, BASELINE, trends
    GET /api/trends                        headline series across runs
    GET /api/runs/<id>                     one run: summary and suites
    GET /api/runs/<id>/report              its report (build_report)
    GET /api/runs/<id>/cases?suite=&arm=&status=&q=&offset=&limit=
    GET /api/runs/<id>/case?suite=&i=      one result in full
    GET /api/compare?base=&candidate=      compare_runs of two runs
    GET /api/compare/cases?base=&candidate=&suite=&filter=&q=&offset=&limit=
                                           both runs case by case, filtered
    GET /api/compare/case?base=&candidate=&suite=&case=&arm=
                                           one case of both runs in full, with word diffs
    GET /api/runs/<id>/matrix?suite=&by=arm|attempt&arm=&sort=&q=&offset=&limit=
                                           cases x arms (or x attempts) grid
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import logging
import socket
import threading
from functools import lru_cache
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import orjson

from evalh.errors import EvalhError, InvalidRunId, RunDocumentError, RunNotFound
from evalh.ui.api import DashboardApi
from evalh.ui.index import RunIndex

log = logging.getLogger("evalh.ui")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4023


def _asset(name: str) -> str:
    return resources.files("evalh.ui").joinpath(name).read_text(encoding="utf-8")


def _sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


@lru_cache(maxsize=1)
def page() -> tuple[bytes, str]:
    """The dashboard document (CSS and JS inlined) and its Content-Security-Policy."""
    script = _asset("dashboard.js")
    html = _asset("dashboard.html").replace("/*__CSS__*/", _asset("dashboard.css"), 1)
    html = html.replace("/*__JS__*/", script, 1)
    csp = ("default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
           f"connect-src 'self'; img-src data:; style-src 'unsafe-inline'; script-src {_sha256_source(script)}")
    return html.encode("utf-8"), csp


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    header = header.strip()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Handler(BaseHTTPRequestHandler):
    server: DashboardServer
    server_version = "evalh-ui"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)

    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS), "application/json; charset=utf-8")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        if self.server.loopback_only and not is_loopback(_host_name(self.headers.get("Host", ""))):
            self._error(HTTPStatus.FORBIDDEN, "this dashboard answers only on a loopback host name")
            return
        url = urlsplit(self.path)
        params = dict(parse_qsl(url.query, keep_blank_values=True))
        parts = [unquote(p) for p in url.path.split("/") if p]
        try:
            self._route(parts, params)
        except InvalidRunId as exc:
            self._error(HTTPStatus.BAD_REQUEST, exc.message)
        except RunNotFound as exc:
            self._error(HTTPStatus.NOT_FOUND, exc.message)
        except RunDocumentError as exc:
            self._error(HTTPStatus.UNPROCESSABLE_ENTITY, exc.message)
        except EvalhError as exc:
            self._error(HTTPStatus.BAD_REQUEST, exc.message)
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception:  # a bug must not take the server down; the page says so
            log.exception("dashboard request failed: %s", url.path)
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error (see the server's log)")

    def _route(self, parts: list[str], params: dict[str, str]) -> None:
        api = self.server.api
        if not parts or parts == ["index.html"]:
            body, csp = page()
            self._send(HTTPStatus.OK, body, "text/html; charset=utf-8", {"Content-Security-Policy": csp})
            return
        if parts[0] != "api":
            self._error(HTTPStatus.NOT_FOUND, "not found")
            return
        match parts[1:]:
            case ["runs"]:
                self._json(HTTPStatus.OK, api.runs())
            case ["trends"]:
                self._json(HTTPStatus.OK, api.trends())
            case ["compare"]:
                self._json(HTTPStatus.OK, api.compare(params))
            case ["compare", "cases"]:
                self._json(HTTPStatus.OK, api.compare_cases(params))
            case ["compare", "case"]:
                self._json(HTTPStatus.OK, api.compare_case(params))
            case ["runs", run_id, "matrix"]:
                self._json(HTTPStatus.OK, api.matrix(run_id, params))
            case ["runs", run_id]:
                self._json(HTTPStatus.OK, api.run(run_id))
            case ["runs", run_id, "report"]:
                self._json(HTTPStatus.OK, api.report(run_id))
            case ["runs", run_id, "cases"]:
                self._json(HTTPStatus.OK, api.cases(run_id, params))
            case ["runs", run_id, "case"]:
                self._json(HTTPStatus.OK, api.case(run_id, params))
            case _:
                self._error(HTTPStatus.NOT_FOUND, "not found")


class DashboardServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], api: DashboardApi) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.api = api
        self.loopback_only = is_loopback(address[0])


def make_server(
    runs_dir: Path, root: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, warm: bool = True
) -> DashboardServer:
    """A server over `runs_dir` (BASELINE read from `root`), bound but not yet serving.
    Port 0 picks a free port (`server.server_address[1]`). With `warm`, the run summaries
    are read in a background thread right away, so the history is ready by the time a
    browser asks (a request that comes sooner waits for that one read)."""
    # Import what the first requests need now, so nobody waits for it on first click.
    import evalh.core.compare.decide  # noqa: F401
    import evalh.report.build  # noqa: F401

    api = DashboardApi(RunIndex(runs_dir), root)
    page()
    server = DashboardServer((host, port), api)
    if warm:
        threading.Thread(target=_warm, args=(api,), name="evalh-ui-warm", daemon=True).start()
    return server


def _warm(api: DashboardApi) -> None:
    try:
        api.index.summaries()
    except Exception:  # the first request will report whatever went wrong
        log.debug("warming the run index failed", exc_info=True)
