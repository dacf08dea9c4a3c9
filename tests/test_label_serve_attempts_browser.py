"""Issue 29, seed 002, in Debian's headless Chromium: the labelling page resumes right on a
run with repeated attempts whose outputs are identical (the run and the export made by the
CLI). A rating bound to content is every identical request's: after rating one and
reloading, the page shows it rated with its answers and resumes at the first request whose
content is not rated yet."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalh.labels import load_labels, load_store, sidecar_path
from evalh.store import RunStore
from evalh.ui.label_server import LabelSession, make_label_server
from tests.test_label_serve_browser import ARGS, CHROMIUM
from tests.test_labels_attempts import run_and_export

pytestmark = pytest.mark.browser
if not CHROMIUM.exists():
    pytest.skip("needs Debian's chromium at /usr/bin/chromium", allow_module_level=True)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    runs, run_id, doc = run_and_export(tmp_path, "")
    store = RunStore(runs)
    run = store.load(run_id)
    labels = load_labels(sidecar_path(runs / f"{run_id}.json", run_id), run_id)
    server = make_label_server(LabelSession(run, labels, load_store(runs), "ann"))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield {"url": f"http://127.0.0.1:{server.server_address[1]}/", "doc": doc}
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_the_page_resumes_right_with_repeated_identical_attempts(served: dict[str, Any]) -> None:
    from playwright.sync_api import expect, sync_playwright

    reqs = served["doc"]["requests"]  # in the page's order (by request id)
    first = reqs[0]["request_sha256"]
    same = [i for i, r in enumerate(reqs) if r["request_sha256"] == first]
    assert len(reqs) == 6 and len(same) == 3
    after = next(i for i, r in enumerate(reqs) if r["request_sha256"] != first)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(served["url"])
        page.wait_for_selector("#output")
        expect(page.locator("#progress")).to_have_text("Request 1 of 6 · 0 rated")
        page.keyboard.press("1")  # claim c1 truth: true
        assert page.locator(".q .opt.chosen").count() == 1
        page.keyboard.press("Enter")
        # the rating is the three identical requests': the page goes to the first other content
        expect(page.locator("#progress")).to_have_text(f"Request {after + 1} of 6 · 3 rated")
        page.reload()
        page.wait_for_selector("#output")
        expect(page.locator("#progress")).to_have_text(f"Request {after + 1} of 6 · 3 rated")
        for _ in range(after):
            page.keyboard.press("ArrowLeft")
        expect(page.locator("#progress")).to_have_text("Request 1 of 6 · 3 rated")
        assert page.locator(".q .opt.chosen").count() == 1  # request 1 shows its answer
        for i in same[1:]:  # and so does every identical attempt
            for _ in range(i - (same[same.index(i) - 1])):
                page.keyboard.press("ArrowRight")
            expect(page.locator("#progress")).to_have_text(f"Request {i + 1} of 6 · 3 rated")
            assert page.locator(".q .opt.chosen").count() == 1
        assert errors == []
        browser.close()
