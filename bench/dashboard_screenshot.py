"""Regenerate every screenshot in docs/ from seeded runs, with one command.

    python bench/dashboard_screenshot.py

Seeds 12 runs (bench/seed_runs.py) into bench/.work/shot/ and two newer runs that also hold
an `answers` suite (three arms, text answers, three attempts in the newest) and a `triage`
suite with a stored policy sweep (`evalh.core.analysis.sweep.suite_sweep`, as `evalh run` keeps it), marks one
BASELINE, serves them with the dashboard, and saves with headless Chromium (Debian's
/usr/bin/chromium, via Playwright) at 1280 px:

- docs/dashboard.png: trends and history
- docs/dashboard-run.png: one run (suites table and case list)
- docs/dashboard-figures.png: the figures a suite holds (per-lens classification with the
  dead lens as worst, judging counts, pairwise consistency under order swap)
- docs/dashboard-case.png: the drill-down of one case
- docs/dashboard-compare.png: two runs compared, a regressed case side by side with its diff
- docs/dashboard-matrix.png: the cases x arms grid
- docs/dashboard-repeats.png: the cases x attempts grid with flakiness classes
- docs/dashboard-sweep.png: a policy sweep's ranking (a `triage` suite whose run keeps the
  ranking of its configured threshold sweep: the winner, within noise of the runner-up,
  beats the current policy beyond noise)
- docs/report-html.png: the first screen of the HTML report of the two newest runs
- docs/report-html-pairs.png: that report's cases side by side, a regressed one opened
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs"
WORK = HERE / ".work" / "shot"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARMS = ("haiku", "sonnet", "opus")
UNDER_HEADER = """(sel) => window.scrollTo(0, document.querySelector(sel).getBoundingClientRect().top + window.scrollY
    - document.querySelector('header.top').getBoundingClientRect().height - 8)"""
"""Scroll so the element starts just under the sticky header (what was above it hidden)."""
QUESTIONS = [
    ("ans.budget", "How much did the 2025 budget allocate to housing?",
     "The 2025 budget allocated $2.4B to housing, mostly for social rentals [1].",
     "The 2025 budget allocated $3.1B to housing, including a tax credit [1]."),
    ("ans.minister", "Who introduced the rent cap bill?",
     "The housing minister, Ana Ruiz, introduced the bill in March [2].",
     "The housing minister, Ana Ruiz, introduced the bill in March [2]."),
    ("ans.vote", "How did the chamber vote?",
     "It passed 212 to 140, with 8 abstentions [3].",
     "It passed narrowly; the exact count is not in the sources."),
    ("ans.date", "When does the cap take effect?",
     "The cap takes effect on 1 January 2026 [4].",
     "The cap takes effect on 1 January 2026, for new leases only [4]."),
    ("ans.scope", "Which cities are covered?",
     "Cities above 100,000 inhabitants [5].",
     "All cities above 100,000 inhabitants, and their suburbs [5]."),
]


def answers_suite(k: int, repeats: int):  # type: ignore[no-untyped-def]
    from seed_runs import _suite

    from evalh.models import CaseResult, Score

    rng = random.Random(100 + k)
    out = []
    for i, (cid, q, old, new) in enumerate(QUESTIONS):
        for j, arm in enumerate(ARMS):
            for a in range(repeats):
                text = (old if k == 0 else new) if arm != "haiku" or i % 2 else old
                ok = not (k == 1 and cid in ("ans.budget", "ans.vote") and arm != "haiku") and not (a == 1 and (i + j) % 3 == 0)
                tin, tout = rng.randint(900, 2400), rng.randint(60, 240)
                out.append(CaseResult(
                    case_id=cid, case_digest=f"{i:064x}", arm=arm, attempt=a, status="passed" if ok else "failed",
                    score=1.0 if ok else round(rng.uniform(0.1, 0.5), 2), input={"question": q}, output=text,
                    expected=old,
                    scores=[Score(scorer="facts", value=1.0 if ok else 0.3, passed=ok,
                                  verdict="supported" if ok else "unsupported", judge_model="claude-haiku-4-5",
                                  rationale="every figure matches the cited source" if ok else "the figure differs from source [1]")],
                    metadata={"split": "heldout"}, latency_ms=round(rng.lognormvariate(7.0 + 0.3 * j, 0.3), 1),
                    tokens_in=tin, tokens_out=tout, cost_usd=round(tin * 1e-6 + tout * 5e-6, 6),
                ))
    suite = _suite(out, "stochastic", "datasets/answers.jsonl")
    from evalh.core.results.aggregate import aggregate

    suite.arms = {a: aggregate([r for r in out if r.arm == a]) for a in ARMS}
    suite.baseline_arm = "haiku"
    suite.details = figures_details(rng) if k else {}
    return suite


def figures_details(rng: random.Random) -> dict:  # type: ignore[type-arg]
    """What the classification scorer, a double judge and a pairwise judge leave in a
    suite's details (a refuter panel whose provenance lens errored on every call)."""
    from evalh.core.analysis.classify import confusion_report
    from evalh.models import Score
    from evalh.scorers.judge_base import judge_counts

    obs = []
    for i in range(40):
        positive = i < 16
        for lens in ("dates", "figures", "quotes", "scope"):
            hit = rng.random() < (0.9 if lens != "quotes" else 0.7)
            obs.append((lens, ("tp" if hit else "fn") if positive else ("tn" if rng.random() < 0.95 else "fp"), positive))
        obs.append(("provenance", "errored", positive))
    scores = [Score(scorer="facts", value=1.0, passed=True, verdict="supported", details={"low_confidence": i % 7 == 0})
              for i in range(45)]
    pair = {"baseline_arm": "haiku", "pairs_judged": 30, "consistent": 21, "inconsistent": 9, "judge_error": 0,
            "consistency_under_order_swap": 0.7, "position_bias_flag": True, "min_consistency": 0.8,
            "arms": {"sonnet": {"win": 6, "loss": 4, "tie": 2, "inconsistent": 3, "judge_error": 0, "decided": 12},
                     "opus": {"win": 4, "loss": 3, "tie": 2, "inconsistent": 6, "judge_error": 0, "decided": 9}}}
    return {"refuters": confusion_report(obs), "facts": judge_counts(scores), "preference": pair}


def triage_suite(k: int):  # type: ignore[no-untyped-def]
    """80 cases a risk judge scored, each with a policy-free `harmful` label, and the ranking
    of the threshold sweep the run keeps (`[suites.triage.sweep]`, current threshold 0.5)."""
    from seed_runs import _suite

    from evalh.config import SuiteConfig
    from evalh.core.analysis.sweep import SweepConfig, suite_sweep
    from evalh.models import CaseResult, Score

    rng = random.Random(40 + k)
    out = []
    for i in range(80):
        harmful = i % 3 == 0
        if harmful:
            x = rng.uniform(0.62, 0.98) if rng.random() < 0.9 else rng.uniform(0.3, 0.6)
        else:
            x = rng.uniform(0.5, 0.66) if rng.random() < 0.3 else rng.uniform(0.02, 0.5)
        x = round(x, 2)
        ok = (x >= 0.5) == harmful
        out.append(CaseResult(
            case_id=f"triage.{i:02d}", case_digest=f"{i + 500:064x}", status="passed" if ok else "failed",
            score=1.0 if ok else 0.0, input={"message": f"message {i}"}, output={"risk": x},
            expected={"harmful": harmful}, scores=[Score(scorer="risk", value=x, passed=ok)],
            metadata={"split": "heldout"}, latency_ms=round(rng.lognormvariate(5.5, 0.3), 1)))
    suite = _suite(out, "stochastic", "datasets/triage.jsonl")
    spec = SweepConfig(measure="scorer:risk", label="harmful", positive=True, grid={"threshold": "0.3:0.8:0.05"},
                       current={"threshold": 0.5})
    suite.sweep = suite_sweep("triage", SuiteConfig.model_construct(sweep=spec), out, None)
    return suite


def seed_all(root: Path) -> list:  # type: ignore[type-arg]
    from seed_runs import gate, live, seed

    from evalh.store import RunStore

    runs = seed(root, runs=12)
    rng = random.Random(11)
    last = runs[-1]
    store = RunStore(root / "eval_runs")
    for k in (0, 1):
        run = last.model_copy(update={
            "run_id": f"20261004T{12 + 6 * k:02d}0000000Z-{100 + k:06x}",
            "label": "prompt v5" if k else "prompt v4.1",
            "started_at": f"2026-10-04T{12 + 6 * k:02d}:00:00Z",
            "finished_at": f"2026-10-04T{12 + 6 * k:02d}:04:00Z",
            "suites": {"gate": gate(rng, 40, {5, 11} if k else {11}), "live": live(rng, 0.8 - 0.05 * k),
                       "answers": answers_suite(k, 3 if k else 1), "triage": triage_suite(k)},
        })
        store.write(run)
        runs.append(run)
    return runs


def main() -> int:
    sys.path.insert(0, str(HERE))
    from playwright.sync_api import sync_playwright

    from evalh.baseline import write_baseline
    from evalh.report import build_report, to_html
    from evalh.ui.server import make_server

    shutil.rmtree(WORK, ignore_errors=True)
    runs = seed_all(WORK)
    write_baseline(WORK, runs[4].run_id)
    os.chdir(WORK)  # the page shows the runs directory as given: keep this machine's paths out
    report = WORK / "report.html"
    from evalh.report.build import versus_baseline
    from evalh.report.pairs import case_pairs
    from evalh.store import RunStore

    report.write_text(to_html(build_report(runs[-2:], baseline=versus_baseline(runs[-2:], Path("."), RunStore(Path("eval_runs")))),
                              pairs=case_pairs(runs[-2], runs[-1])), encoding="utf-8")
    server = make_server(Path("eval_runs"), Path("."), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    base, cand = runs[-2].run_id, runs[-1].run_id
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
            page.locator("[data-testid=grid-card] h2").wait_for()
            shot(page, "dashboard-run.png", full=False)
            page.locator("[data-testid=figure][data-kind=judge]").first.wait_for()
            page.evaluate(UNDER_HEADER, "[data-testid=figure][data-kind=judge]")
            shot(page, "dashboard-figures.png", full=False)
            page.locator("[data-testid=figure][data-kind=sweep]").first.wait_for()
            page.evaluate(UNDER_HEADER, "[data-testid=figure][data-kind=sweep]")
            shot(page, "dashboard-sweep.png", full=False)
            page.goto(f"{url}/#/run/{runs[-1].run_id}?suite=live&q=live.q15")
            page.locator("[data-testid=suites]").wait_for()
            page.locator("[data-testid=cases] tbody tr[data-case='live.q15']").first.click()
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
