"""`evalh label serve`: a local labelling page for one rater over one run's export.

The dashboard's server machinery (`evalh.ui.server`): loopback only (a request whose Host
header is not a loopback name is refused, against DNS rebinding), one self-contained
document whose only script is allowed by its hash in the Content-Security-Policy, JSON
endpoints. What the page gets is exactly what an export gives a rater — the blinded
request (input, output, claim spans, kind), the rubric and its scheme — and the rater's own
earlier ratings (to resume). No expected label, rationale, case name, metadata or other
rater's rating is ever sent.

Routes::

    GET  /                 the labelling page
    GET  /api/session      rater, rubric (text, digest, scheme), requests, this rater's ratings
    POST /api/ratings      one request's rating (JSON, as in a ratings file, without `rater`)

A saved rating goes through the same validation as `evalh label import` (digests, scheme,
completeness) and is written atomically to the ratings store as one new file. A POST must
be `application/json` from the page's own origin: a page elsewhere cannot send one.
"""

from __future__ import annotations

import socket
import threading
from functools import lru_cache
from http import HTTPStatus
from http.server import ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

import orjson

from evalh.errors import EvalhError
from evalh.labels.export import blinded, request_sha256, rubric_of
from evalh.labels.models import LabelError, LabelStore
from evalh.labels.ratings import results_by_key, stage_ratings
from evalh.labels.store import RatingsStore
from evalh.models import Run
from evalh.ui.server import Handler, _host_name, _sha256_source, is_loopback

MAX_BODY = 1 << 20


def _asset(name: str) -> str:
    return resources.files("evalh.ui").joinpath(name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def label_page() -> tuple[bytes, str]:
    """The labelling document (CSS and JS inlined) and its Content-Security-Policy (the
    dashboard's: its script by hash, same-origin fetches, nothing else)."""
    script = _asset("label.js")
    html = _asset("label.html").replace("/*__CSS__*/", _asset("label.css"), 1).replace("/*__JS__*/", script, 1)
    csp = ("default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
           f"connect-src 'self'; img-src data:; style-src 'unsafe-inline'; script-src {_sha256_source(script)}")
    return html.encode("utf-8"), csp


class LabelSession:
    """One rater labelling one run's exported requests under its current rubric."""

    def __init__(self, run: Run, labels: LabelStore, store: RatingsStore, rater: str, rubric: str | None = None) -> None:
        if not rater.strip():
            raise LabelError("--rater: a name is needed")
        self.run, self.labels, self.store, self.rater = run, labels, store, rater
        self.scheme = rubric_of(labels, rubric)
        self.lock = threading.Lock()
        results = results_by_key(run)
        self.requests: list[dict[str, Any]] = []
        for rid, ref in sorted(labels.requests.items()):
            r = results.get((ref.suite, ref.case_id, ref.arm, ref.attempt))
            if r is None or r.output is None:
                continue
            view = blinded(r, self.scheme)
            req: dict[str, Any] = {"request_id": rid, "request_sha256": request_sha256(r, self.scheme, ref.suite, view)}
            if self.scheme.structured:
                req["kind"] = self.scheme.kind_of(r.metadata).name
            self.requests.append({**req, **view})
        if not self.requests:
            raise LabelError(f"run {run.run_id}: no exported request to label (run `evalh export-requests`)")

    def mine(self) -> dict[str, dict[str, Any]]:
        """This rater's current ratings of these requests, in the shape the page sends. A
        rating bound to content is every request's of that content: repeated attempts with
        identical outputs share it (each request id gets it, so the page resumes right)."""
        by_sha: dict[str, list[str]] = {}
        for q in self.requests:
            by_sha.setdefault(q["request_sha256"], []).append(q["request_id"])
        out: dict[str, dict[str, Any]] = {}
        for rec in self.store.current.values():
            rids = by_sha.get(rec.request_sha256)
            if not rids or rec.rater != self.rater or rec.rubric_sha256 != self.scheme.sha256 or rec.kind != "rating":
                continue
            for rid in rids:
                entry = out.setdefault(rid, {})
                if rec.item == "request":
                    entry.setdefault("fields", {})[rec.field] = rec.value
                elif rec.item.startswith("claim:"):
                    entry.setdefault("claims", {}).setdefault(rec.item.split(":", 1)[1], {})[rec.field] = rec.value
                else:
                    entry.setdefault("dimensions", {})[rec.field] = rec.value
        return out

    def session(self) -> dict[str, Any]:
        return {"rater": self.rater, "run_id": self.run.run_id,
                "rubric": {"sha256": self.scheme.sha256, "text": self.scheme.text, "scheme": self.scheme.scheme()},
                "requests": self.requests, "ratings": self.mine()}

    def save(self, raw: Any) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise LabelError("a rating must be a JSON object")
        if "rater" in raw and raw["rater"] != self.rater:
            raise LabelError(f"this page rates as {self.rater!r}")
        raw = {**raw, "rater": self.rater}
        with self.lock:
            recs, _, _ = stage_ratings(self.run, self.labels, self.store, [("label page", raw)],
                                       rubric=self.scheme.sha256, replace=True)
            path = self.store.append(recs)
        mine = self.mine()
        return {"saved": True, "written": path.name if path else None, "rated": len(mine), "ratings": mine}


class LabelHandler(Handler):
    server: LabelServer  # type: ignore[assignment]
    server_version = "evalh-label"

    def _route(self, parts: list[str], params: dict[str, str]) -> None:
        if not parts or parts == ["index.html"]:
            body, csp = label_page()
            self._send(HTTPStatus.OK, body, "text/html; charset=utf-8", {"Content-Security-Policy": csp})
        elif parts == ["api", "session"]:
            self._json(HTTPStatus.OK, self.server.session.session())
        else:
            self._error(HTTPStatus.NOT_FOUND, "not found")

    def do_POST(self) -> None:
        if self.server.loopback_only and not is_loopback(_host_name(self.headers.get("Host", ""))):
            self._error(HTTPStatus.FORBIDDEN, "this page answers only on a loopback host name")
            return
        if urlsplit(self.path).path != "/api/ratings":
            self._error(HTTPStatus.NOT_FOUND, "not found")
            return
        origin = self.headers.get("Origin")
        if origin is not None and _host_name(urlsplit(origin).netloc) != _host_name(self.headers.get("Host", "")):
            self._error(HTTPStatus.FORBIDDEN, "a rating is saved only from this page")
            return
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            self._error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send the rating as application/json")
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if not 0 < length <= MAX_BODY:
            self._error(HTTPStatus.BAD_REQUEST, "a rating body of 1 byte to 1 MiB is needed")
            return
        try:
            raw = orjson.loads(self.rfile.read(length))
        except orjson.JSONDecodeError as exc:
            self._error(HTTPStatus.BAD_REQUEST, f"not JSON: {exc}")
            return
        try:
            self._json(HTTPStatus.OK, self.server.session.save(raw))
        except EvalhError as exc:
            self._error(HTTPStatus.UNPROCESSABLE_ENTITY, exc.message)


class LabelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], session: LabelSession) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, LabelHandler)
        self.session = session
        self.loopback_only = is_loopback(address[0])


def make_label_server(session: LabelSession, host: str = "127.0.0.1", port: int = 0) -> LabelServer:
    """A server for `session`, bound to a loopback address only (port 0: any free port)."""
    if not is_loopback(host):
        raise LabelError(f"--host {host}: the labelling page binds to a loopback address only")
    label_page()
    return LabelServer((host, port), session)

