"""Dashboard speed on a large runs directory: 200 runs, the newest with 10,000 cases.

    python bench/ui_bench.py [--trials 3] [--out bench/ui_results.md]

Seeds bench/.work/ui/ with bench/seed_runs.py (once), then for each trial starts a fresh
`evalh ui` process (cold caches) and measures:

- HTTP time to first byte and to the last byte of the endpoints the pages call, cold
  (first request after start) and warm;
- in headless Chromium (Debian's /usr/bin/chromium driven by Playwright), the time from
  navigation to the page showing its data: the history page with 200 rows and its trend
  charts, and the drill-down of the 10,000-case run with its first page of cases; then
  opening one case's detail and filtering the case list.

Writes the medians as markdown (and prints them). Numbers depend on the machine; the
command is the point.
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work" / "ui"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
RUNS, BIG = 200, 10_000


def seed() -> None:
    runs_dir = WORK / "eval_runs"
    if runs_dir.is_dir() and len(list(runs_dir.glob("*.json"))) == RUNS:
        return
    sys.path.insert(0, str(HERE))
    from seed_runs import seed as write

    write(WORK, RUNS, BIG)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalh.cli.main", "ui", "--port", str(port), "--runs-dir", str(WORK / "eval_runs")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("evalh ui did not start")


def fetch(client: httpx.Client, url: str) -> tuple[float, float]:
    """(time to first byte, time to last byte) in ms."""
    t0 = time.perf_counter()
    with client.stream("GET", url) as r:
        ttfb = time.perf_counter() - t0
        r.read()
        assert r.status_code == 200, (url, r.status_code)
    return ttfb * 1000, (time.perf_counter() - t0) * 1000


def timed(page: Any, action: Any, condition: str) -> float:
    t0 = time.perf_counter()
    action()
    page.wait_for_function(condition, timeout=30_000)
    return (time.perf_counter() - t0) * 1000


HISTORY_READY = (f"() => document.querySelectorAll('[data-testid=history] tbody tr').length === {RUNS}"
                 " && document.querySelectorAll('[data-testid=chart-pass_rate] circle.pt').length > 0")
CASES_READY = "() => document.querySelectorAll('[data-testid=cases] tbody tr').length === 100"
DETAIL_READY = "() => !!document.querySelector('[data-testid=case-title]')"
FILTERED = "() => (document.querySelector('[data-testid=pager]') || {}).textContent === '1–1 of 1'"


def trial(browser: Any, big: str) -> dict[str, float]:
    out: dict[str, float] = {}
    proc, url = start()
    try:
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        out["history page, cold server: navigate → 200 rows + charts"] = timed(
            page, lambda: page.goto(url + "/"), HISTORY_READY)
        out["history page, warm: reload → 200 rows + charts"] = timed(page, lambda: page.reload(), HISTORY_READY)
        out["10k-case run, cold: navigate → first 100 cases"] = timed(
            page, lambda: page.goto(f"{url}/#/run/{big}?suite=gate"), CASES_READY)
        out["10k-case run, warm: reload → first 100 cases"] = timed(page, lambda: page.reload(), CASES_READY)
        out["10k-case run: click a case → its drill-down"] = timed(
            page, lambda: page.locator("[data-testid=cases] tbody tr").nth(7).click(), DETAIL_READY)
        out["10k-case run: filter by id → 1 match"] = timed(
            page, lambda: page.fill("input[type=search]", "money.1249."), FILTERED) - 200  # minus the 200 ms debounce
        page.close()
    finally:
        proc.terminate()
        proc.wait(10)

    proc, url = start()
    try:
        with httpx.Client(timeout=60) as client:
            for name, path in (("/api/runs (200 summaries)", "/api/runs"), ("/api/trends", "/api/trends"),
                               ("/api/runs/{10k run}", f"/api/runs/{big}"),
                               ("/api/runs/{10k run}/cases?limit=100", f"/api/runs/{big}/cases?suite=gate&limit=100"),
                               ("/api/runs/{10k run}/report", f"/api/runs/{big}/report"),
                               ("/api/runs/{10k run}/case?i=9999", f"/api/runs/{big}/case?suite=gate&i=9999")):
                for state in ("cold", "warm"):
                    ttfb, total = fetch(client, url + path)
                    out[f"HTTP {name}, {state}: first byte"] = ttfb
                    out[f"HTTP {name}, {state}: last byte"] = total
    finally:
        proc.terminate()
        proc.wait(10)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "ui_results.md")
    args = ap.parse_args()
    seed()
    from playwright.sync_api import sync_playwright

    from evalh.store import RunStore

    big = RunStore(WORK / "eval_runs").list_ids()[-1]
    size = (WORK / "eval_runs" / f"{big}.json").stat().st_size
    total = sum(p.stat().st_size for p in (WORK / "eval_runs").glob("*.json"))
    results: list[dict[str, float]] = []
    load_before = os.getloadavg()[0]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        version = browser.version
        for _ in range(args.trials):
            results.append(trial(browser, big))
        browser.close()
    lines = [
        "# Dashboard benchmark",
        "",
        f"Command: `python bench/ui_bench.py --trials {args.trials}`",
        "",
        f"Runs directory: {RUNS} runs ({total / 1e6:.0f} MB); the newest has {BIG:,} cases in one suite "
        f"({size / 1e6:.1f} MB). Machine: {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}, Chromium {version} headless, load average "
        f"{load_before:.1f} before and {os.getloadavg()[0]:.1f} after the trials (other work shares the "
        "machine: numbers scale with it). Each trial starts a fresh "
        "`evalh ui` process (cold caches). Median of the trials, milliseconds.",
        "",
        "| measurement | median ms | min | max |",
        "| --- | ---: | ---: | ---: |",
    ]
    for key in results[0]:
        xs = [r[key] for r in results]
        lines.append(f"| {key} | {statistics.median(xs):.0f} | {min(xs):.0f} | {max(xs):.0f} |")
    lines += ["", "Cold means the server had not read the runs yet. `evalh ui` starts reading the 200 "
              "summaries in the background as soon as it starts; a history request that comes sooner "
              "waits for that read (the page was opened the moment the port accepted connections). The "
              "first request for the 10,000-case run parses its document and lists its cases without "
              "validating them; its report (validation and `build_report`) is a separate request the "
              "page makes after drawing the first page of cases. Later requests are served from the "
              "in-memory index (summaries cached by path, mtime and size; whole runs in a small LRU).", ""]
    text = "\n".join(lines)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
