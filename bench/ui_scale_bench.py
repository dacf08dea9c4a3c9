"""The dashboard at scale: the history of 1,000 runs, and two 10,000-case runs compared.

    python bench/ui_scale_bench.py [--trials 3] [--out bench/ui_scale_results.md]

Seeds (once) bench/.work/scale/history/ with 1,000 runs (a 40-case `gate` suite and a
10-case, 2-attempt `live` suite each, from bench/seed_runs.py) and bench/.work/scale/pair/
with two runs whose `gate` suite has 10,000 cases (40 of them regressed). For each trial it
starts a fresh `evalh ui` (cold caches) and measures in headless Chromium (Debian's
/usr/bin/chromium, via Playwright) the time from navigation to the page showing its data:

- the history page: the first 100 of 1,000 rows and the trend charts drawn; then a filter
  by label applied;
- the compare page of the two 10,000-case runs: the verdict, then the case-by-case list
  (regressions first), then one regressed case opened side by side with its diff.

Writes the medians as markdown (and prints them). Numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work" / "scale"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
RUNS, BIG = 1000, 10_000


def seed() -> None:
    sys.path.insert(0, str(HERE))
    from seed_runs import ENV, START, gate, live

    from evalh.models import GitInfo, Run
    from evalh.store import RunStore

    hist = RunStore(WORK / "history" / "eval_runs")
    if len(hist.list_ids()) != RUNS:
        rng = random.Random(3)
        for k in range(RUNS):
            when = START + timedelta(hours=2 * k)
            hist.write(Run(
                run_id=f"{when:%Y%m%dT%H%M%S}000Z-{k:06x}", label=f"nightly {k // 7}" if k % 7 == 0 else None,
                status="complete", started_at=when.isoformat().replace("+00:00", "Z"),
                finished_at=(when + timedelta(minutes=3)).isoformat().replace("+00:00", "Z"),
                git=GitInfo(sha=f"{rng.getrandbits(160):040x}", dirty=False, branch="main" if k % 5 else "feature"),
                environment=ENV, suites={"gate": gate(rng, 40, {3} if k % 11 == 0 else set()),
                                         "live": live(rng, 0.6, n=10, repeats=2)}))
    pair = RunStore(WORK / "pair" / "eval_runs")
    if len(pair.list_ids()) != 2:
        for k in (0, 1):
            rng = random.Random(5)  # the same cases on both sides
            when = START + timedelta(days=1 + k)
            broken = set(range(0, BIG, BIG // 40)) if k else set()
            pair.write(Run(
                run_id=f"{when:%Y%m%dT%H%M%S}000Z-{k:06x}", label=f"big {k}", status="complete",
                started_at=when.isoformat().replace("+00:00", "Z"), finished_at=when.isoformat().replace("+00:00", "Z"),
                git=GitInfo(sha="ab" * 20, dirty=False, branch="main"), environment=ENV,
                suites={"gate": gate(rng, BIG, broken)}))


def ready(page: Any, action: Any, condition: str) -> float:
    t0 = time.perf_counter()
    action()
    page.wait_for_function(condition, timeout=60_000)
    return (time.perf_counter() - t0) * 1000


HISTORY = ("() => document.querySelectorAll('[data-testid=history] tbody tr').length === 100"
           " && !!document.querySelector('[data-testid=chart-pass_rate] polyline')")
FILTERED = "() => (document.querySelector('[data-testid=history-title]') || {}).textContent === 'History (143 of 1000 runs, newest first)'"
VERDICT = "() => !!document.querySelector('[data-testid=verdict]')"
PAIRS = "() => document.querySelectorAll('[data-testid=pairs] tbody tr').length === 40"
DIFF = "() => !!document.querySelector('[data-testid=diff-candidate] ins')"


def serve(name: str) -> tuple[Any, str]:
    import threading

    from evalh.ui.server import make_server

    root = WORK / name
    server = make_server(root / "eval_runs", root, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def history_trial(browser: Any) -> dict[str, float]:
    server, url = serve("history")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        return {
            "history of 1,000 runs, cold server: navigate → 100 rows + charts": ready(page, lambda: page.goto(url + "/"), HISTORY),
            "history of 1,000 runs, warm: reload → 100 rows + charts": ready(page, page.reload, HISTORY),
            "history: filter by label → 143 runs": ready(
                page, lambda: page.locator("input[data-filter=label]").fill("nightly"), FILTERED) - 150,  # the debounce
        }
    finally:
        page.close()
        server.shutdown()
        server.server_close()


def pair_trial(browser: Any) -> dict[str, float]:
    server, url = serve("pair")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    ids = sorted(p.stem for p in (WORK / "pair" / "eval_runs").glob("*.json"))
    target = f"{url}/#/compare?base={ids[0]}&candidate={ids[1]}&suite=gate"
    try:
        out = {"two 10,000-case runs, cold server: navigate → verdict": ready(page, lambda: page.goto(target), VERDICT)}
        page.wait_for_function(PAIRS, timeout=60_000)
        out["two 10,000-case runs, warm: reload → verdict"] = ready(page, page.reload, VERDICT)
        out["two 10,000-case runs, warm: reload → 40 regressed cases listed"] = ready(page, page.reload, PAIRS)
        out["two 10,000-case runs: open a regressed case → side by side with its diff"] = ready(
            page, lambda: page.locator("[data-testid=pairs] tbody tr").first.click(), DIFF)
        return out
    finally:
        page.close()
        server.shutdown()
        server.server_close()


def trial(browser: Any) -> dict[str, float]:
    return {**history_trial(browser), **pair_trial(browser)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "ui_scale_results.md")
    args = ap.parse_args()
    t0 = time.perf_counter()
    seed()
    seeded = time.perf_counter() - t0
    from playwright.sync_api import sync_playwright

    load = os.getloadavg()[0]
    results: dict[str, list[float]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for _ in range(args.trials):
            for k, v in trial(browser).items():
                results.setdefault(k, []).append(v)
        version = browser.version
        browser.close()
    size = sum(p.stat().st_size for p in (WORK / "history" / "eval_runs").glob("*.json")) / 1e6
    big = max(p.stat().st_size for p in (WORK / "pair" / "eval_runs").glob("*.json")) / 1e6
    lines = ["# Dashboard at scale", "", f"Command: `python bench/ui_scale_bench.py --trials {args.trials}`", "",
             f"History: {RUNS} runs ({size:.0f} MB). Compare: two runs of {BIG:,} cases ({big:.1f} MB each), 40 regressed. "
             f"Machine: {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, Python {platform.python_version()}, "
             f"Chromium {version} headless, load average {load:.1f} before the trials (other work shares the machine). "
             f"Each trial starts a fresh server in this process (cold caches). Median of the trials, milliseconds "
             f"(seeding, once: {seeded:.0f} s).", "",
             "| measurement | median ms | min | max |", "| --- | ---: | ---: | ---: |"]
    for k, v in results.items():
        lines.append(f"| {k} | {statistics.median(v):.0f} | {min(v):.0f} | {max(v):.0f} |")
    text = "\n".join(lines) + "\n"
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
