"""`evalh runs` and `evalh show`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, RunsDirOpt
from evalh.cli.project import open_project, open_store

if TYPE_CHECKING:
    from evalh.models import CaseResult

SHOWN_FAILURES = 1000
"""The results that did not pass `evalh show` lists per suite (the rest are counted)."""


@translate_errors
def runs(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, metavar="N", help="Show the newest N runs.")] = 20,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List runs, newest last: id, label, status, git sha, and per-suite pass rates.

    The BASELINE run is marked. A run that has only a journal (killed outright, or a crash)
    is listed `interrupted` with the command that resumes it (`running` while its process
    lives). Exit 0 (also when there are no runs); 2 on bad input.

    Examples:

        evalh runs

        evalh runs -n 5 --json
    """

    import sys

    from evalh.baseline import read_baseline_ids
    from evalh.console import plain_width, warn
    from evalh.run_header import list_runs

    root, store = open_project(config, runs_dir)
    baseline = set(read_baseline_ids(root) or ())  # a pooled baseline marks each of its runs
    rows, left_out = list_runs(store, limit, baseline=baseline, runs_dir=runs_dir)
    for message in left_out:  # named, not silently left out
        warn(f"left out: {message}")
    if json_out:
        from evalh.jsonio import document_text

        sys.stdout.write(document_text([row.to_dict() for row in rows]))
        return
    from evalh.report.terminal.runs import render_runs, write_runs

    title = f"runs in {store.runs_dir}"
    width = plain_width()
    if width is not None:  # piped: the same text, written without rich
        write_runs(rows, title, width, sys.stdout)
        return
    from evalh.console import out

    render_runs(rows, title, out())


@translate_errors
def show(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="A run id (see `evalh runs`) or a path to a run document.")],
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Print one run: its results table, the cases that did not pass, and the figures its
    suites hold (verdicts, per-lens classification, judging, pairwise consistency) (--json:
    the whole document).

    Exit 0; 2 when the run is missing or its document unreadable.

    Examples:

        evalh show 20261129T201530123Z-3fa9c1

        evalh show eval_runs/20261129T201530123Z-3fa9c1.json --json
    """
    from evalh.console import out
    from evalh.run_results import open_results

    store = open_store(runs_dir, config)
    results = open_results(store, run_id)  # the header validated; the results as they are read
    if json_out:  # the document as it is stored, copied a block at a time
        import codecs

        for _ in results:  # every result validated first: a damaged document is one line, exit 2
            pass
        text = codecs.getincrementaldecoder("utf-8")()  # a character cut between two blocks
        with store.resolve(run_id).open("rb") as fh:
            while block := fh.read(1 << 20):
                out().file.write(text.decode(block))
        out().file.write(text.decode(b"", final=True))
        return
    from evalh.console import safe_text
    from evalh.report import build_report
    from evalh.report.render import render_figures
    from evalh.report.terminal.run import render_run

    # one reading of the results: the report's figures, and the first failures of each suite
    run = results.header
    failures: dict[str, list[CaseResult]] = {name: [] for name in run.suites}
    not_passed = dict.fromkeys(run.suites, 0)

    def visit(_at: int, _run: str, suite: str, r: CaseResult) -> None:
        if r.status in ("failed", "errored", "judge_error"):
            not_passed[suite] += 1
            if len(failures[suite]) < SHOWN_FAILURES:
                failures[suite].append(r)

    report = build_report([results], visit=visit)  # per-lens, judging, pairwise, verdicts: as evalh report
    for name, suite in run.suites.items():
        suite.cases = failures[name]
    git = run.git.sha[:10] + ("-dirty" if run.git.dirty else "") if run.git.sha else "not a git repo"
    # the run id is the table's title: this line stays within 80 columns
    out().print(safe_text(f"{run.status}  started {run.started_at}  git {git}  seed {run.seed}"))
    render_run(run, out(), max_failures=SHOWN_FAILURES, not_passed=not_passed)
    for head in report.runs:  # a configured suite skipped for its key: not measured
        for line in head.not_run:
            out().print(safe_text(line, style="yellow"))
    render_figures(report, out())
