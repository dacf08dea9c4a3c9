"""The dashboard and the HTML report in a real headless Chromium (Debian's `chromium`
package, driven by Playwright's Python package; never a downloaded browser).

The dashboard loads without console errors, its trend chart has one point per run,
clicking a case opens its drill-down, the compare view names the regressed case, and a
hostile output is shown as text and runs no script. The HTML report opens from file://
without a single network request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalh.baseline import write_baseline
from evalh.report import build_report, to_html
from evalh.ui.server import make_server
from tests.report_factory import HOSTILE_IMG, HOSTILE_SCRIPT, make_run, res, series, suite

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.browser
if not CHROMIUM.exists():
    pytest.skip("needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; .ci/run does)",
                allow_module_level=True)

OUTCOMES = [
    {"a": "passed", "b": "passed", "c": "failed"},
    {"a": "passed", "b": "failed", "c": "failed"},
    {"a": "passed", "b": "passed", "c": "passed"},
    {"a": "failed", "b": "passed", "c": "passed"},
]
PWNED = "() => [window.__evalh_pwned, window.__evalh_pwned_script]"


def serve(runs_dir: Path, root: Path) -> tuple[str, Callable[[], None]]:
    """The dashboard over `runs_dir` on a free loopback port: its URL, and how to stop it."""
    server = make_server(runs_dir, root, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(5)

    return f"http://127.0.0.1:{server.server_address[1]}", stop


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    root = tmp_path_factory.mktemp("site")
    runs = series(root / "eval_runs", OUTCOMES, hostile_in=1)
    write_baseline(root, runs[0].run_id)
    url, stop = serve(root / "eval_runs", root)
    try:
        yield url, [r.run_id for r in runs]
    finally:
        stop()


class Page:
    """A fresh page that records console errors, page errors and every request."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1300, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    p = Page(browser)
    yield p
    p.close()


def test_dashboard_loads_clean_with_one_trend_point_per_run(page: Page, site: tuple[str, list[str]]) -> None:
    url, ids = site
    page.page.goto(url + "/")
    points = page.page.locator("[data-testid=chart-pass_rate] .pt")
    points.first.wait_for()
    assert points.count() == len(ids)
    assert [points.nth(i).get_attribute("data-run") for i in range(len(ids))] == ids
    rows = page.page.locator("[data-testid=history] tbody tr")
    assert rows.count() == len(ids)
    assert rows.first.get_attribute("data-run") == ids[-1]  # newest first
    assert "66.7% (2/3)" in rows.last.inner_text()
    assert "BASELINE" in rows.last.inner_text() and "BASELINE" not in rows.first.inner_text()
    assert page.errors == []
    assert all(u.startswith(url) for u in page.requests), page.requests


def test_clicking_a_trend_point_and_a_case_opens_its_drill_down(page: Page, site: tuple[str, list[str]]) -> None:
    url, ids = site
    page.page.goto(url + "/")
    page.page.locator(f"[data-testid=chart-pass_rate] .pt[data-run='{ids[0]}']").click()
    page.page.locator("[data-testid=cases] tbody tr[data-case='c']").click()
    title = page.page.locator("[data-testid=case-title]")
    title.wait_for()
    assert title.inner_text() == "c"
    detail = page.page.locator("[data-testid=case-detail]").inner_text()
    assert "failed" in detail and "Input" in detail and "Scores" in detail
    assert page.page.locator("[data-testid=case-output]").inner_text() == '{\n  "verdict": "failed"\n}'
    assert ids[0] in page.page.url and "i=2" in page.page.url
    assert page.errors == []


def test_case_list_filters_by_status(page: Page, site: tuple[str, list[str]]) -> None:
    url, ids = site
    page.page.goto(f"{url}/#/run/{ids[1]}")
    page.page.locator("button[data-status=failed]").click()
    page.page.wait_for_function(
        "() => document.querySelector('[data-testid=pager]').textContent.endsWith('of 3')")
    cases = page.page.locator("[data-testid=cases] tbody tr")
    assert sorted(cases.nth(i).get_attribute("data-case") for i in range(cases.count())) == ["b", "c", "hostile.case"]
    assert page.errors == []


def test_compare_view_names_the_regressed_case(page: Page, site: tuple[str, list[str]]) -> None:
    url, ids = site
    page.page.goto(f"{url}/#/compare?base={ids[2]}&candidate={ids[3]}")
    regressed = page.page.locator("[data-testid=regressed-cases]")
    regressed.wait_for()
    assert regressed.locator("li").count() == 1
    assert regressed.inner_text().startswith("a")
    assert "passed → failed" in regressed.inner_text()
    assert page.page.locator("[data-testid=verdict]").inner_text() == "regressed"
    assert page.errors == []


def test_hostile_output_is_shown_as_text_and_runs_no_script(page: Page, site: tuple[str, list[str]]) -> None:
    url, ids = site
    page.page.goto(url + "/")
    page.page.locator("[data-testid=history]").wait_for()
    assert HOSTILE_IMG in page.page.locator("[data-testid=history]").inner_text()  # the label
    page.page.goto(f"{url}/#/run/{ids[1]}?q=hostile")
    page.page.locator("[data-testid=cases] tbody tr[data-case='hostile.case']").click()
    out = page.page.locator("[data-testid=case-output]")
    out.wait_for()
    assert out.inner_text() == HOSTILE_IMG + " " + HOSTILE_SCRIPT
    assert HOSTILE_IMG in page.page.locator("[data-testid=score]").inner_text()  # the rationale
    assert page.page.locator("img").count() == 0
    assert page.page.locator("script").count() == 1  # the dashboard's own
    assert page.page.evaluate(PWNED) == [None, None]
    assert page.errors == []


def test_html_report_opens_offline_from_file_and_escapes_everything(page: Page, tmp_path: Path) -> None:
    hostile = res("hostile.case", "failed", output=HOSTILE_IMG, metadata={"complexity": HOSTILE_SCRIPT},
                  trace=[{"name": HOSTILE_IMG}])
    rs = [hostile] + [res(f"c{i}", "passed" if (i + a) % 3 else "failed", attempt=a,
                          metadata={"complexity": "low" if i % 2 else "high"}, trace=[{"name": "search"}])
                      for i in range(5) for a in range(3)]
    runs = [make_run(f"2026010{k}T000000000Z-00000{k}", {"s": suite(rs, "stochastic")},
                     label=HOSTILE_SCRIPT if k == 2 else f"run {k}", started_at=f"2026-01-0{k}T00:00:00.000Z")
            for k in (1, 2)]
    path = tmp_path / "report.html"
    path.write_text(to_html(build_report(runs, ["complexity"])), encoding="utf-8")
    page.page.goto(path.as_uri())
    page.page.locator("h1").wait_for()
    text = page.page.locator("body").inner_text()
    assert HOSTILE_IMG in text and HOSTILE_SCRIPT in text
    assert "Raw attempts" in text and "pass@k" in text
    assert page.page.locator("img").count() == 0
    assert page.page.evaluate(PWNED) == [None, None]
    assert page.page.evaluate("() => window.evalhReport.runs[1].label") == HOSTILE_SCRIPT
    assert page.page.locator("svg.trend .pt").count() == 2  # pass rate across the two runs
    assert page.requests == [path.as_uri()]  # nothing else: no CDN, no font, no favicon
    assert page.errors == []
    # the sortable tables work offline: sort the worst cases by case id
    header = page.page.locator("table.sortable th", has_text="case").first
    header.click()
    assert header.get_attribute("data-dir") == "asc"



# --------------------------------------------------------------------------- two runs, case by case

ANSWERS = {
    "q.paris": ("The capital of France is Paris.", "The capital of France is Lyon, I think."),
    "q.rome": ("Rome is the capital of Italy.", "Rome is the capital of Italy."),
    "q.tokyo": ("Kyoto.", "Tokyo is the capital of Japan."),
    "q.hostile": ("plain text", HOSTILE_IMG + " " + HOSTILE_SCRIPT),
}
ARMS = ("haiku", "sonnet", "opus")
RICH_RUNS: list[Path] = []


def _rich_runs(runs_dir: Path) -> list[Any]:
    from evalh.models import Score

    runs = []
    for k in (0, 1):
        qa = []
        for cid, outs in ANSWERS.items():
            ok = (cid in ("q.paris", "q.rome")) if k == 0 else (cid in ("q.rome", "q.tokyo"))
            qa.append(res(cid, "passed" if ok else "failed", output=outs[k], tokens=(40 + k, 12), cost_usd=0.001,
                          scores=[Score(scorer="exact", value=1.0 if ok else 0.0, passed=ok,
                                        rationale=("matches" if ok else "does not match") + f" (run {k})"),
                                  Score(scorer="judge", value=0.9 if ok else 0.2, passed=ok, verdict="good" if ok else "bad",
                                        rationale=HOSTILE_IMG if cid == "q.hostile" else f"judge says run {k}")]))
        grid = [res(f"m{i}", "passed" if (i + a + j) % 3 else "failed", arm=arm, attempt=a, tokens=(10 * (j + 1), 5),
                    output=f"answer {i} from {arm} try {a} " + "word " * (60 if i == 0 else 3))
                for i in range(5) for j, arm in enumerate(ARMS) for a in range(3 if k else 1)]
        runs.append(make_run(f"2026020{k + 1}T000000000Z-00000{k}", {"qa": suite(qa), "arms": suite(grid, baseline_arm="haiku")},
                             label=f"rich {k}", started_at=f"2026-02-0{k + 1}T00:00:00.000Z"))
    from tests.report_factory import write_runs

    write_runs(runs_dir, runs)
    return runs


@pytest.fixture(scope="module")
def rich(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    root = tmp_path_factory.mktemp("rich")
    runs = _rich_runs(root / "eval_runs")
    RICH_RUNS[:] = [root / "eval_runs"]
    url, stop = serve(root / "eval_runs", root)
    try:
        yield url, [r.run_id for r in runs]
    finally:
        stop()


OVERFLOW = """() => {
  const bad = [];
  for (const c of document.querySelectorAll('.card')) {
    if (c.scrollWidth > c.clientWidth + 1) bad.push((c.querySelector('h2') || c).textContent.slice(0, 60));
  }
  if (document.documentElement.scrollWidth > window.innerWidth) bad.push('page ' + document.documentElement.scrollWidth);
  return bad;
}"""


def wide(browser: Any) -> Page:
    p = Page(browser)
    p.page.set_viewport_size({"width": 1280, "height": 900})
    return p


def test_compare_side_by_side_shows_both_outputs_and_the_changed_words(browser: Any, rich: tuple[str, list[str]]) -> None:
    url, ids = rich
    p = wide(browser)
    try:
        p.page.goto(f"{url}/#/compare?base={ids[0]}&candidate={ids[1]}&suite=qa")
        rows = p.page.locator("[data-testid=pairs] tbody tr")
        rows.first.wait_for()
        # the default view is what changed; regressed first
        assert rows.first.get_attribute("data-case") == "q.paris"
        assert "regressed" in rows.first.inner_text()
        cases = {rows.nth(i).get_attribute("data-case") for i in range(rows.count())}
        assert "q.rome" not in cases and {"q.paris", "q.tokyo", "q.hostile"} <= cases
        rows.first.click()
        base = p.page.locator("[data-testid=diff-base]")
        base.wait_for()
        assert base.inner_text() == ANSWERS["q.paris"][0]
        assert p.page.locator("[data-testid=diff-candidate]").inner_text() == ANSWERS["q.paris"][1]
        deleted = p.page.locator("[data-testid=diff-base] del").all_inner_texts()
        inserted = p.page.locator("[data-testid=diff-candidate] ins").all_inner_texts()
        assert "".join(deleted).strip() == "Paris"
        assert "Lyon" in "".join(inserted) and "think" in "".join(inserted)
        assert "capital" not in "".join(deleted + inserted)
        scores = p.page.locator("[data-testid=pair-score]").all_inner_texts()
        assert len(scores) == 4  # two scorers, each side
        joined = "\n".join(scores)
        assert "matches (run 0)" in joined and "does not match (run 1)" in joined and "verdict bad" in joined
        assert "41 in / 12 out" in p.page.locator("[data-testid=pair-detail]").inner_text()
        assert "case=q.paris" in p.page.url
        assert p.page.evaluate(OVERFLOW) == []
        assert p.errors == []
    finally:
        p.close()


def test_compare_filters_and_search_over_outputs(browser: Any, rich: tuple[str, list[str]]) -> None:
    url, ids = rich
    p = wide(browser)
    try:
        p.page.goto(f"{url}/#/compare?base={ids[0]}&candidate={ids[1]}&suite=qa")
        p.page.locator("[data-testid=pairs] tbody tr").first.wait_for()
        pager = "[data-testid=pairs-pager]"

        def shown() -> list[str | None]:
            rows = p.page.locator("[data-testid=pairs] tbody tr")
            return sorted(rows.nth(i).get_attribute("data-case") for i in range(rows.count()))

        p.page.locator("button[data-filter=improved]").click()
        p.page.wait_for_function(f"() => document.querySelector('{pager}').textContent.endsWith('of 1')")
        assert shown() == ["q.tokyo"]
        p.page.locator("button[data-filter=all]").click()
        p.page.wait_for_function(f"() => document.querySelector('{pager}').textContent.endsWith('of 4')")
        p.page.locator("[data-testid=pair-search]").fill("lyon")  # words of an output, not of an id
        p.page.wait_for_function(f"() => document.querySelector('{pager}').textContent.endsWith('of 1')")
        assert shown() == ["q.paris"]
        assert p.errors == []
    finally:
        p.close()


def test_compare_shows_hostile_output_and_rationale_as_text(browser: Any, rich: tuple[str, list[str]]) -> None:
    url, ids = rich
    p = wide(browser)
    try:
        p.page.goto(f"{url}/#/compare?base={ids[0]}&candidate={ids[1]}&suite=qa&filter=all&case=q.hostile")
        cand = p.page.locator("[data-testid=diff-candidate]")
        cand.wait_for()
        assert cand.inner_text() == HOSTILE_IMG + " " + HOSTILE_SCRIPT
        assert HOSTILE_IMG in p.page.locator("[data-testid=pair-detail]").inner_text()
        assert p.page.locator("img").count() == 0
        assert p.page.locator("script").count() == 1
        assert p.page.evaluate(PWNED) == [None, None]
        assert p.errors == []
    finally:
        p.close()


def test_arms_matrix_has_one_cell_per_case_and_arm(browser: Any, rich: tuple[str, list[str]]) -> None:
    url, ids = rich
    p = wide(browser)
    try:
        p.page.goto(f"{url}/#/run/{ids[0]}?suite=arms&gsuite=arms")
        grid = p.page.locator("[data-testid=grid]")
        grid.wait_for()
        heads = grid.locator("thead th").all_inner_texts()
        assert heads[0] == "case" and [h.split()[0] for h in heads[1:]] == list(ARMS)
        assert "baseline" in heads[1]
        cells = grid.locator("td.cell")
        assert cells.count() == 5 * len(ARMS)
        pairs = {(cells.nth(i).get_attribute("data-case"), cells.nth(i).get_attribute("data-col")) for i in range(cells.count())}
        assert pairs == {(f"m{i}", a) for i in range(5) for a in ARMS}
        # sorted by disagreement: every first row's arms disagree
        first = grid.locator("tbody tr").first.locator("td.cell")
        assert len({first.nth(i).get_attribute("data-status") for i in range(len(ARMS))}) > 1
        # a truncated cell expands to the whole output
        long = grid.locator("td.cell[data-case=m0][data-col=sonnet]")
        assert long.locator("pre").inner_text().endswith("…")
        long.click()
        p.page.wait_for_function("() => !document.querySelector('td.cell[data-case=m0][data-col=sonnet] pre').textContent.endsWith('…')")
        assert long.locator("pre").inner_text().count("word") == 60
        assert p.page.evaluate(OVERFLOW) == []
        assert p.errors == []
    finally:
        p.close()


def test_repeats_grid_has_attempt_columns_and_flakiness(browser: Any, rich: tuple[str, list[str]]) -> None:
    url, ids = rich
    p = wide(browser)
    try:
        p.page.goto(f"{url}/#/run/{ids[1]}?suite=arms&gsuite=arms&by=attempt&garm=opus")
        grid = p.page.locator("[data-testid=grid]")
        grid.wait_for()
        assert grid.locator("thead th").all_inner_texts() == ["case", "class", "#0", "#1", "#2"]
        assert grid.locator("td.cell").count() == 5 * 3
        classes = set(grid.locator("tbody tr td:nth-child(2)").all_inner_texts())
        assert "flaky" in classes  # (i + a + j) % 3 fails one attempt in three
        assert p.page.evaluate(OVERFLOW) == []
        assert p.errors == []
    finally:
        p.close()


# --------------------------------------------------------------------------- charts that read, tables that fit

FILL = "(sel) => getComputedStyle(document.querySelector(sel)).fill"


def test_trend_charts_have_distinct_x_labels_visible_series_and_tooltips_with_denominators(
        page: Page, site: tuple[str, list[str]]) -> None:
    url, ids = site
    page.page.goto(url + "/")
    page.page.locator("[data-testid=chart-pass_rate] .pt").first.wait_for()
    labels = page.page.locator("[data-testid=chart-pass_rate] text.xlabel")
    texts = [labels.nth(i).text_content() for i in range(labels.count())]
    assert len(texts) == len(ids) and len(set(texts)) == len(texts)  # one per run, none the same
    assert all("01-01 00:00" in t for t in texts)  # with the run's date-time
    tip = page.page.locator(f"[data-testid=chart-pass_rate] .pt[data-run='{ids[0]}'] title").text_content()
    assert "66.7% (2/3)" in tip and ids[0] in tip
    assert page.errors == []


def test_overlapping_series_stay_apart_and_a_suite_has_one_colour_everywhere(
        browser: Any, rich: tuple[str, list[str]], tmp_path: Path) -> None:
    url, ids = rich
    p = wide(browser)
    try:
        p.page.goto(url + "/")
        p.page.locator("[data-testid=chart-pass_rate] .pt").first.wait_for()
        boxes = p.page.evaluate("""() => [...document.querySelectorAll('[data-testid=chart-pass_rate] .pt')].map(e => {
            const b = e.getBoundingClientRect(); return [e.dataset.series, e.dataset.run, Math.round(b.x * 10), Math.round(b.y * 10)]; })""")
        assert len(boxes) == 2 * 4  # qa and three arms, two runs
        assert len({(b[2], b[3]) for b in boxes}) == len(boxes)  # no marker hides another
        # one colour per suite: the arms of `arms` share it, qa has another
        colours = p.page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('[data-testid=chart-pass_rate] .pt')]
            .map(e => [e.dataset.series, getComputedStyle(e).fill]))""")
        assert colours["arms · haiku"] == colours["arms · sonnet"] == colours["arms · opus"] != colours["qa"]
        # cost per suite, in the suite's colour
        cost = p.page.locator("[data-testid=chart-cost] .pt[data-series=qa]").first
        assert p.page.evaluate("(e) => getComputedStyle(e).fill", cost.element_handle()) == colours["qa"]
        assert p.page.evaluate(OVERFLOW) == []
        assert p.errors == []
        # the HTML report of the same runs draws qa in the same colour
        from evalh.store import RunStore

        store = RunStore(RICH_RUNS[0])
        path = tmp_path / "r.html"
        path.write_text(to_html(build_report([store.load(i) for i in ids])), encoding="utf-8")
        p.page.goto(path.as_uri())
        p.page.locator("svg.trend .pt").first.wait_for()
        html_colours = p.page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('svg.trend .pt')]
            .map(e => [e.querySelector('title').textContent.split(' · ')[0], getComputedStyle(e).fill]))""")
        assert html_colours["qa"] == colours["qa"]
        assert html_colours["arms"] == colours["arms · haiku"]
        html_labels = p.page.locator("svg.trend text.xlabel").all_text_contents()
        assert html_labels == ["rich 002-01 00:00", "rich 102-02 00:00"]
        tip = p.page.locator("svg.trend .pt title").first.text_content()
        assert "(" in tip and "/" in tip  # the rate with its denominator
        assert p.page.evaluate(OVERFLOW) == []
        assert p.errors == []
    finally:
        p.close()


def test_run_page_names_the_dead_lens_worst_and_shows_every_figure(browser: Any, tmp_path: Path) -> None:
    from tests.test_report_figures import run_with_figures

    root = tmp_path
    from tests.report_factory import write_runs

    run = run_with_figures().model_copy(update={"run_id": "20260301T000000000Z-00000f"})
    write_runs(root / "eval_runs", [run])
    url, stop = serve(root / "eval_runs", root)
    p = wide(browser)
    try:
        p.page.goto(f"{url}/#/run/{run.run_id}")
        figs = p.page.locator("[data-testid=figure]")
        figs.first.wait_for()
        assert sorted(figs.nth(i).get_attribute("data-kind") for i in range(figs.count())) == ["classification", "judge", "pairwise"]
        lens = p.page.locator("[data-testid=figure][data-kind=classification]").inner_text()
        assert "worst lens: provenance" in lens and "n/a (0/0)" in lens and "0.0% (0/5)" in lens
        flags = p.page.locator("[data-testid=figure-flag]").all_inner_texts()
        assert any("position bias" in f for f in flags) and any("low-confidence" in f for f in flags)
        assert p.page.evaluate(OVERFLOW) == []
        assert p.errors == []
    finally:
        p.close()
        stop()


def test_history_filters_by_label_branch_sha_status_and_date(browser: Any, tmp_path: Path) -> None:
    from evalh.models import GitInfo
    from tests.report_factory import write_runs

    specs = [("nightly", "main", "aaaa1111", "complete", "2026-03-01"), ("nightly", "main", "bbbb2222", "partial", "2026-03-02"),
             ("prompt v2", "feature/x", "cccc3333", "complete", "2026-03-03"), (None, "feature/x", "aaaa4444", "complete", "2026-03-04"),
             ("nightly", "release", "dddd5555", "failed", "2026-03-05")]
    runs = []
    for k, (label, branch, sha, status, day) in enumerate(specs):
        r = make_run(f"{day.replace('-', '')}T000000000Z-00000{k}", {"s": suite([res("a"), res("b", "failed" if k % 2 else "passed")])},
                     label=label, status=status, started_at=f"{day}T08:00:00.000Z")
        runs.append(r.model_copy(update={"git": GitInfo(sha=sha, dirty=False, branch=branch)}))
    write_runs(tmp_path / "eval_runs", runs)
    url, stop = serve(tmp_path / "eval_runs", tmp_path)
    p = wide(browser)

    def shown() -> list[str | None]:
        rows = p.page.locator("[data-testid=history] tbody tr")
        return [rows.nth(i).get_attribute("data-run")[-1:] for i in range(rows.count())]  # type: ignore[index]

    def wait_shown(expected: list[str]) -> None:
        # Wait for these rows, not for a row count: after a hash change the previous filter's
        # rows can have the expected count already, and the check then races the re-render.
        p.page.wait_for_function(
            "want => JSON.stringify([...document.querySelectorAll('[data-testid=history] tbody tr')]"
            ".map(r => r.getAttribute('data-run').slice(-1))) === JSON.stringify(want)", arg=expected)

    try:
        p.page.goto(url + "/")
        p.page.locator("[data-testid=history] tbody tr").first.wait_for()
        assert shown() == ["4", "3", "2", "1", "0"]
        p.page.locator("input[data-filter=label]").fill("NIGHT")
        wait_shown(["4", "1", "0"])
        assert shown() == ["4", "1", "0"]
        assert p.page.locator("[data-testid=chart-pass_rate] .pt").count() == 3  # the charts follow the filters
        assert "3 of 5 runs" in p.page.locator("[data-testid=history-title]").inner_text()
        p.page.locator("select[data-filter=status]").select_option("complete")
        wait_shown(["0"])
        assert shown() == ["0"]
        assert "label=NIGHT" in p.page.url and "status=complete" in p.page.url
        p.page.goto(url + "/#/?branch=feature%2Fx")
        wait_shown(["3", "2"])
        assert shown() == ["3", "2"]
        p.page.goto(url + "/#/?sha=AAAA")
        wait_shown(["3", "0"])
        assert shown() == ["3", "0"]
        p.page.goto(url + "/#/?from=2026-03-02&to=2026-03-04")
        wait_shown(["3", "2", "1"])
        assert shown() == ["3", "2", "1"]
        assert p.page.evaluate(OVERFLOW) == []
        assert p.errors == []
    finally:
        p.close()
        stop()


def test_a_chart_of_many_runs_names_the_run_under_the_pointer(browser: Any, tmp_path: Path) -> None:
    from tests.report_factory import write_runs

    runs = [make_run(f"202603{1 + k // 24:02d}T{k % 24:02d}0000000Z-{k:06x}", {"s": suite([res("a"), res("b", "failed" if k % 3 else "passed")])},
                     started_at=f"2026-03-{1 + k // 24:02d}T{k % 24:02d}:00:00.000Z") for k in range(160)]
    write_runs(tmp_path / "eval_runs", runs)
    url, stop = serve(tmp_path / "eval_runs", tmp_path)
    p = wide(browser)
    try:
        p.page.goto(f"{url}/")
        overlay = p.page.locator("[data-testid=chart-overlay-pass_rate]")
        overlay.wait_for()
        assert p.page.locator("[data-testid=chart-pass_rate] .pt").count() == 0  # lines only
        labels = p.page.locator("[data-testid=chart-pass_rate] text.xlabel").all_text_contents()
        assert len(labels) > 3 and len(set(labels)) == len(labels)
        box = overlay.bounding_box()
        assert box is not None
        p.page.mouse.move(box["x"] + box["width"] - 1, box["y"] + box["height"] / 2)  # the newest run
        tip = p.page.locator("[data-testid=chart-tip-pass_rate]")
        tip.wait_for()
        assert runs[-1].run_id in tip.inner_text() and "s: 100.0% (2/2)" in tip.inner_text()  # 159 % 3 == 0: both passed
        p.page.mouse.click(box["x"] + 1, box["y"] + box["height"] / 2)  # the oldest
        p.page.wait_for_function(f"() => location.hash.indexOf('{runs[0].run_id}') >= 0")
        assert p.errors == []
    finally:
        p.close()
        stop()


def test_html_report_of_two_runs_lays_each_changed_case_side_by_side(
        browser: Any, rich: tuple[str, list[str]], tmp_path: Path) -> None:
    from evalh.report.pairs import case_pairs
    from evalh.store import RunStore

    _, ids = rich
    store = RunStore(RICH_RUNS[0])
    base, cand = store.load(ids[0]), store.load(ids[1])
    path = tmp_path / "two.html"
    path.write_text(to_html(build_report([base, cand]), pairs=case_pairs(base, cand)), encoding="utf-8")
    p = wide(browser)
    try:
        p.page.goto(path.as_uri())
        pairs = p.page.locator("#pairs details.pair")
        pairs.first.wait_for()

        def visible() -> list[str | None]:
            return [pairs.nth(i).get_attribute("data-case") for i in range(pairs.count()) if pairs.nth(i).is_visible()]

        assert "q.rome" not in visible() and "q.paris" in visible()  # the default view: what changed
        p.page.locator("#pairs button[data-view=regressed]").click()
        assert visible()[0] == "q.paris" and "q.tokyo" not in visible()
        paris = p.page.locator("#pairs details.pair[data-case='q.paris']")
        paris.locator("summary").click()
        assert paris.locator("pre[data-side=base] del").all_inner_texts() == ["Paris"]
        assert "Lyon" in "".join(paris.locator("pre[data-side=candidate] ins").all_inner_texts())
        assert "does not match (run 1)" in paris.inner_text() and "matches (run 0)" in paris.inner_text()
        p.page.locator("#pairs button[data-view=all]").click()
        p.page.locator("#pairs input.pairsearch").fill("kyoto")
        assert visible() == ["q.tokyo"]
        p.page.locator("#pairs input.pairsearch").fill("")
        hostile = p.page.locator("#pairs details.pair[data-case='q.hostile']")
        hostile.locator("summary").click()
        assert hostile.locator("pre[data-side=candidate]").inner_text() == HOSTILE_IMG + " " + HOSTILE_SCRIPT
        assert p.page.locator("img").count() == 0 and p.page.evaluate(PWNED) == [None, None]
        assert p.page.evaluate(OVERFLOW) == []
        assert p.requests == [path.as_uri()]
        assert p.errors == []
    finally:
        p.close()


# --------------------------------------------------------------------------- the sweep's ranking


def sweep_run(run_id: str) -> Any:
    """A run whose `triage` suite keeps the ranking of a binary sweep (threshold 0.7 beats the
    current 0.5 by one case: within noise) and whose `broken` suite's sweep could not rank
    (a hostile label in the error it keeps)."""
    from evalh.config import SuiteConfig
    from evalh.core.analysis.sweep import SweepConfig, suite_sweep

    values = [(0.9, True), (0.8, True), (0.75, True), (0.85, True), (0.6, False), (0.2, False),
              (0.1, False), (0.3, False), (0.4, False), (0.95, True), (0.15, False), (0.05, False)]
    triage = [res(f"t{i:02d}", "passed", score=v).model_copy(update={"expected": {"bad": bad}})
              for i, (v, bad) in enumerate(values)]
    spec = SweepConfig(positive=True, label="bad", measure="score", grid={"threshold": "0.3,0.5,0.7,0.9"},
                       current={"threshold": 0.5})
    s = suite(triage, "stochastic")
    s.sweep = suite_sweep("triage", SuiteConfig.model_construct(sweep=spec), triage, None)
    broken = [res("b1").model_copy(update={"expected": {"severity": HOSTILE_IMG}})]
    b = suite(broken)
    b.sweep = suite_sweep("broken", SuiteConfig.model_construct(sweep=SweepConfig(
        measure="score", label="severity", tiers=["block"], otherwise="ok", grid={"block": "0.5"})), broken, None)
    return make_run(run_id, {"triage": s, "broken": b})


def test_run_page_shows_the_sweep_ranking_its_winner_and_whether_the_win_is_within_noise(
        browser: Any, tmp_path: Path) -> None:
    from tests.report_factory import write_runs

    run = sweep_run("20260401T000000000Z-00005e")
    assert run.suites["triage"].sweep["recommended"] == {"threshold": 0.7}
    write_runs(tmp_path / "eval_runs", [run])
    url, stop = serve(tmp_path / "eval_runs", tmp_path)
    p = wide(browser)
    try:
        p.page.goto(f"{url}/#/run/{run.run_id}")
        fig = p.page.locator("[data-testid=figure][data-kind=sweep][data-suite=triage]")
        fig.wait_for()
        head = fig.locator("thead th").all_inner_texts()
        assert head[:2] == ["rank", "threshold"] and "accuracy (right/n)" in head
        rows = fig.locator("tbody tr")
        assert rows.count() == 4  # every candidate of the grid
        first = rows.nth(0).locator("td").all_inner_texts()
        assert first[:3] == ["1", "0.7", "100.0% (12/12)"] and first[-1] == "recommended"
        assert "win" in (rows.nth(0).get_attribute("class") or "")
        current = rows.nth(1)
        assert current.locator("td").all_inner_texts()[-1] == "current" and "cur" in (current.get_attribute("class") or "")
        assert current.locator("td").nth(2).inner_text() == "91.7% (11/12)"
        headline = fig.locator("[data-testid=sweep-headline]").inner_text()
        assert headline == "winner: threshold=0.7, a strict win on accuracy, within noise of the runner-up"
        notes = fig.locator(".notes li").all_inner_texts()
        assert any("vs the runner-up, the current policy (threshold=0.5): accuracy +0.083, within noise; 95% CI" in n
                   and "McNemar mid-p" in n for n in notes)
        # why a row has no interval is folded under the suites table, one line per row, and opens
        why = p.page.locator("[data-testid=no-interval]")
        why.locator("summary").click()
        assert any(t.startswith("triage: ") and "random" in t for t in why.locator("li").all_inner_texts())
        # the sweep that could not rank is flagged, its hostile label shown as text
        flag = p.page.locator("[data-testid=figure][data-kind=sweep][data-suite=broken] [data-testid=figure-flag]")
        assert HOSTILE_IMG in flag.inner_text() and flag.locator("img").count() == 0
        assert p.page.evaluate(PWNED) == [None, None]
        assert p.page.evaluate(OVERFLOW) == []
        assert p.errors == []
        # the HTML report draws the same figure, escaped, offline
        path = tmp_path / "r.html"
        path.write_text(to_html(build_report([run])), encoding="utf-8")
        p.page.goto(path.as_uri())
        table = p.page.locator("table.figure[data-kind=sweep]").first
        table.wait_for()
        assert table.locator("tbody tr").first.locator("td").all_inner_texts()[:3] == ["1", "0.7", "100.0% (12/12)"]
        body = p.page.locator("body").inner_text()
        assert "winner: threshold=0.7, a strict win on accuracy, within noise of the runner-up" in body
        assert HOSTILE_IMG in body and p.page.evaluate(PWNED) == [None, None]
        assert p.page.evaluate(OVERFLOW) == []
        assert p.errors == []
    finally:
        p.close()
        stop()


# --------------------------------------------------------------------------- every page at 1280 px


def test_every_page_fits_its_cards_at_1280_px_with_long_ids_outputs_and_many_suites(
        browser: Any, tmp_path: Path) -> None:
    """Home (history of many suites, long labels), a run with a case open whose id and output
    are one long unbroken word, the compare view and the HTML report's first screen: no card
    wider than itself, no page wider than the window, no console error."""
    from tests.report_factory import write_runs

    long_id = "case." + "unbroken" * 12
    blob = "A" * 4000
    runs = []
    for k in range(3):
        suites = {f"suite_{j}_with_a_long_name": suite([res(f"c{i}", "passed" if (i + j + k) % 4 else "failed",
                                                            tokens=(1200, 300), cost_usd=0.0123)
                                                        for i in range(6)]) for j in range(8)}
        suites["wide"] = suite([res(long_id, "failed" if k else "passed", output={"text": blob, "more": blob},
                                    trace=[{"tool": "search", "query": blob}], error=("ValueError", blob) if k else None,
                                    attempt=a) for a in range(3)], "stochastic")
        runs.append(make_run(f"2026050{k + 1}T000000000Z-0000a{k}", suites, label=f"nightly build {k} " + "x" * 60,
                             started_at=f"2026-05-0{k + 1}T00:00:00.000Z"))
    write_runs(tmp_path / "eval_runs", runs)
    url, stop = serve(tmp_path / "eval_runs", tmp_path)
    p = wide(browser)
    try:
        p.page.goto(url + "/")
        p.page.locator("[data-testid=history] tbody tr").first.wait_for()
        assert p.page.evaluate(OVERFLOW) == []
        p.page.goto(f"{url}/#/run/{runs[-1].run_id}?suite=wide")
        p.page.locator(f"[data-testid=cases] tbody tr[data-case='{long_id}']").first.click()
        p.page.locator("[data-testid=case-title]").wait_for()
        assert p.page.locator("[data-testid=case-title]").inner_text() == long_id
        assert p.page.evaluate(OVERFLOW) == []
        p.page.goto(f"{url}/#/compare?base={runs[0].run_id}&candidate={runs[-1].run_id}&suite=wide&filter=all&case={long_id}&arm=default")
        p.page.locator("[data-testid=diff-candidate]").wait_for()
        assert p.page.evaluate(OVERFLOW) == []
        assert p.errors == []
        path = tmp_path / "r.html"
        from evalh.report.pairs import case_pairs

        path.write_text(to_html(build_report(runs[-2:]), pairs=case_pairs(runs[-2], runs[-1])), encoding="utf-8")
        p.page.goto(path.as_uri())
        p.page.locator("h1").wait_for()
        assert p.page.evaluate(OVERFLOW) == []
        assert p.errors == []
    finally:
        p.close()
        stop()
