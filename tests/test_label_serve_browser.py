"""The labelling page (`evalh label serve`) in Debian's headless Chromium: a rater labels
five requests with the keyboard only, reloads and resumes at the sixth; a hostile output
shows as text and runs nothing; what is saved equals what `label import` writes; nothing
hidden is in the DOM or in any response."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalh.labels import LabelStore, build_export, import_ratings, load_store
from evalh.ui.label_server import LabelSession, make_label_server
from tests.test_label_serve import HIDDEN, HOSTILE, RUBRIC, make_run

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.browser
if not CHROMIUM.exists():
    pytest.skip("needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; .ci/run does)",
                allow_module_level=True)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    run = make_run(7)
    labels = LabelStore(run_id=run.run_id)
    doc, _ = build_export(run, labels, rubric=RUBRIC, rubric_name="rubric.toml")
    server = make_label_server(LabelSession(run, labels, load_store(tmp_path / "runs"), "ann"))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield {"url": f"http://127.0.0.1:{server.server_address[1]}/", "doc": doc, "run": run, "labels": labels,
               "tmp": tmp_path}
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def page(served: dict[str, Any]) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        ctx = browser.new_context()
        p = ctx.new_page()
        p.errors = []  # type: ignore[attr-defined]
        p.bodies = []  # type: ignore[attr-defined]
        p.on("pageerror", lambda e: p.errors.append(str(e)))  # type: ignore[attr-defined]
        p.on("console", lambda m: p.errors.append(m.text) if m.type == "error" else None)  # type: ignore[attr-defined]
        p.on("response", lambda r: p.bodies.append(r.text()))  # type: ignore[attr-defined]
        yield p
        browser.close()


def test_keyboard_labelling_resume_hostile_text_and_nothing_hidden(served: dict[str, Any], page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(served["url"])
    page.wait_for_selector("#output")
    assert page.text_content("#progress") == "Request 1 of 7 · 0 rated"
    seen_hostile = False
    for _ in range(7):  # → through every request (ids are random, so is the hostile one's place)
        if HOSTILE in (page.text_content("#output") or ""):
            seen_hostile = True  # shown as text: the characters are there, no element was made
            assert page.locator("#output img, #output script").count() == 0
        page.keyboard.press("ArrowRight")
    for _ in range(7):
        page.keyboard.press("ArrowLeft")
    expect(page.locator("#progress")).to_have_text("Request 1 of 7 · 0 rated")
    for n in range(5):
        page.keyboard.press("1")  # claim c1 truth: true
        page.keyboard.press("0")  # relevance: cannot tell
        assert page.locator(".q .opt.chosen").count() == 2
        page.keyboard.press("Enter")
        expect(page.locator("#progress")).to_have_text(f"Request {min(n + 2, 7)} of 7 · {n + 1} rated")
    assert seen_hostile
    assert page.evaluate("() => [window.__pwned, window.__pwned_script]") == [None, None]
    page.reload()
    page.wait_for_selector("#output")
    assert page.text_content("#progress") == "Request 6 of 7 · 5 rated"  # resumed where the rater left off
    assert HIDDEN not in page.content()
    assert page.bodies and not any(HIDDEN in b for b in page.bodies)  # nor in any response
    assert page.errors == []

    # what the page saved is what `label import` writes for the same ratings
    doc = served["doc"]
    lines = [json.dumps({"request_id": r["request_id"], "request_sha256": r["request_sha256"],
                         "rubric_sha256": doc["rubric"]["sha256"], "rater": "ann",
                         "claims": {"c1": {"truth": "true"}}, "dimensions": {"relevance": None}})
             for r in doc["requests"][:5]]
    f = served["tmp"] / "ann.jsonl"
    f.write_text("\n".join(lines) + "\n")
    twin = load_store(served["tmp"] / "twin")
    import_ratings(served["run"], served["labels"], twin, [f])

    def strip(records: Any) -> list[dict[str, Any]]:
        return sorted((r.model_dump(exclude={"source", "imported_at"}) for r in records), key=json.dumps)

    saved = load_store(served["tmp"] / "runs")
    assert strip(saved.records) == strip(twin.records)
    assert len(list(saved.folder.iterdir())) == 5  # one atomically written file per save
