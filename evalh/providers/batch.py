"""Provider batch APIs: a model target or judge with `batch = true` (docs/batch.md).

`get_provider` gives such a config a `ManagedClient` (same response cache, same cache key,
same budget rule) with a `BatchSender`: its uncached requests are not sent one by one but
collected and submitted together — through the Anthropic Message Batches API
(`client.messages.batches.create / retrieve / results` of the official SDK) or the OpenAI
Batch API (a JSONL file uploaded to `/v1/files`, `/v1/batches` created and retrieved, the
output and error files downloaded, over the backend's aiohttp session).

- **Collecting**: requests that arrive within `QUIET_S` of each other go in one batch (a
  batched suite keeps every case in flight, so the runner's cases arrive together; its
  judges' requests come together when the targets' batch ends: a second batch). A batch
  holds at most the provider's limit (`MAX_REQUESTS`); more make several.
- **Ids**: a request's `custom_id` is `evalh-` + the first 40 hex digits of its cache key,
  so the same request in a resumed run has the same id.
- **Journal**: once a batch is created its id, endpoint and custom_ids are noted in the
  run's journal (`Journal.note_batch`). A resumed run reads them back (`Ledger`): a request
  whose custom_id a noted batch holds re-attaches to that batch (polls it, reads its
  results) instead of being submitted again. A noted batch the provider no longer knows
  (404) is submitted anew.
- **Polling**: the first ask `batch_poll_s` after creating, then doubling up to
  `batch_poll_max_s`; a failed ask (timeout, 5xx) is asked again at the next wait.
- **Results**: a succeeded request is a `ChatResponse` priced at the batch price
  (`prices.batch_cost_usd`: 50 % of list) with no latency of its own (`latency_ms` None);
  an errored, expired or canceled request raises `ProviderError` naming the batch and the
  reason — the case is `errored` (a judge's call: `judge_error`), never a pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from evalh.providers.base import ChatRequest, ChatResponse, ProviderError
from evalh.providers.prices import batch_cost_usd
from evalh.providers.resilience import (
    PermanentError,
    RetryPolicy,
    TransientError,
    call_with_retries,
    is_retryable,
    parse_retry_after,
)

if TYPE_CHECKING:
    from evalh.services import RunServices

BATCH_IN_FLIGHT = 50_000
"""The cases a suite with a batched target or judge keeps in flight (`batch_width`): all of
them, up to the largest OpenAI batch, so their requests go in one batch."""
QUIET_S = 0.2
"""A batch is submitted once no new request has come for this long."""
MAX_REQUESTS = {"anthropic": 100_000, "openai": 50_000}
"""The most requests one batch of each provider may hold."""
CUSTOM_ID_PREFIX = "evalh-"
EXPIRED = "expired before the provider processed it (a batch has 24 h)"


def custom_id(cache_key: str) -> str:
    """A request's id in its batch: stable across runs (`[a-zA-Z0-9_-]{1,64}`, as Anthropic asks)."""
    return CUSTOM_ID_PREFIX + cache_key[:40]


class BatchGone(Exception):
    """A noted batch the provider does not know (any more): its requests are sent anew."""


@dataclass
class BatchState:
    """What a retrieve said."""

    status: str
    ended: bool
    counts: dict[str, Any]
    raw: Any


Outcome = ChatResponse | ProviderError


class Ledger:
    """The batches of a run, by (endpoint, custom_id): noted in the journal when created,
    read back from it on the first use (a resumed run's)."""

    def __init__(self, services: RunServices) -> None:
        self.services = services
        self._known: dict[tuple[str, str], str] | None = None

    def _load(self) -> dict[tuple[str, str], str]:
        if self._known is None:
            self._known = {}
            journal = self.services.journal
            if journal is not None:
                from evalh.journal import Journal

                for note in Journal.batch_notes(journal.path):
                    ids = note.get("custom_ids")
                    if isinstance(note.get("id"), str) and isinstance(note.get("endpoint"), str) and isinstance(ids, list):
                        for cid in ids:
                            self._known[(note["endpoint"], str(cid))] = note["id"]
        return self._known

    def batch_of(self, endpoint: str, cid: str) -> str | None:
        return self._load().get((endpoint, cid))

    def forget(self, endpoint: str, batch_id: str) -> None:
        known = self._load()
        for key in [k for k, v in known.items() if k[0] == endpoint and v == batch_id]:
            del known[key]

    def note(self, endpoint: str, provider: str, batch_id: str, cids: list[str]) -> None:
        known = self._load()
        for cid in cids:
            known[(endpoint, cid)] = batch_id
        journal = self.services.journal
        if journal is not None:
            journal.note_batch({"id": batch_id, "provider": provider, "endpoint": endpoint,
                                "custom_ids": cids, "submitted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})


def ledger_of(services: RunServices) -> Ledger:
    ledger = services.providers.get("batch:ledger")
    if ledger is None:
        ledger = services.providers["batch:ledger"] = Ledger(services)
    assert isinstance(ledger, Ledger)
    return ledger


class BatchSender:
    """How a `ManagedClient` with `batch = true` sends an uncached request: in a batch, at
    the batch price (`ManagedClient.batch`; the client's cache, key and budget rule stay)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        """The `evalh.providers.clients.ManagedClient` it sends for."""
        self._hub: _Hub | None = None

    async def call(self, request: ChatRequest) -> ChatResponse:
        client = self.client
        if self._hub is None:
            self._hub = _Hub(client)
        response = await self._hub.answer(custom_id(client.cache_key(request)), request)
        prices = client.services.prices
        response.cost_usd = batch_cost_usd(prices, response.model, response.tokens_in, response.tokens_out)
        if response.cost_usd is None and response.model != request.model:
            response.cost_usd = batch_cost_usd(prices, request.model, response.tokens_in, response.tokens_out)
        if not request.billed_by_runner:
            client.services.budget.charge(cost_usd=response.cost_usd, tokens_in=response.tokens_in,
                                          tokens_out=response.tokens_out)
        return response


class _Hub:
    """One client's pending requests, the batches it submitted and the ones it watches."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.wire = _wire(client)
        self.ledger = ledger_of(client.services)
        self.pending: dict[str, tuple[ChatRequest, asyncio.Future[Outcome]]] = {}
        self.timer: asyncio.TimerHandle | None = None
        self.watches: dict[str, _Watch] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.limit = MAX_REQUESTS.get(client.backend.provider, 50_000)

    @property
    def endpoint(self) -> str:
        return self.client.endpoint

    async def answer(self, cid: str, request: ChatRequest) -> ChatResponse:
        batch_id = self.ledger.batch_of(self.endpoint, cid)
        if batch_id is not None:
            try:
                return await self.watch(batch_id).answer(cid)
            except BatchGone:
                self.ledger.forget(self.endpoint, batch_id)
        entry = self.pending.get(cid)
        if entry is None:
            future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
            entry = self.pending[cid] = (request, future)
            if len(self.pending) >= self.limit:
                self.flush()
            else:
                if self.timer is not None:
                    self.timer.cancel()
                self.timer = asyncio.get_running_loop().call_later(QUIET_S, self.flush)
        return _outcome(await asyncio.shield(entry[1]))

    def flush(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if not self.pending:
            return
        items, self.pending = self.pending, {}
        task = asyncio.get_running_loop().create_task(self._submit(items))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _submit(self, items: dict[str, tuple[ChatRequest, asyncio.Future[Outcome]]]) -> None:
        requests = [(cid, req) for cid, (req, _) in items.items()]
        try:
            batch_id = await self.wire.create(requests)
        except Exception as exc:
            error = exc if isinstance(exc, ProviderError) else ProviderError(f"{type(exc).__name__}: {exc}", retryable=False)
            for _, future in items.values():
                if not future.done():
                    future.set_result(ProviderError(f"{self.client.backend.provider}: batch not submitted: {error}",
                                                    status=error.status, retryable=False))
            return
        self.ledger.note(self.endpoint, self.client.backend.provider, batch_id, [cid for cid, _ in requests])
        watch = self.watch(batch_id, wait_first=True)
        for cid, (_, future) in items.items():
            watch.forward(cid, future)

    def watch(self, batch_id: str, *, wait_first: bool = False) -> _Watch:
        """The watch of `batch_id` (made on first use: a resumed run's re-attached batch is
        asked at once, a batch just created after `batch_poll_s`)."""
        watch = self.watches.get(batch_id)
        if watch is None:
            watch = self.watches[batch_id] = _Watch(self, batch_id, wait_first=wait_first)
        return watch


def _outcome(out: Outcome) -> ChatResponse:
    """A waiter's own copy of an outcome (an error raised afresh for each waiter)."""
    if isinstance(out, ProviderError):
        raise ProviderError(str(out), status=out.status, attempts=out.attempts, retryable=out.retryable)
    return dataclasses.replace(out)


class _Watch:
    """Polls one batch until it ends, then reads its results once."""

    def __init__(self, hub: _Hub, batch_id: str, *, wait_first: bool) -> None:
        self.hub = hub
        self.batch_id = batch_id
        self.done: asyncio.Future[dict[str, Outcome]] = asyncio.get_running_loop().create_future()
        self.task = asyncio.get_running_loop().create_task(self._run(wait_first))
        hub.tasks.add(self.task)
        self.task.add_done_callback(hub.tasks.discard)

    async def answer(self, cid: str) -> ChatResponse:
        outcomes = await asyncio.shield(self.done)
        return _outcome(outcomes.get(cid) or outcomes.get("*") or self._missing(cid))

    def forward(self, cid: str, future: asyncio.Future[Outcome]) -> None:
        def relay(done: asyncio.Future[dict[str, Outcome]]) -> None:
            if future.done():
                return
            exc = done.exception() if not done.cancelled() else None
            if done.cancelled():
                future.cancel()
            elif isinstance(exc, BatchGone | ProviderError):
                future.set_result(ProviderError(str(exc), retryable=False))
            elif exc is not None:
                future.set_result(ProviderError(f"batch {self.batch_id}: {type(exc).__name__}: {exc}", retryable=False))
            else:
                outcomes = done.result()
                future.set_result(outcomes.get(cid) or outcomes.get("*") or self._missing(cid))

        self.done.add_done_callback(relay)

    def _missing(self, cid: str) -> ProviderError:
        return ProviderError(f"{self._what()}: batch {self.batch_id} ended without a result for request {cid}",
                             retryable=False)

    def _what(self) -> str:
        return f"{self.hub.client.backend.provider} {self.hub.client.config.model}"

    async def _run(self, wait_first: bool) -> None:
        cfg = self.hub.client.config
        wait = cfg.batch_poll_s
        try:
            if wait_first:
                await asyncio.sleep(wait)
                wait = min(wait * 2, cfg.batch_poll_max_s)
            while True:
                try:
                    state = await self.hub.wire.retrieve(self.batch_id)
                except ProviderError as exc:
                    if exc.status == 404:
                        raise BatchGone(f"{self._what()}: batch {self.batch_id} is not known to the provider") from None
                    if not exc.retryable:
                        raise
                    state = None  # asked again at the next wait
                if state is not None and state.ended:
                    break
                await asyncio.sleep(wait)
                wait = min(wait * 2, cfg.batch_poll_max_s)
            outcomes = await self.hub.wire.results(self.batch_id, state, self._what())
        except asyncio.CancelledError:
            self.done.cancel()
            raise
        except Exception as exc:  # every waiter gets it (BatchGone, ProviderError, a malformed reply)
            if not self.done.done():
                self.done.set_exception(exc)
            return
        self.done.set_result(outcomes)


# ---------------------------------------------------------------------- the wires


def _wire(client: Any) -> _AnthropicWire | _OpenAIWire:
    from evalh.providers.anthropic import AnthropicBackend
    from evalh.providers.openai import OpenAIBackend

    backend = client.backend
    if isinstance(backend, AnthropicBackend):
        return _AnthropicWire(client, backend)
    if isinstance(backend, OpenAIBackend):
        return _OpenAIWire(client, backend)
    raise ProviderError(f"batch = true: provider {backend.provider!r} has no batch API evalh speaks", retryable=False)


async def _retried(client: Any, what: str, call: Any) -> Any:
    """One batch-API call through the endpoint's retries and limits (a request slot, no tokens)."""
    cfg = client.config
    return await call_with_retries(
        call, policy=RetryPolicy(cfg.max_retries, cfg.backoff_base_s, cfg.backoff_max_s),
        limits=client.limits, what=f"{client.backend.provider} {cfg.model}: {what}", tokens=0,
        sleep=client.sleep, clock=client.clock,
    )


class _AnthropicWire:
    """The Message Batches API through the official SDK (`client.messages.batches`)."""

    def __init__(self, client: Any, backend: Any) -> None:
        self.client = client
        self.backend = backend
        self.sdk = backend._sdk
        self.api = backend._client.messages.batches

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        sdk, server = self.sdk, self.backend.server
        try:
            yield
        except sdk.APIStatusError as exc:
            from evalh.providers.anthropic import _error_message

            status = exc.status_code
            text = f"HTTP {status} from {server}: {_error_message(exc)}"
            if is_retryable(status):
                raise TransientError(text, status=status,
                                     retry_after=parse_retry_after(dict(exc.response.headers))) from None
            raise PermanentError(text, status=status) from None
        except sdk.APITimeoutError:
            raise TransientError(f"request to {server} timed out") from None
        except sdk.APIConnectionError as exc:
            raise TransientError(f"connection to {server} failed: {exc}") from None

    async def create(self, requests: list[tuple[str, ChatRequest]]) -> str:
        from evalh.providers.anthropic import message_body

        body = [{"custom_id": cid, "params": message_body(req)} for cid, req in requests]

        async def once() -> str:
            with self._errors():
                batch = await self.api.create(requests=body)
            return str(batch.id)

        return str(await _retried(self.client, "creating a message batch", once))

    async def retrieve(self, batch_id: str) -> BatchState:
        async def once() -> BatchState:
            with self._errors():
                batch = await self.api.retrieve(batch_id)
            return BatchState(batch.processing_status, batch.processing_status == "ended",
                              batch.request_counts.model_dump(), batch)

        state: BatchState = await _retried(self.client, f"retrieving message batch {batch_id}", once)
        return state

    async def results(self, batch_id: str, state: BatchState, what: str) -> dict[str, Outcome]:
        from evalh.providers.anthropic import _response

        async def once() -> dict[str, Outcome]:
            out: dict[str, Outcome] = {}
            with self._errors():
                lines = await self.api.results(batch_id)
                async for line in lines:
                    result = line.result
                    kind = result.type
                    where = f"{what}: batch {batch_id}: request {line.custom_id}"
                    if kind == "succeeded":
                        message = result.message.model_dump(mode="json")
                        try:
                            out[line.custom_id] = _response(message, str(message.get("model") or ""), self.backend.server)
                        except TransientError as exc:
                            out[line.custom_id] = ProviderError(f"{where}: {exc}", retryable=False)
                    elif kind == "errored":
                        err = result.error.error
                        out[line.custom_id] = ProviderError(f"{where} errored: {err.type}: {err.message}",
                                                            retryable=False)
                    elif kind == "expired":
                        out[line.custom_id] = ProviderError(f"{where} {EXPIRED}", retryable=False)
                    else:
                        out[line.custom_id] = ProviderError(f"{where} was {kind}", retryable=False)
            return out

        outcomes: dict[str, Outcome] = await _retried(self.client, f"reading the results of {batch_id}", once)
        return outcomes


_OPENAI_ENDED = frozenset({"completed", "expired", "failed", "cancelled"})


class _OpenAIWire:
    """The OpenAI Batch API over the backend's aiohttp session."""

    def __init__(self, client: Any, backend: Any) -> None:
        self.client = client
        self.backend = backend

    async def _send(self, method: str, path: str, **kw: Any) -> bytes:
        import aiohttp

        backend = self.backend
        if backend._problem is not None:
            raise PermanentError(f"cannot send to {backend._shown()}: {backend._problem}")
        session = backend._session or backend._open()
        try:
            async with session.request(method, backend.url(path), **kw) as resp:
                status, raw, headers = resp.status, await resp.read(), resp.headers
        except TimeoutError:
            raise TransientError(f"request to {backend._shown()} timed out") from None
        except aiohttp.ClientError as exc:
            raise TransientError(f"connection to {backend._shown()} failed: {type(exc).__name__}: {exc}") from None
        if status >= 400:
            from evalh.providers.openai import _error_message

            text = f"HTTP {status} from {backend._shown()}: {_error_message(raw)}"
            if is_retryable(status):
                raise TransientError(text, status=status, retry_after=parse_retry_after(dict(headers)))
            raise PermanentError(text, status=status)
        return bytes(raw)

    async def _json(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        raw = await self._send(method, path, **kw)
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise TransientError(f"malformed JSON from {self.backend._shown()}: {raw[:200]!r}") from None
        if not isinstance(data, dict):
            raise TransientError(f"malformed reply from {self.backend._shown()}: {raw[:200]!r}")
        return data

    async def create(self, requests: list[tuple[str, ChatRequest]]) -> str:
        import aiohttp

        lines = b"".join(
            orjson.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions",
                          "body": self.backend.body(req)}) + b"\n"
            for cid, req in requests
        )

        async def upload() -> dict[str, Any]:
            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field("file", lines, filename="evalh-batch.jsonl", content_type="application/jsonl")
            payload = form()
            return await self._json("POST", "/files", data=payload, headers={"Content-Type": payload.content_type})

        file = await _retried(self.client, "uploading the batch input file", upload)

        async def create() -> dict[str, Any]:
            body = {"input_file_id": file["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"}
            return await self._json("POST", "/batches", data=orjson.dumps(body))

        batch = await _retried(self.client, "creating a batch", create)
        return str(batch["id"])

    async def retrieve(self, batch_id: str) -> BatchState:
        async def once() -> BatchState:
            data = await self._json("GET", f"/batches/{batch_id}")
            status = str(data.get("status"))
            return BatchState(status, status in _OPENAI_ENDED, dict(data.get("request_counts") or {}), data)

        state: BatchState = await _retried(self.client, f"retrieving batch {batch_id}", once)
        return state

    async def results(self, batch_id: str, state: BatchState, what: str) -> dict[str, Outcome]:
        from evalh.providers.openai import _response

        data = state.raw
        out: dict[str, Outcome] = {}
        if state.status in ("failed", "cancelled"):
            errors = ((data.get("errors") or {}).get("data") or [{}])
            first = errors[0] if errors else {}
            why = first.get("message") or state.status
            line = f" (input line {first['line']})" if first.get("line") else ""
            # "*": the outcome of every request of the batch without one of its own
            return {"*": ProviderError(f"{what}: batch {batch_id} {state.status}: {why}{line}", retryable=False)}
        if state.status == "expired":
            out["*"] = ProviderError(f"{what}: batch {batch_id}: request {EXPIRED}", retryable=False)
        for key in ("output_file_id", "error_file_id"):
            fid = data.get(key)
            if not fid:
                continue

            async def download(fid: str = fid) -> bytes:
                return await self._send("GET", f"/files/{fid}/content")

            raw: bytes = await _retried(self.client, f"downloading {fid} of {batch_id}", download)
            for text in raw.splitlines():
                if not text.strip():
                    continue
                item = orjson.loads(text)
                cid = str(item.get("custom_id"))
                where = f"{what}: batch {batch_id}: request {cid}"
                response, error = item.get("response"), item.get("error")
                if isinstance(response, dict) and response.get("status_code") == 200:
                    body = response.get("body") or {}
                    try:
                        out[cid] = _response(body, str(body.get("model") or ""), self.backend._shown())
                    except TransientError as exc:
                        out[cid] = ProviderError(f"{where}: {exc}", retryable=False)
                elif isinstance(error, dict) and error.get("code") == "batch_expired":
                    out[cid] = ProviderError(f"{where} {EXPIRED}", retryable=False)
                elif isinstance(error, dict):
                    out[cid] = ProviderError(f"{where} errored: {error.get('code')}: {error.get('message')}",
                                             retryable=False)
                else:
                    status = response.get("status_code") if isinstance(response, dict) else None
                    body = response.get("body") if isinstance(response, dict) else None
                    from evalh.providers.openai import _error_message

                    message = _error_message(orjson.dumps(body)) if body is not None else "no response"
                    out[cid] = ProviderError(f"{where} errored: HTTP {status}: {message}", status=status,
                                             retryable=False)
        return out
