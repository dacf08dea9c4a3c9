"""`evalh label serve` over HTTP, without a browser: loopback only, what the page gets
(nothing hidden), and saving — validated like an import, written atomically to the store."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from evalh.labels import LabelError, LabelStore, build_export, import_ratings, load_store
from evalh.models import CaseResult, DatasetInfo, EnvironmentInfo, Run, SuiteResult
from evalh.ui.label_server import LabelSession, make_label_server

HIDDEN = "ZZ-HIDDEN-5e2d"
HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned_script=1</script>'
RUBRIC = b'''text = "Rate each claim."
[claims]
path = "expected.claims"
text_path = "output.text"
[claims.fields.truth]
values = ["true", "false", "unsupported"]
allow_null = false
[dimensions.relevance]
values = [true, false]
'''


def result(i: int) -> CaseResult:
    text = f"Claim number {i} holds. {HOSTILE if i == 2 else 'Nothing else.'}"
    span = f"Claim number {i} holds"
    return CaseResult(
        case_id=f"case.{HIDDEN}.{i}", status="passed", input={"ask": f"question {i}"},
        expected={"why": HIDDEN, "claims": [{"id": "c1", "start": 0, "end": len(span), "truth": HIDDEN}]},
        metadata={"stratum": HIDDEN, "tags": [HIDDEN]}, output={"text": text},
    )


def make_run(n: int = 7) -> Run:
    return Run(run_id="20260101T000000000Z-cccccc", started_at="2026-01-01T00:00:00Z", status="complete",
               environment=EnvironmentInfo(evalh="0", python="3", platform="test"), config={"note": HIDDEN},
               suites={"s": SuiteResult(regime="stochastic", dataset=DatasetInfo(path="d", sha256="x", cases=n),
                                        details={"x": HIDDEN}, cases=[result(i) for i in range(n)])})


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    run = make_run()
    labels = LabelStore(run_id=run.run_id)
    doc, _ = build_export(run, labels, rubric=RUBRIC, rubric_name="rubric.toml")
    store = load_store(tmp_path / "runs")
    session = LabelSession(run, labels, store, "ann")
    server = make_label_server(session)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield {"url": f"http://127.0.0.1:{server.server_address[1]}", "doc": doc, "run": run, "labels": labels,
               "store": store, "tmp": tmp_path}
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def body(doc: dict[str, Any], i: int, truth: str = "true") -> dict[str, Any]:
    req = doc["requests"][i]
    return {"request_id": req["request_id"], "request_sha256": req["request_sha256"],
            "rubric_sha256": doc["rubric"]["sha256"], "claims": {"c1": {"truth": truth}},
            "dimensions": {"relevance": None}}


def test_the_page_and_session_hold_nothing_hidden(served: dict[str, Any]) -> None:
    page = httpx.get(served["url"] + "/")
    assert page.status_code == 200 and "script-src 'sha256-" in page.headers["content-security-policy"]
    assert "default-src 'none'" in page.headers["content-security-policy"]
    session = httpx.get(served["url"] + "/api/session")
    assert HIDDEN not in page.text and HIDDEN not in session.text
    s = session.json()
    assert [r["request_id"] for r in s["requests"]] == [r["request_id"] for r in served["doc"]["requests"]]
    assert s["requests"] == served["doc"]["requests"]  # exactly what an export gives a rater
    assert s["rater"] == "ann" and s["ratings"] == {}


def test_loopback_host_names_only(served: dict[str, Any]) -> None:
    r = httpx.get(served["url"] + "/api/session", headers={"Host": "evil.example"})
    assert r.status_code == 403
    r = httpx.post(served["url"] + "/api/ratings", json=body(served["doc"], 0), headers={"Host": "evil.example"})
    assert r.status_code == 403
    with pytest.raises(LabelError, match="loopback address only"):
        make_label_server(LabelSession(served["run"], served["labels"], served["store"], "x"), host="0.0.0.0")


def test_a_post_must_be_json_from_the_page(served: dict[str, Any]) -> None:
    url = served["url"] + "/api/ratings"
    form = httpx.post(url, content=json.dumps(body(served["doc"], 0)), headers={"Content-Type": "text/plain"})
    assert form.status_code == 415
    cross = httpx.post(url, json=body(served["doc"], 0), headers={"Origin": "http://evil.example"})
    assert cross.status_code == 403
    assert not served["store"].folder.exists()


def test_a_saved_rating_is_what_import_would_have_written(served: dict[str, Any]) -> None:
    url, doc = served["url"] + "/api/ratings", served["doc"]
    r = httpx.post(url, json=body(doc, 0), headers={"Origin": served["url"]})
    assert r.status_code == 200 and r.json()["rated"] == 1
    bad = httpx.post(url, json={**body(doc, 1), "claims": {}})
    assert bad.status_code == 422 and "missing claim id(s) c1" in bad.json()["error"]
    stale = httpx.post(url, json={**body(doc, 1), "request_sha256": "0" * 64})
    assert stale.status_code == 422 and "stale rating" in stale.json()["error"]
    other = httpx.post(url, json={**body(doc, 1), "rater": "bob"})
    assert other.status_code == 422
    # the same rating through `label import`, into another store
    f = served["tmp"] / "ann.jsonl"
    f.write_text(json.dumps({**body(doc, 0), "rater": "ann"}) + "\n")
    twin = load_store(served["tmp"] / "twin")
    import_ratings(served["run"], served["labels"], twin, [f])

    def strip(records: Any) -> list[dict[str, Any]]:
        return [r.model_dump(exclude={"source", "imported_at"}) for r in records]

    assert strip(load_store(served["tmp"] / "runs").records) == strip(twin.records)
    assert httpx.get(served["url"] + "/api/session").json()["ratings"] == {
        doc["requests"][0]["request_id"]: {"claims": {"c1": {"truth": "true"}}, "dimensions": {"relevance": None}}}
