"""Figures of real runs as a person sees them in a headless Chromium (Debian's `chromium`,
driven by Playwright): the dashboard's run page opens with its verdict against the
BASELINE, its compare page prints the family's chance as `evalh compare` does (`2.5 %`,
never `2.500000000000002 %`) and names its counts so a filter never contradicts them, and
the HTML report opens with the verdict, draws an arms matrix and a legend whose series
differ. The runs are made by `evalh run` (`tests.real_runs`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.real_runs import cli, jsonl, run_project, write_project

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.browser
if not CHROMIUM.exists():
    pytest.skip("needs Debian's chromium at /usr/bin/chromium", allow_module_level=True)

TARGET = '''\
import os


def answer(inp):
    wrong = os.environ.get("REGRESS") == "1" and inp["n"] < 12
    return {"verdict": "no" if wrong else "yes"}
'''

TOML = '''\
[suites.qa]
dataset = "d.jsonl"
target = "qa:answer"
regime = "stochastic"
max_error_rate = 1.0
scorers = [{ type = "exact", field = "verdict" }]
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    root = tmp_path_factory.mktemp("browser")
    cfg = write_project(root, TOML, {"d.jsonl": jsonl([{"id": f"q{n:02d}", "input": {"n": n}, "expected": "yes"}
                                                       for n in range(40)]), "qa.py": TARGET})
    base = run_project(cfg, "--label", "v1")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REGRESS", "1")
        cand = run_project(cfg, "--label", "v2")
    assert cli(cfg, "baseline", "set", base).exit_code == 0
    yield cfg, base, cand


@pytest.fixture(scope="module")
def browser(url: str, html: tuple[Path, str]) -> Iterator[Any]:
    """Started after the runs are made: Playwright's sync API holds an event loop, and
    `evalh run` starts its own."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def url(project: tuple[Path, str, str]) -> Iterator[str]:
    import threading

    from evalh.ui.server import make_server

    root = project[0].parent
    server = make_server(root / "eval_runs", root, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_the_run_page_opens_with_its_verdict_against_the_baseline(browser: Any, url: str,
                                                                  project: tuple[Path, str, str]) -> None:
    _, base, cand = project
    page = browser.new_page()
    page.goto(f"{url}/#/run/{cand}")
    verdict = page.locator("[data-testid=run-verdict] div").first
    verdict.wait_for()
    text = verdict.inner_text()
    assert f"run {cand} vs baseline {base}: regressed; gate FAIL" in text
    app = page.locator("#app").inner_text()
    assert app.index("vs baseline") < app.index("Suites")
    page.close()


def test_the_compare_page_formats_the_family_chance_and_names_its_counts(browser: Any, url: str,
                                                                        project: tuple[Path, str, str]) -> None:
    _, base, cand = project
    page = browser.new_page()
    page.goto(f"{url}/#/compare?base={base}&candidate={cand}")
    page.locator("[data-testid=pairs-card] button[data-filter=changed]").wait_for()
    text = page.locator("#app").inner_text()
    assert "is at most 2.5 %" in text and "2.50000" not in text
    assert "0 with changed content (not compared)" in text and "0 changed ·" not in text
    button = page.locator("[data-testid=pairs-card] button[data-filter=changed]").inner_text()
    assert button == "any change 12"
    page.close()



def test_the_compare_page_shows_coverage_and_each_rows_estimand(browser: Any, url: str,
                                                                project: tuple[Path, str, str]) -> None:
    """What share of the baseline's results the candidate measured, and what each row's
    interval is of, as `evalh compare --format json` says them for the same runs."""
    import json

    cfg, base, cand = project
    result = cli(cfg, "compare", base, cand, "--format", "json")
    suite = json.loads(result.stdout)["suites"]["qa"]
    c = suite["coverage"]
    estimands = {m["estimand"] for m in suite["metrics"] if m.get("estimand")}
    assert c["of"] == 40 and estimands == {"fixed-suite", "population"}
    page = browser.new_page()
    page.goto(f"{url}/#/compare?base={base}&candidate={cand}")
    page.locator("[data-testid=pairs-card] button[data-filter=changed]").wait_for()
    text = page.locator("#app").inner_text()
    share = f"{c['share'] * 100:.1f}"
    assert f"coverage {c['measured']}/{c['of']} ({share} %, minimum {c['minimum'] * 100:.0f} %)" in text, text
    for estimand in estimands:
        assert f"estimand: {estimand}" in text
    page.close()

ARMS_TARGET = '''\
def good(inp):
    return {"verdict": "yes"}


def half(inp):
    return {"verdict": "yes" if inp["n"] % 2 else "no"}


def bad(inp):
    return {"verdict": "no" if inp["n"] < 3 else "yes"}
'''

ARMS_TOML = '''\
[suites.qa]
dataset = "d.jsonl"
regime = "stochastic"
max_error_rate = 1.0
scorers = [{ type = "exact", field = "verdict" }]
arms = [{ name = "gpt", target = "arms:good" }, { name = "gpt-bad", target = "arms:bad" }, { name = "claude", target = "arms:half" }]
'''


@pytest.fixture(scope="module")
def html(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The HTML report of the second of two runs of a suite with three arms, against the
    first as BASELINE."""
    from tests.real_runs import report

    root = tmp_path_factory.mktemp("arms")
    cfg = write_project(root, ARMS_TOML, {"d.jsonl": jsonl([{"id": f"a{n}", "input": {"n": n}, "expected": "yes"}
                                                            for n in range(8)]), "arms.py": ARMS_TARGET})
    first = run_project(cfg)
    second = run_project(cfg)
    assert cli(cfg, "baseline", "set", first).exit_code == 0
    result = cli(cfg, "report", first, second, "--format", "html")
    assert result.exit_code == 0, result.output
    path = root / "report.html"
    path.write_text(result.stdout, encoding="utf-8")
    return path, report(cfg, second, "html")


def test_the_html_report_opens_with_the_verdict(html: tuple[Path, str]) -> None:
    text = html[1]
    summary = text[text.index('id="summary"'):]
    assert summary.index('data-testid="verdict"') < summary.index('data-testid="summary"')
    assert "vs baseline" in summary[:summary.index('data-testid="summary"')]


def test_the_html_report_draws_the_arms_matrix(html: tuple[Path, str]) -> None:
    text = html[1]
    assert 'data-testid="arms-matrix"' in text and "Cases × arms · qa" in text
    matrix = text[text.index('data-testid="arms-matrix"'):]
    matrix = matrix[:matrix.index("</section>")]
    assert matrix.index("<td class=\"id\">a0</td>") < matrix.index("<td class=\"id\">a7</td>")  # disagreement first
    assert matrix.count('data-col="gpt-bad" data-status="failed"') == 3


def test_the_html_legend_tells_every_arm_apart(browser: Any, html: tuple[Path, str]) -> None:
    page = browser.new_page()
    page.goto(html[0].resolve().as_uri())
    items = page.locator("[data-testid=trend-legend] li")
    items.first.wait_for()
    seen = [(items.nth(i).inner_text(), items.nth(i).get_attribute("data-shape"), items.nth(i).get_attribute("data-dash"))
            for i in range(items.count())]
    assert [s[0] for s in seen] == ["qa · gpt", "qa · gpt-bad", "qa · claude"]
    assert len({(s[1], s[2]) for s in seen}) == 3  # three series, three looks
    swatches = [items.nth(i).locator("path").get_attribute("d") for i in range(items.count())]
    assert len(set(swatches)) == 3
    page.close()
