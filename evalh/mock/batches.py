"""The mock provider's batch APIs: Anthropic Message Batches and the OpenAI Batch API.

Anthropic (`x-api-key`, as for `/v1/messages`):

* `POST /v1/messages/batches` `{"requests": [{"custom_id", "params"}, ...]}` → a
  `message_batch` (`processing_status` `in_progress`, `request_counts.processing` = N).
  A `custom_id` must match `^[a-zA-Z0-9_-]{1,64}$` and be unique in the batch; each
  `params` is checked as a `/v1/messages` body would be (400 naming `requests[i]`).
* `GET /v1/messages/batches/{id}` → the batch; it ends (`ended`, counts of `succeeded`,
  `errored`, `expired`, an absolute `results_url`) on the retrieve after `polls` retrieves.
* `GET /v1/messages/batches/{id}/results` → JSON Lines, one `{"custom_id", "result"}` per
  request (`succeeded` with the `message`, `errored` with the error response, `expired`),
  in reverse order of the requests (results are not promised in order). 404 before it ends.

OpenAI (`Authorization: Bearer`):

* `POST /v1/files` (multipart: `purpose=batch`, `file` = JSONL of `{"custom_id", "method":
  "POST", "url", "body"}`) → a `file`; `GET /v1/files/{id}`, `GET /v1/files/{id}/content`.
* `POST /v1/batches` `{"input_file_id", "endpoint", "completion_window": "24h"}` → a
  `batch` in `validating`; retrieves go `in_progress` (`request_counts.total`), then
  `completed` (or `expired`, or `failed` for an invalid input file: `errors.data` names
  the line) with `output_file_id` (200 responses) and `error_file_id` (other statuses,
  and expired requests: `error.code` `batch_expired`).
* `GET /v1/batches/{id}`.

Each request of a batch is answered by the script as the same request to `/v1/messages` or
`/v1/chat/completions` would be, when its batch ends: a scripted fault (500, 429, 529, a
dropped connection, malformed JSON) makes that request `errored`. The script's
`batches = {polls = N, expire_after = K}` sets how many retrieves see a batch in progress
(default 1) and makes a batch expire after processing its first K requests (default
never). Creates are counted per provider (`MockProvider.batch_creates`): a client that
submits a batch twice shows it.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalh.mock import shapes

if TYPE_CHECKING:
    from evalh.mock.engine import Action, Engine
    from evalh.mock.script import Endpoint

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ANTHROPIC_BATCHES = "/v1/messages/batches"
_EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


@dataclass
class MockBatch:
    """One batch the server holds."""

    id: str
    provider: str
    """`anthropic` or `openai`."""
    requests: list[tuple[str, dict[str, Any]]]
    """(custom_id, request body) in the order given."""
    created_at: float
    retrieves: int = 0
    status: str = "in_progress"
    """`in_progress` until processed, then `ended` (Anthropic) / `completed`, `expired`,
    `failed` (OpenAI); an OpenAI batch starts `validating`."""
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    """custom_id → the result line, once processed."""
    ended_at: float | None = None
    endpoint: str = "/v1/messages"
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    failure: dict[str, Any] | None = None
    """An OpenAI input file refused when validated: `{"code", "message", "line"}`."""


class Batches:
    """Batches and files of one mock server. Thread-safe."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        self.batches: dict[str, MockBatch] = {}
        self.files: dict[str, tuple[str, str, bytes, float]] = {}
        """file id → (filename, purpose, bytes, created_at)."""
        self.creates: Counter[str] = Counter()

    def reset(self) -> None:
        with self._lock:
            self.batches.clear()
            self.files.clear()
            self.creates.clear()

    # routing ------------------------------------------------------------------------
    @staticmethod
    def handles(method: str, path: str) -> bool:
        if path == _ANTHROPIC_BATCHES or path.startswith(_ANTHROPIC_BATCHES + "/"):
            return True
        return path in ("/v1/files", "/v1/batches") or path.startswith(("/v1/files/", "/v1/batches/"))

    def dispatch(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Action:
        from evalh.mock.engine import _authorized

        anthropic = path.startswith(_ANTHROPIC_BATCHES)
        endpoint: Endpoint = "anthropic" if anthropic else "openai"
        if not _authorized(endpoint, headers):
            return self._error(endpoint, "authentication", "a key is required")
        parts = path.strip("/").split("/")
        if anthropic:
            if method == "POST" and path == _ANTHROPIC_BATCHES:
                return self._anthropic_create(body)
            if method == "GET" and len(parts) == 4:
                return self._anthropic_retrieve(parts[3], headers)
            if method == "GET" and len(parts) == 5 and parts[4] == "results":
                return self._anthropic_results(parts[3])
        else:
            if method == "POST" and path == "/v1/files":
                return self._upload(headers, body)
            if method == "GET" and parts[:2] == ["v1", "files"] and len(parts) == 3:
                return self._file(parts[2])
            if method == "GET" and parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
                return self._file_content(parts[2])
            if method == "POST" and path == "/v1/batches":
                return self._openai_create(body)
            if method == "GET" and parts[:2] == ["v1", "batches"] and len(parts) == 3:
                return self._openai_retrieve(parts[2])
        return self.engine.not_found(path)

    @staticmethod
    def _error(endpoint: Endpoint, kind: shapes.ErrorKind, message: str) -> Action:
        from evalh.mock.engine import Engine

        return Engine.error(endpoint, kind, message)

    def _settings(self) -> Any:
        return self.engine.state.script.batches

    # processing ---------------------------------------------------------------------
    def _process(self, batch: MockBatch) -> None:
        """Answer every request through the script, as the single-request endpoint would."""
        settings = self._settings()
        path = "/v1/messages" if batch.provider == "anthropic" else "/v1/chat/completions"
        auth = {"x-api-key": "batch"} if batch.provider == "anthropic" else {"authorization": "Bearer batch"}
        expired = False
        for i, (custom_id, body) in enumerate(batch.requests):
            if settings.expire_after is not None and i >= settings.expire_after:
                expired = True
                batch.results[custom_id] = self._expired_line(batch, custom_id)
                continue
            action = self.engine.handle(path, dict(auth), json.dumps(body).encode(), record=False)
            batch.results[custom_id] = self._line(batch, custom_id, action)
        batch.ended_at = time.time()
        if batch.provider == "anthropic":
            batch.status = "ended"
            return
        batch.status = "expired" if expired else "completed"
        ok = [r for r in batch.results.values() if r["response"] and r["response"]["status_code"] == 200]
        bad = [r for r in batch.results.values() if not (r["response"] and r["response"]["status_code"] == 200)]
        if ok:
            batch.output_file_id = self._store_file("batch_output.jsonl", "batch_output", ok)
        if bad:
            batch.error_file_id = self._store_file("batch_errors.jsonl", "batch_output", bad)

    def _store_file(self, name: str, purpose: str, lines: list[dict[str, Any]]) -> str:
        fid = shapes.new_id("file-")
        data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        self.files[fid] = (name, purpose, data, time.time())
        return fid

    @staticmethod
    def _line(batch: MockBatch, custom_id: str, action: Action) -> dict[str, Any]:
        try:
            reply = json.loads(action.body) if not action.drop else None
        except ValueError:
            reply = None
        if batch.provider == "anthropic":
            if action.status == 200 and isinstance(reply, dict):
                return {"custom_id": custom_id, "result": {"type": "succeeded", "message": reply}}
            if not isinstance(reply, dict) or reply.get("type") != "error":
                reply = {"type": "error", "request_id": shapes.new_id("req_"),
                         "error": {"type": "api_error", "message": "Internal server error (mock provider)."}}
            return {"custom_id": custom_id, "result": {"type": "errored", "error": reply}}
        status = action.status if isinstance(reply, dict) else 500
        if not isinstance(reply, dict):
            reply = {"error": {"message": "Internal server error (mock provider).", "type": "server_error",
                               "param": None, "code": None}}
        return {
            "id": shapes.new_id("batch_req_"), "custom_id": custom_id,
            "response": {"status_code": status, "request_id": shapes.new_id("req_"), "body": reply},
            "error": None,
        }

    @staticmethod
    def _expired_line(batch: MockBatch, custom_id: str) -> dict[str, Any]:
        if batch.provider == "anthropic":
            return {"custom_id": custom_id, "result": {"type": "expired"}}
        return {"id": shapes.new_id("batch_req_"), "custom_id": custom_id, "response": None,
                "error": {"code": "batch_expired", "message": _EXPIRED_MESSAGE}}

    def _advance(self, batch: MockBatch) -> None:
        """One retrieve: a batch ends on the retrieve after `polls` retrieves."""
        batch.retrieves += 1
        if batch.status == "validating":
            if batch.failure is not None:
                batch.status = "failed"
                batch.ended_at = time.time()
                return
            batch.status = "in_progress"
        if batch.status == "in_progress" and batch.retrieves > self._settings().polls:
            self._process(batch)

    # Anthropic ----------------------------------------------------------------------
    def _anthropic_create(self, raw: bytes) -> Action:
        from evalh.mock.engine import Action

        try:
            body = json.loads(raw)
        except ValueError:
            return self._error("anthropic", "invalid_request", "request body is not valid JSON")
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return self._error("anthropic", "invalid_request", "requests: Field required (a non-empty list)")
        seen: set[str] = set()
        parsed: list[tuple[str, dict[str, Any]]] = []
        for i, item in enumerate(requests):
            cid = item.get("custom_id") if isinstance(item, dict) else None
            if not isinstance(cid, str) or not CUSTOM_ID.match(cid):
                return self._error("anthropic", "invalid_request",
                                   f"requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
            if cid in seen:
                return self._error("anthropic", "invalid_request",
                                   f"requests.{i}.custom_id: duplicate custom_id {cid!r} in the batch")
            seen.add(cid)
            problem = shapes.validate("anthropic", item.get("params"))
            if problem is not None:
                return self._error("anthropic", "invalid_request", f"requests.{i}.params.{problem}")
            parsed.append((cid, item["params"]))
        with self._lock:
            batch = MockBatch(shapes.new_id("msgbatch_"), "anthropic", parsed, time.time())
            self.batches[batch.id] = batch
            self.creates["anthropic"] += 1
            return Action.json(200, self._anthropic_view(batch, None))

    def _anthropic_view(self, batch: MockBatch, host: str | None) -> dict[str, Any]:
        ended = batch.status == "ended"
        counts = Counter(r["result"]["type"] for r in batch.results.values()) if ended else Counter()
        return {
            "id": batch.id, "type": "message_batch",
            "processing_status": batch.status,
            "request_counts": {
                "processing": 0 if ended else len(batch.requests),
                "succeeded": counts["succeeded"], "errored": counts["errored"],
                "canceled": counts["canceled"], "expired": counts["expired"],
            },
            "created_at": _iso(batch.created_at), "expires_at": _iso(batch.created_at + 86400),
            "ended_at": _iso(batch.ended_at) if batch.ended_at else None,
            "archived_at": None, "cancel_initiated_at": None,
            "results_url": (f"http://{host or '127.0.0.1'}{_ANTHROPIC_BATCHES}/{batch.id}/results"
                            if ended else None),
        }

    def _anthropic_retrieve(self, batch_id: str, headers: dict[str, str]) -> Action:
        from evalh.mock.engine import Action

        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None or batch.provider != "anthropic":
                return self._error("anthropic", "not_found", f"batch {batch_id} not found")
            self._advance(batch)
            return Action.json(200, self._anthropic_view(batch, headers.get("host")))

    def _anthropic_results(self, batch_id: str) -> Action:
        from evalh.mock.engine import Action

        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None or batch.provider != "anthropic":
                return self._error("anthropic", "not_found", f"batch {batch_id} not found")
            if batch.status != "ended":
                return self._error("anthropic", "not_found", f"batch {batch_id} has not ended: no results yet")
            lines = [batch.results[cid] for cid, _ in reversed(batch.requests)]
        data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        return Action(status=200, body=data, content_type="application/binary")

    # OpenAI -------------------------------------------------------------------------
    def _upload(self, headers: dict[str, str], raw: bytes) -> Action:
        from evalh.mock.engine import Action

        ctype = headers.get("content-type", "")
        if "multipart/form-data" not in ctype:
            return self._error("openai", "invalid_request", "files: expected multipart/form-data")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {ctype}\r\n\r\n".encode("latin-1") + raw
        )
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if isinstance(name, str):
                payload = part.get_payload(decode=True)
                fields[name] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
        if "file" not in fields or "purpose" not in fields:
            return self._error("openai", "invalid_request", "files: `file` and `purpose` are required")
        purpose = fields["purpose"][1].decode()
        filename, data = fields["file"]
        with self._lock:
            fid = shapes.new_id("file-")
            self.files[fid] = (filename or "upload.jsonl", purpose, data, time.time())
            return Action.json(200, self._file_view(fid))

    def _file_view(self, fid: str) -> dict[str, Any]:
        name, purpose, data, created = self.files[fid]
        return {"id": fid, "object": "file", "bytes": len(data), "created_at": int(created),
                "filename": name, "purpose": purpose, "status": "processed", "status_details": None}

    def _file(self, fid: str) -> Action:
        from evalh.mock.engine import Action

        with self._lock:
            if fid not in self.files:
                return self._error("openai", "not_found", f"No such File object: {fid}")
            return Action.json(200, self._file_view(fid))

    def _file_content(self, fid: str) -> Action:
        from evalh.mock.engine import Action

        with self._lock:
            if fid not in self.files:
                return self._error("openai", "not_found", f"No such File object: {fid}")
            return Action(status=200, body=self.files[fid][2], content_type="application/octet-stream")

    def _openai_create(self, raw: bytes) -> Action:
        from evalh.mock.engine import Action

        try:
            body = json.loads(raw)
        except ValueError:
            return self._error("openai", "invalid_request", "request body is not valid JSON")
        if not isinstance(body, dict):
            return self._error("openai", "invalid_request", "request body must be a JSON object")
        endpoint = body.get("endpoint")
        if endpoint != "/v1/chat/completions":
            return self._error("openai", "invalid_request",
                               f"endpoint: the mock batches /v1/chat/completions only, not {endpoint!r}")
        if body.get("completion_window") != "24h":
            return self._error("openai", "invalid_request", "completion_window: only '24h' is supported")
        fid = body.get("input_file_id")
        with self._lock:
            if not isinstance(fid, str) or fid not in self.files:
                return self._error("openai", "invalid_request", f"input_file_id: no such file {fid!r}")
            parsed, failure = self._parse_input(self.files[fid][2], endpoint)
            batch = MockBatch(shapes.new_id("batch_"), "openai", parsed, time.time(), status="validating",
                              endpoint=endpoint, input_file_id=fid, failure=failure)
            self.batches[batch.id] = batch
            self.creates["openai"] += 1
            return Action.json(200, self._openai_view(batch, body.get("metadata")))

    @staticmethod
    def _parse_input(data: bytes, endpoint: str) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any] | None]:
        parsed: list[tuple[str, dict[str, Any]]] = []
        seen: set[str] = set()
        for number, line in enumerate(data.splitlines(), 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:
                return [], {"code": "invalid_json_line", "message": "This line is not parseable as valid JSON.",
                            "line": number}
            cid = item.get("custom_id") if isinstance(item, dict) else None
            problem = None
            if not isinstance(cid, str) or not cid:
                problem = "custom_id is required"
            elif cid in seen:
                problem = f"The custom_id {cid!r} is duplicated"
            elif item.get("method") != "POST" or item.get("url") != endpoint:
                problem = f"method must be POST and url must be {endpoint}"
            else:
                problem = shapes.validate("openai", item.get("body"))
            if problem is not None:
                return [], {"code": "invalid_request", "message": problem, "line": number}
            seen.add(cid)  # type: ignore[arg-type]
            parsed.append((cid, item["body"]))  # type: ignore[arg-type]
        if not parsed:
            return [], {"code": "empty_file", "message": "The input file has no requests.", "line": None}
        return parsed, None

    def _openai_view(self, batch: MockBatch, metadata: Any = None) -> dict[str, Any]:
        done = batch.status in ("completed", "expired")
        ok = sum(1 for r in batch.results.values() if r["response"] and r["response"]["status_code"] == 200)
        t = int(batch.created_at)
        ended = int(batch.ended_at) if batch.ended_at else None
        return {
            "id": batch.id, "object": "batch", "endpoint": batch.endpoint,
            "errors": ({"object": "list", "data": [batch.failure]} if batch.status == "failed" else None),
            "input_file_id": batch.input_file_id, "completion_window": "24h", "status": batch.status,
            "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
            "created_at": t, "in_progress_at": t if batch.status != "validating" else None,
            "expires_at": t + 86400, "finalizing_at": ended if done else None,
            "completed_at": ended if batch.status == "completed" else None,
            "failed_at": ended if batch.status == "failed" else None,
            "expired_at": ended if batch.status == "expired" else None,
            "cancelling_at": None, "cancelled_at": None,
            "request_counts": {
                "total": 0 if batch.status in ("validating", "failed") else len(batch.requests),
                "completed": ok if done else 0,
                "failed": (len(batch.results) - ok) if done else 0,
            },
            "metadata": metadata,
        }

    def _openai_retrieve(self, batch_id: str) -> Action:
        from evalh.mock.engine import Action

        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None or batch.provider != "openai":
                return self._error("openai", "not_found", f"No batch found with id '{batch_id}'.")
            self._advance(batch)
            return Action.json(200, self._openai_view(batch))
