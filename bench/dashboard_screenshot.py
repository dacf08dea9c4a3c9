"""Regenerate every screenshot in docs/ from real runs, with one command.

    python bench/dashboard_screenshot.py

Copies the project in bench/shot/ (config, datasets, deterministic targets and mock-provider
scripts: no key, no network) to bench/.work/shot/ and runs it with `evalh run`, six times,
as a team would over a week: the product's versions 0 to 5 (`SHOT_VERSION`), the newest
with the answerer's next version (`answers.v5.json`) and three attempts per case. The fifth
run is set as BASELINE (`evalh baseline set`); the HTML report of the two newest runs is
written by `evalh report --format html`. Then the dashboard serves them and headless
Chromium (Debian's /usr/bin/chromium, via Playwright) saves, at 1280 px:

- docs/dashboard.png: trends and history
- docs/dashboard-run.png: one run (its verdict against the BASELINE, suites table, case list)
- docs/dashboard-figures.png: the figures a suite holds — the refuter panel's per-lens
  classification, its dead `provenance` lens the worst lens, flagged
- docs/dashboard-case.png: the drill-down of one case
- docs/dashboard-compare.png: two runs compared, a regressed case side by side with its diff
- docs/dashboard-matrix.png: the cases x arms grid
- docs/dashboard-repeats.png: the cases x attempts grid with flakiness classes
- docs/dashboard-sweep.png: the triage suite's threshold sweep ranking
- docs/report-html.png: the first screen of the HTML report of the two newest runs
- docs/report-html-pairs.png: that report's cases side by side, a regressed one opened

Every figure on them is what a real run of that project produces.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs"
PROJECT = HERE / "shot"
WORK = HERE / ".work" / "shot"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
UNDER_HEADER = """(sel) => window.scrollTo(0, document.querySelector(sel).getBoundingClientRect().top + window.scrollY
    - document.querySelector('header.top').getBoundingClientRect().height - 8)"""
"""Scroll so the element starts just under the sticky header (what was above it hidden)."""
LABELS = ["prompt v4.0", "prompt v4.0", "prompt v4.1", "prompt v4.1", "prompt v4.1", "prompt v5"]


def evalh(*args: str, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0, 1)) -> str:
    """`evalh ARGS` in the work project (the command a person types); its stdout."""
    exe = Path(sys.executable).with_name("evalh")
    done = subprocess.run([str(exe), *args], cwd=WORK, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, check=False)
    if done.returncode not in ok:
        raise SystemExit(f"evalh {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done.stdout


def git(*args: str) -> None:
    stamp = {"GIT_AUTHOR_DATE": "2026-10-01T09:00:00Z", "GIT_COMMITTER_DATE": "2026-10-01T09:00:00Z"}
    subprocess.run(["git", "-c", "user.name=evalh", "-c", "user.email=shot@example.invalid", *args],
                   cwd=WORK, check=True, env={**os.environ, **stamp})


def commit(message: str) -> None:
    git("add", "-A")
    git("commit", "-q", "-m", message)


def make_runs() -> list[str]:
    """Run the project six times; the run ids, oldest first."""
    shutil.rmtree(WORK, ignore_errors=True)
    shutil.copytree(PROJECT, WORK, ignore=shutil.ignore_patterns("__pycache__"))
    # its own repository (branch main, commits at a fixed date): the runs record that
    # project's git, not the checkout this script runs from
    (WORK / ".gitignore").write_text("eval_runs/\n.cache/\n__pycache__/\nreport.html\n", encoding="utf-8")
    git("init", "-q", "-b", "main")
    commit("the shot project")
    env = {"EVALH_CACHE_DIR": str(WORK / ".cache"), "NO_COLOR": "1", "COLUMNS": "160"}
    for k, label in enumerate(LABELS):
        if k == len(LABELS) - 1:  # the answerer's next version, three attempts a case
            cfg = WORK / "evalh.toml"
            text = cfg.read_text(encoding="utf-8").replace("answers.v4.json", "answers.v5.json")
            cfg.write_text(text.replace('[suites.answers]\n', '[suites.answers]\nrepeats = 3\n'), encoding="utf-8")
            commit("answers: the next version, three attempts a case")
        evalh("run", "--no-cache", "--label", label, "--seed", str(100 + k), env={**env, "SHOT_VERSION": str(k)})
    ids = sorted(p.stem for p in (WORK / "eval_runs").glob("*.json"))
    evalh("baseline", "set", ids[-2])
    evalh("report", ids[-2], ids[-1], "--format", "html", "--output", "report.html")
    return ids


def main() -> int:
    from playwright.sync_api import sync_playwright

    from evalh.ui.server import make_server

    ids = make_runs()
    os.chdir(WORK)  # the page shows the runs directory as given: keep this machine's paths out
    report = WORK / "report.html"
    server = make_server(Path("eval_runs"), Path("."), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    base, cand = ids[-2], ids[-1]
    written = []

    def shot(page, name: str, full: bool = True) -> None:  # type: ignore[no-untyped-def]
        path = DOCS / name
        # let the scroll and the sticky panels settle: two animation frames, then a short pause
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        page.wait_for_timeout(150)
        page.screenshot(path=str(path), full_page=full)
        written.append(path.name)

    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000}, color_scheme="light")
            page.goto(url + "/")
            page.locator("[data-testid=history] tbody tr").first.wait_for()
            shot(page, "dashboard.png")
            page.goto(f"{url}/#/run/{cand}")
            page.locator("[data-testid=suites]").wait_for()
            page.locator("[data-testid=run-verdict] div").first.wait_for()
            page.locator("[data-testid=grid-card] h2").wait_for()
            shot(page, "dashboard-run.png", full=False)
            page.locator("[data-testid=figure][data-kind=classification]").first.wait_for()
            page.evaluate(UNDER_HEADER, "[data-testid=figure][data-kind=classification]")
            shot(page, "dashboard-figures.png", full=False)
            page.locator("[data-testid=figure][data-kind=sweep]").first.wait_for()
            page.evaluate(UNDER_HEADER, "[data-testid=figure][data-kind=sweep]")
            shot(page, "dashboard-sweep.png", full=False)
            page.goto(f"{url}/#/run/{cand}?suite=answers&q=ans.budget")
            page.locator("[data-testid=suites]").wait_for()
            page.locator("[data-testid=cases] tbody tr[data-case='ans.budget']").nth(3).click()
            page.locator("[data-testid=case-title]").wait_for()
            page.evaluate(UNDER_HEADER, "[data-testid=case-detail]")  # the case list and its drill-down
            shot(page, "dashboard-case.png", full=False)
            page.goto(f"{url}/#/compare?base={base}&candidate={cand}&suite=answers&filter=regressed&case=ans.budget&arm=sonnet")
            page.locator("[data-testid=diff-candidate]").wait_for()
            page.evaluate("window.scrollTo(0, document.getElementById('pairs').offsetTop - 60)")
            shot(page, "dashboard-compare.png", full=False)
            page.goto(f"{url}/#/run/{cand}?gsuite=answers&by=arm")
            page.locator("[data-testid=grid-card] h2", has_text="Cases × arms").wait_for()
            page.evaluate("window.scrollTo(0, document.getElementById('grid').offsetTop - 60)")
            shot(page, "dashboard-matrix.png", full=False)
            page.goto(f"{url}/#/run/{cand}?gsuite=answers&by=attempt&garm=opus")
            page.locator("[data-testid=grid-card] h2", has_text="attempts (arm opus)").wait_for()
            page.evaluate("window.scrollTo(0, document.getElementById('grid').offsetTop - 60)")
            shot(page, "dashboard-repeats.png", full=False)
            page.goto(report.resolve().as_uri())
            page.locator("h1").wait_for()
            shot(page, "report-html.png", full=False)
            page.locator("#pairs button[data-view=regressed]").click()
            page.locator("#pairs details.pair").first.locator("summary").click()
            page.evaluate("window.scrollTo(0, document.getElementById('pairs').offsetTop - 10)")
            shot(page, "report-html-pairs.png", full=False)
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    print("wrote " + ", ".join(f"docs/{n}" for n in written), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
