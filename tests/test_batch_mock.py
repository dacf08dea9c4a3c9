"""The mock provider's batch APIs, driven by the official SDKs as a user's code would: the
Anthropic Message Batches API (`anthropic.Anthropic().messages.batches`) and the OpenAI
Batch API (`openai.OpenAI().files` / `.batches`)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest

from evalh.mock import MockProvider

SCRIPT = [{"match": "France", "text": "Paris"}, {"match": "boom", "fault": "server_error"}]


@pytest.fixture()
def mock() -> Any:
    with MockProvider(SCRIPT) as mp:
        yield mp


def _params(text: str) -> dict[str, Any]:
    return {"model": "claude-haiku-4-5", "max_tokens": 20, "messages": [{"role": "user", "content": text}]}


def _ant(mp: MockProvider) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=mp.base_url, api_key="k", max_retries=0)


def _oai(mp: MockProvider) -> openai.OpenAI:
    return openai.OpenAI(base_url=mp.openai_base_url, api_key="k", max_retries=0)


def test_anthropic_batch_goes_in_progress_then_ends_with_a_result_per_request(mock: MockProvider) -> None:
    client = _ant(mock)
    batch = client.messages.batches.create(requests=[
        {"custom_id": "a", "params": _params("capital of France")},  # type: ignore[typeddict-item]
        {"custom_id": "b", "params": _params("boom")},  # type: ignore[typeddict-item]
    ])
    assert batch.type == "message_batch" and batch.processing_status == "in_progress"
    assert batch.request_counts.processing == 2 and batch.results_url is None
    assert client.messages.batches.retrieve(batch.id).processing_status == "in_progress"  # polls = 1
    mock.set_batches(polls=2)
    with pytest.raises(anthropic.AnthropicError, match="results_url"):  # not ended: no results yet
        list(client.messages.batches.results(batch.id))  # (the SDK retrieves the batch first)
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended" and ended.ended_at is not None
    assert ended.request_counts.succeeded == 1 and ended.request_counts.errored == 1
    assert ended.request_counts.processing == 0
    assert ended.results_url == f"{mock.base_url}/v1/messages/batches/{batch.id}/results"
    results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert results["a"].type == "succeeded" and results["a"].message.content[0].text == "Paris"  # type: ignore[union-attr]
    assert results["b"].type == "errored" and results["b"].error.error.type == "api_error"
    assert mock.batch_creates("anthropic") == 1 and mock.batch_creates("openai") == 0
    assert mock.count("/v1/messages") == 0  # batch requests are not single requests


def test_anthropic_batch_refuses_bad_custom_ids_and_bad_params(mock: MockProvider) -> None:
    client = _ant(mock)
    for requests, message in [
        ([{"custom_id": "has space", "params": _params("x")}], "requests.0.custom_id"),
        ([{"custom_id": "a", "params": _params("x")}, {"custom_id": "a", "params": _params("y")}], "duplicate"),
        ([{"custom_id": "a", "params": {"model": "m", "messages": []}}], "requests.0.params.max_tokens"),
    ]:
        with pytest.raises(anthropic.BadRequestError, match=message):
            client.messages.batches.create(requests=requests)  # type: ignore[arg-type]
    with pytest.raises(anthropic.NotFoundError):
        client.messages.batches.retrieve("msgbatch_nope")
    assert mock.batch_creates() == 0


def test_anthropic_batch_expires_after_processing_some(mock: MockProvider) -> None:
    mock.set_batches(polls=0, expire_after=1)
    client = _ant(mock)
    batch = client.messages.batches.create(requests=[
        {"custom_id": f"r{i}", "params": _params("capital of France")} for i in range(3)  # type: ignore[typeddict-item]
    ])
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.request_counts.succeeded == 1 and ended.request_counts.expired == 2
    kinds = {r.custom_id: r.result.type for r in client.messages.batches.results(batch.id)}
    assert kinds == {"r0": "succeeded", "r1": "expired", "r2": "expired"}


def _jsonl(*items: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(i).encode() + b"\n" for i in items)


def _line(cid: str, text: str) -> dict[str, Any]:
    return {"custom_id": cid, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}}


def test_openai_batch_validates_runs_and_completes_with_output_and_error_files(mock: MockProvider) -> None:
    client = _oai(mock)
    file = client.files.create(file=("in.jsonl", _jsonl(_line("x", "capital of France"), _line("y", "boom"))),
                               purpose="batch")
    assert file.purpose == "batch" and file.status == "processed" and file.bytes > 0
    batch = client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h")
    assert batch.status == "validating" and batch.output_file_id is None
    running = client.batches.retrieve(batch.id)
    assert running.status == "in_progress" and running.request_counts is not None
    assert running.request_counts.total == 2 and running.request_counts.completed == 0
    done = client.batches.retrieve(batch.id)
    assert done.status == "completed" and done.completed_at is not None
    assert done.request_counts is not None and (done.request_counts.completed, done.request_counts.failed) == (1, 1)
    assert done.output_file_id and done.error_file_id
    out = [json.loads(line) for line in client.files.content(done.output_file_id).text.splitlines()]
    assert [(o["custom_id"], o["response"]["status_code"]) for o in out] == [("x", 200)]
    assert out[0]["response"]["body"]["choices"][0]["message"]["content"] == "Paris"
    err = [json.loads(line) for line in client.files.content(done.error_file_id).text.splitlines()]
    assert [(e["custom_id"], e["response"]["status_code"]) for e in err] == [("y", 500)]
    assert mock.batch_creates("openai") == 1 and mock.count("/v1/chat/completions") == 0


def test_openai_batch_with_a_bad_input_line_fails_naming_it(mock: MockProvider) -> None:
    client = _oai(mock)
    bad = {**_line("y", "z"), "url": "/v1/embeddings"}
    file = client.files.create(file=("in.jsonl", _jsonl(_line("x", "a"), bad)), purpose="batch")
    batch = client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h")
    failed = client.batches.retrieve(batch.id)
    assert failed.status == "failed" and failed.errors is not None and failed.errors.data
    assert failed.errors.data[0].line == 2 and failed.output_file_id is None
    with pytest.raises(openai.BadRequestError, match="input_file_id"):
        client.batches.create(input_file_id="file-nope", endpoint="/v1/chat/completions", completion_window="24h")


def test_openai_batch_expires_leaving_the_rest_in_the_error_file(mock: MockProvider) -> None:
    mock.set_batches(polls=0, expire_after=1)
    client = _oai(mock)
    file = client.files.create(file=("in.jsonl", _jsonl(*(_line(f"r{i}", "capital of France") for i in range(3)))),
                               purpose="batch")
    batch = client.batches.create(input_file_id=file.id, endpoint="/v1/chat/completions", completion_window="24h")
    client.batches.retrieve(batch.id)  # validating → in_progress → processed (polls = 0)
    done = client.batches.retrieve(batch.id)
    assert done.status == "expired" and done.expired_at is not None
    assert done.output_file_id and done.error_file_id
    err = [json.loads(line) for line in client.files.content(done.error_file_id).text.splitlines()]
    assert [(e["custom_id"], e["response"], e["error"]["code"]) for e in err] == [
        ("r1", None, "batch_expired"), ("r2", None, "batch_expired")]


def test_batches_need_a_key_and_reset_forgets_them(mock: MockProvider) -> None:
    import urllib.error
    import urllib.request

    for path in ("/v1/messages/batches", "/v1/batches"):
        request = urllib.request.Request(mock.base_url + path, data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=5)
        assert info.value.code == 401
    _ant(mock).messages.batches.create(requests=[{"custom_id": "a", "params": _params("x")}])  # type: ignore[typeddict-item]
    assert mock.batch_creates() == 1 and len(mock.batch_requests()) == 1
    with urllib.request.urlopen(mock.base_url + "/_mock/batches", timeout=5) as resp:
        listed = json.loads(resp.read())
    assert listed["creates"] == {"anthropic": 1} and listed["batches"][0]["custom_ids"] == ["a"]
    mock.reset()
    assert mock.batch_creates() == 0 and mock.batch_requests() == []
