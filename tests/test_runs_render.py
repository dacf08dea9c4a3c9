"""`evalh runs` lays its table out itself (evalh.report.terminal.runs): the text must be the
one rich's Table printed for the same rows, piped and on a terminal, at any width."""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from evalh.console import safe_text
from evalh.models import Aggregate, DatasetInfo, EnvironmentInfo, GitInfo, Run, SuiteResult
from evalh.numbers import num
from evalh.report.terminal.runs import cells_of, layout, render_runs, write_runs
from evalh.run_header import RunListing
from evalh.store import RunStore

WIDTHS = [20, 31, 40, 52, 60, 70, 79, 80, 81, 95, 100, 120, 133, 160, 200, 240]


def rich_listing(rows: list[RunListing], title: str, console: Console) -> None:
    """The listing as evalh printed it through rich's Table up to adf6a48 (the reference), but
    for the run id, which is never cut: when the table is wider than the console, its column
    is rich's `no_wrap` column exactly as wide as the longest id (or its header), the
    BASELINE marker wrapping below the id; and a table that cannot fit runs past the console
    (not cropped)."""
    table = Table(title=safe_text(title), title_justify="left")
    for col in ("run id", "label", "status", "git", "suites (pass rate)"):
        table.add_column(col)
    for row in rows:
        sha = (row.git_sha or "–")[:8] + ("*" if row.dirty else "")
        rates = "  ".join(f"{n} {num(v, '.0%', none='n/a')}" for n, v in row.suites.items())
        if row.resume:
            rates = f"resume with: {row.resume}"
        elif row.status == "running" and not row.suites:
            rates = "(in flight)"
        rid = row.run_id + (" (BASELINE)" if row.baseline else "")
        table.add_row(safe_text(rid, no_wrap=False), safe_text(row.label or ""), safe_text(row.status),
                      safe_text(sha), safe_text(rates))
    if console.measure(table, options=console.options.update_width(10_000)).maximum > console.width:
        longest = max([cell_len("run id"), *(cell_len(safe_text(r.run_id).plain) for r in rows)])
        table.columns[0].no_wrap = True
        table.columns[0].min_width = table.columns[0].max_width = longest
    console.print(table, crop=False)


def row(run_id: str = "20261201T193052749Z-ebb0c3", label: str | None = None, status: str = "complete",
        sha: str | None = "ac438d88f00d", dirty: bool | None = False, baseline: bool = False,
        suites: dict[str, float | None] | None = None, resume: str | None = None) -> RunListing:
    return RunListing(run_id=run_id, label=label, status=status, started_at="2026-12-01T19:30:52Z",
                      git_sha=sha, dirty=dirty, baseline=baseline,
                      suites={"gate": 1.0} if suites is None else suites, resume=resume)


VARIED = [
    row(),
    row("20261201T193052750Z-aaaaaa", label="nightly", baseline=True, suites={"gate": 0.5, "smoke": None}),
    row("20261201T193052751Z-bbbbbb", label="a label long enough to wrap over several lines of the label column",
        dirty=True, suites={"gate": 0.9166, "live": 0.0, "judge_with_a_long_name": 1.0}),
    row("20261201T193052752Z-cccccc", label="[bold red]x[/] [link=https://evil.example]click[/link]",
        sha=None, dirty=None, suites={}),
    row("20261201T193052753Z-dddddd", label="\x1b[31mred\x1b[0m \x1b]8;;https://evil.example\x07link\x1b]8;;\x07",
        suites={"[b]suite[/b]": 0.25}),
    row("20261201T193052754Z-eeeeee", label="日本語のラベル 😀 café naïve e\u0301 Ωmega", suites={"ünïcode": 0.75}),
    row("20261201T193052755Z-ffffff", label="bidi \u202eevil\u202c \u2066iso\u2069", status="partial"),
    row("20261201T193052756Z-000001", label="killed", status="interrupted", sha=None, dirty=None, suites={},
        resume="evalh run --resume 20261201T193052756Z-000001 --runs-dir '/srv/ci/some dir/eval_runs'"),
    row("20261201T193052757Z-000002", label=None, status="running", sha=None, dirty=None, suites={}),
    row("20261201T193052758Z-000003", label="  spaced   out  ", status="failed",
        suites={f"s{k}": k / 7 for k in range(9)}),
    row("20261201T193052759Z-000004", label="averyveryveryveryveryveryverylongwordwithoutanyspaceatall_and_more",
        suites={"gate": None}),
    row("20261201T193052760Z-000005", label="\u00a0nbsp\u3000ideographic space", baseline=True, dirty=True),
]
TITLES = ["runs in eval_runs", "runs in /var/ci/pytest-of-someone/pytest-12/test_a_long_name0/project/eval_runs",
          "runs in /srv/a-path-without-any-space-that-is-longer-than-a-narrow-table-is-wide/eval_runs/x/y/z",
          "runs in [bold]/x[/bold]\x1b[2J"]


def piped(render: Callable[[Console], None], width: int) -> str:
    buf = io.StringIO()
    render(Console(file=buf, width=width, highlight=False, soft_wrap=False))  # as evalh.console.out()
    return buf.getvalue()


def terminal(render: Callable[[Console], None], width: int) -> str:
    buf = io.StringIO()
    render(Console(file=buf, width=width, highlight=False, soft_wrap=False, force_terminal=True,
                   color_system="truecolor"))
    return buf.getvalue()


def plain(rows: list[RunListing], title: str, width: int) -> str:
    buf = io.StringIO()
    write_runs(rows, title, width, buf)
    return buf.getvalue()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("title", TITLES)
def test_the_listing_is_the_text_rich_printed(width: int, title: str) -> None:
    expected = piped(lambda c: rich_listing(VARIED, title, c), width)
    assert plain(VARIED, title, width) == expected
    assert piped(lambda c: render_runs(VARIED, title, c), width) == expected
    assert terminal(lambda c: render_runs(VARIED, title, c), width) == \
        terminal(lambda c: rich_listing(VARIED, title, c), width)


def test_the_cases_laid_out_here_are_not_left_to_rich() -> None:
    """The comparison above must test this module's layout, not rich against itself."""
    cells: list[tuple[str, ...]] = [("20261201T193052749Z-ebb0c3", "nightly", "complete", "ac438d88", "gate 100%")]
    assert all(layout("runs in eval_runs", cells, w) is not None for w in (60, 80, 160))
    varied = [cells_of(r) for r in VARIED]  # the id column kept whole, the others given way
    assert all(layout(title, varied, w) is not None for title in TITLES for w in WIDTHS if w >= 52)
    hostile = [r for r in VARIED if "\x1b" in (r.label or "")]
    text = plain(hostile, "runs", 160)
    assert "\x1b" not in text and "[b]suite[/b]" in text and "\ufffd[31mred" in text


@pytest.mark.parametrize("width", [40, 80, 160])
def test_an_empty_listing_and_one_row(width: int) -> None:
    for rows in ([], VARIED[:1], [VARIED[7]]):
        def reference(console: Console, rows: list[RunListing] = rows) -> None:
            rich_listing(rows, "runs in eval_runs", console)

        assert plain(rows, "runs in eval_runs", width) == piped(reference, width)


@pytest.mark.parametrize("label", ["tab\there", "two\nlines", "line\u2028separator"])
def test_text_only_rich_lays_out_goes_through_rich(label: str) -> None:
    rows = [row(label=label), *VARIED[:3]]
    for width in (50, 80, 160):
        assert plain(rows, "runs in eval_runs", width) == piped(lambda c: rich_listing(rows, "runs in eval_runs", c),
                                                                width)
        assert terminal(lambda c: render_runs(rows, "runs", c), width) == \
            terminal(lambda c: rich_listing(rows, "runs", c), width)


WORDS = ["a", "gate", "nightly", "x" * 30, "[bold]", "[/]", "日本", "😀", "e\u0301", "  ", "-", "résumé",
         "\x1b[1m", "20261201T193052749Z-ebb0c3", "--runs-dir", "'/srv/a b'", "\u00a0", "ｆｕｌｌ"]


def _text(rng: random.Random, most: int) -> str:
    return "".join(rng.choice(WORDS) + rng.choice(["", " ", "  "]) for _ in range(rng.randint(0, most)))


def test_random_rows_at_random_widths() -> None:
    rng = random.Random(18)
    laid_here = 0
    for _ in range(250):
        rows = [row(run_id=_text(rng, 3) or "r", label=rng.choice([None, _text(rng, 8)]),
                    status=rng.choice(["complete", "partial", "running", "interrupted", "failed"]),
                    sha=rng.choice([None, "0123456789abcdef"]), dirty=rng.choice([None, True, False]),
                    baseline=rng.random() < 0.2,
                    suites={_text(rng, 2) or "s": rng.choice([None, 0.0, 0.333, 1.0]) for _ in range(rng.randint(0, 4))},
                    resume=rng.choice([None, None, "evalh run --resume " + _text(rng, 3)]))
                for _ in range(rng.randint(0, 6))]
        title = "runs in " + _text(rng, 6)
        width = rng.randint(10, 220)
        laid_here += layout(title, [cells_of(r) for r in rows], width) is not None
        expected = piped(lambda c: rich_listing(rows, title, c), width)  # noqa: B023
        assert plain(rows, title, width) == expected, (width, title, rows)
        assert terminal(lambda c: render_runs(rows, title, c), width) == \
            terminal(lambda c: rich_listing(rows, title, c), width), (width, title, rows)  # noqa: B023
    assert laid_here >= 200  # this module's layout against rich's, not rich against itself


# ----------------------------------------------------------------------------- through `evalh runs`


def _runs_dir(tmp_path: Path, ascii_only: bool = False) -> RunStore:
    """Documents with the labels above (several suites, n/a rates, a BASELINE) and a run with
    only a journal (interrupted)."""
    store = RunStore(tmp_path / "runs")
    for k, r in enumerate(r for r in VARIED if r.status in ("complete", "partial", "failed")
                          and ((r.label or "").isascii() or not ascii_only)):
        suites = {name: SuiteResult(dataset=DatasetInfo(path="d", sha256="x", cases=1),
                                    aggregate=Aggregate(pass_rate=rate)) for name, rate in r.suites.items()}
        store.write(Run(run_id=f"20261201T1930527{k:02d}Z-{k:06x}", started_at="2026-12-01T19:30:52Z",
                        status=r.status, label=r.label,  # type: ignore[arg-type]
                        git=GitInfo(sha=r.git_sha, dirty=r.dirty),
                        environment=EnvironmentInfo(evalh="0", python="3", platform="test"), suites=suites))
    journal = store.journal("20261201T193100000Z-abcdef")
    journal.open({"run_id": "20261201T193100000Z-abcdef", "label": "killed [bold]x[/]", "seed": 1,
                  "started_at": "2026-12-01T19:31:00Z", "config": {}, "suites": ["s"], "derived_from": None,
                  "datasets": {}, "options": {}})
    journal.close()
    (tmp_path / "BASELINE").write_text("20261201T193052701Z-000001\n")
    return store


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("force_color", [None, "1"])
def test_evalh_runs_prints_what_rich_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, width: int,
                                             force_color: str | None) -> None:
    """Piped: plain lines, rich not needed; FORCE_COLOR: through rich's console, bold header."""
    from typer.testing import CliRunner

    from evalh import console
    from evalh.cli.main import app
    from evalh.run_header import list_runs

    store = _runs_dir(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", str(width))
    if force_color:
        monkeypatch.setenv("FORCE_COLOR", force_color)
    console.out.cache_clear()
    try:
        result = CliRunner().invoke(app, ["runs", "--runs-dir", str(store.runs_dir)])
    finally:
        console.out.cache_clear()
    assert result.exit_code == 0, result.output
    rows, _ = list_runs(store, 20, baseline={"20261201T193052701Z-000001"}, runs_dir=store.runs_dir)
    assert [r.status for r in rows].count("interrupted") == 1 and sum(r.baseline for r in rows) == 1
    buf = io.StringIO()
    rich_listing(rows, f"runs in {store.runs_dir}",  # the console evalh.console.out() makes
                 Console(file=buf, width=width, highlight=False, soft_wrap=False, no_color=True))
    assert result.stdout == buf.getvalue()
    assert ("\x1b[1m" in result.stdout) == bool(force_color)  # bold header on a "terminal" only


def test_a_piped_listing_does_not_import_rich(tmp_path: Path) -> None:
    import subprocess
    import sys

    store = _runs_dir(tmp_path, ascii_only=True)  # non-ASCII text needs rich.cells' widths
    probe = ("import sys\nfrom evalh.cli.main import main\nsys.argv = ['evalh', 'runs', '--runs-dir', sys.argv[1]]\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "sys.stderr.write(' '.join(m for m in sys.modules if m.split('.')[0] == 'rich'))\n")
    done = subprocess.run([sys.executable, "-c", probe, str(store.runs_dir)], capture_output=True, text=True,
                          cwd=tmp_path, check=False, env={**__import__("os").environ, "COLUMNS": "200"})
    # wider than 200 columns: the marker below the id, the label and the suites wrapped
    assert "│ 20261201T193052701Z-000001 │" in done.stdout and "│ (BASELINE)    " in done.stdout, done.stderr
    assert done.stderr == ""


def test_plain_width_is_none_where_rich_would_style() -> None:
    from evalh.console import plain_width

    class Stream(io.StringIO):
        def __init__(self, tty: bool, encoding: str = "utf-8") -> None:
            super().__init__()
            self.tty, self._encoding = tty, encoding

        def isatty(self) -> bool:
            return self.tty

        @property
        def encoding(self) -> str:  # type: ignore[override]
            return self._encoding

    mp = pytest.MonkeyPatch()
    with mp.context() as m:
        m.setenv("COLUMNS", "99")
        m.delenv("FORCE_COLOR", raising=False)
        m.delenv("TTY_COMPATIBLE", raising=False)
        assert plain_width(Stream(tty=False)) == 99
        assert plain_width(Stream(tty=True)) is None
        assert plain_width(Stream(tty=False, encoding="ascii")) is None
        m.setenv("FORCE_COLOR", "1")
        assert plain_width(Stream(tty=False)) is None
        m.setenv("FORCE_COLOR", "")  # rich: empty is not forcing
        assert plain_width(Stream(tty=False)) == 99
        m.setenv("TTY_COMPATIBLE", "1")
        assert plain_width(Stream(tty=False)) is None


# ----------------------------------------------------------------------------- the run id, whole


REALISTIC = [
    row("20261201T193052749Z-ebb0c3", label="nightly main", baseline=True,
        suites={"gate": 1.0, "smoke": 0.98, "live": 0.87, "judge_quality": 0.91}),
    row("20261201T201530112Z-4f9a21", label="try prompt v2 with a longer system message", sha="b91c07e2aa",
        dirty=True, suites={"gate": 0.96, "smoke": 1.0, "live": 0.83, "judge_quality": 0.88}),
    row("20261201T211004870Z-0c77d3", status="interrupted", sha=None, dirty=None, suites={},
        resume="evalh run --resume 20261201T211004870Z-0c77d3"),
    row("20261201T220000001Z-9e8d7c", label="ci", status="partial", suites={"gate": 0.5, "live": None}),
]


def _whole_ids(text: str, rows: list[RunListing], width: int) -> None:
    """Each run id whole on one line of the id column, where a user copies it from; the
    table within `width`."""
    import re

    lines = re.sub("\x1b\\[[0-9;]*m", "", text).splitlines()
    assert all(len(line) <= width for line in lines), text
    ids = [line.split("│")[1].strip() for line in lines if line.startswith("│")]
    assert [i for i in ids if i] == [w for r in rows for w in ([r.run_id, "(BASELINE)"] if r.baseline else
                                                               [r.run_id])], text


@pytest.mark.parametrize("width", [60, 80])
def test_every_run_id_is_whole_when_the_table_must_give_way(width: int) -> None:
    """The id is what `evalh show` and `evalh compare` take: label and suites wrap instead."""
    title = "runs in /opt/a/project/with/a/long/path/eval_runs"
    _whole_ids(plain(REALISTIC, title, width), REALISTIC, width)
    _whole_ids(piped(lambda c: render_runs(REALISTIC, title, c), width), REALISTIC, width)
    _whole_ids(terminal(lambda c: render_runs(REALISTIC, title, c), width), REALISTIC, width)
    assert layout(title, [cells_of(r) for r in REALISTIC], width) is not None  # this module's layout, not rich's


@pytest.mark.parametrize("width", [20, 31, 40])
def test_a_console_too_narrow_for_the_table_still_shows_every_id_whole(width: int) -> None:
    """Where the table cannot fit even with the other columns at nothing, its lines run past
    the console (rich's overflow, not cropped): the ids stay whole."""
    title = "runs in eval_runs"
    for text in (plain(REALISTIC, title, width), terminal(lambda c: render_runs(REALISTIC, title, c), width)):
        _whole_ids(text, REALISTIC, max(width, 34))  # the id's column, the box, four columns of nothing
