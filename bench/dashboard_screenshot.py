"""Regenerate the dashboard screenshots in docs/ from seeded runs.

    python bench/dashboard_screenshot.py

Seeds 12 runs (bench/seed_runs.py) into bench/.work/shot/, marks one BASELINE, serves them
with the dashboard, and saves with headless Chromium (Debian's /usr/bin/chromium, via
Playwright): docs/dashboard.png (trends and history) and docs/dashboard-case.png (the
drill-down of one case).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs"
WORK = HERE / ".work" / "shot"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main() -> int:
    sys.path.insert(0, str(HERE))
    from playwright.sync_api import sync_playwright
    from seed_runs import seed

    from evalh.baseline import write_baseline
    from evalh.ui.server import make_server

    shutil.rmtree(WORK, ignore_errors=True)
    runs = seed(WORK, runs=12)
    write_baseline(WORK, runs[4].run_id)
    os.chdir(WORK)  # the page shows the runs directory as given: keep this machine's paths out
    server = make_server(Path("eval_runs"), Path("."), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1360, "height": 1000}, color_scheme="light")
            page.goto(url + "/")
            page.locator("[data-testid=history] tbody tr").first.wait_for()
            page.screenshot(path=str(DOCS / "dashboard.png"), full_page=True)
            page.goto(f"{url}/#/run/{runs[-1].run_id}?suite=live&q=live.q15")
            page.locator("[data-testid=suites]").wait_for()
            page.locator("[data-testid=cases] tbody tr[data-case='live.q15']").first.click()
            page.locator("[data-testid=case-title]").wait_for()
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(DOCS / "dashboard-case.png"), full_page=True)
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    print(f"wrote {DOCS / 'dashboard.png'} and {DOCS / 'dashboard-case.png'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
