"""`evalh runs` and `evalh show`."""

from __future__ import annotations

from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, RunsDirOpt
from evalh.cli.project import open_project, open_store


@translate_errors
def runs(
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="Show the newest N runs.")] = 20,
    runs_dir: RunsDirOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List runs, newest last: id, label, status, git sha, and per-suite pass rates.

    The BASELINE run is marked. Exit 0 (also when there are no runs); 2 on bad input.

    Examples:

        evalh runs

        evalh runs -n 5 --json
    """
    import orjson
    from rich.table import Table

    from evalh.baseline import read_baseline_ids
    from evalh.console import out, safe_text, warn
    from evalh.errors import RunDocumentError
    from evalh.run_header import read_run_header

    root, store = open_project(config, runs_dir)
    baseline = set(read_baseline_ids(root) or ())  # a pooled baseline marks each of its runs
    # newest first, header only, until `limit` are listed: memory is one header at a time
    # and the documents older than the newest `limit` readable ones are not opened
    headers = []
    for ref in reversed(store.list_ids()):
        if len(headers) == limit:
            break
        try:
            headers.append(read_run_header(store.path_for(ref)))
        except RunDocumentError as exc:  # named, not silently left out
            warn(f"left out: {exc.message}")
    rows = [
        {
            "run_id": h.run_id, "label": h.label, "status": h.status, "started_at": h.started_at,
            "git_sha": h.git_sha, "dirty": h.git_dirty, "baseline": h.run_id in baseline,
            "suites": h.pass_rates,
        }
        for h in reversed(headers)
    ]
    if json_out:
        out().file.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    table = Table(title=safe_text(f"runs in {store.runs_dir}"), title_justify="left")
    for col in ("run id", "label", "status", "git", "suites (pass rate)"):
        table.add_column(col)
    for row in rows:
        sha = (row["git_sha"] or "–")[:8] + ("*" if row["dirty"] else "")
        rates = "  ".join(f"{n} {'n/a' if v is None else f'{v:.0%}'}" for n, v in row["suites"].items())
        rid = row["run_id"] + (" (BASELINE)" if row["baseline"] else "")
        table.add_row(safe_text(rid), safe_text(row["label"] or ""), safe_text(row["status"]), safe_text(sha), safe_text(rates))
    out().print(table)


@translate_errors
def show(
    run_id: Annotated[str, typer.Argument(help="A run id (see `evalh runs`) or a path to a run document.")],
    runs_dir: RunsDirOpt = None,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Print one run: its results table and the cases that did not pass (--json: the whole document).

    Exit 0; 2 when the run is missing or its document unreadable.

    Examples:

        evalh show 20261129T201530123Z-3fa9c1

        evalh show eval_runs/20261129T201530123Z-3fa9c1.json --json
    """
    from evalh.cli.render_run import render_run
    from evalh.console import out

    run = open_store(runs_dir, config).load(run_id)
    if json_out:
        out().file.write(run.to_json_bytes().decode() + "\n")
        return
    from evalh.console import safe_text

    git = run.git.sha[:10] + ("-dirty" if run.git.dirty else "") if run.git.sha else "not a git repo"
    # the run id is the table's title: this line stays within 80 columns
    out().print(safe_text(f"{run.status}  started {run.started_at}  git {git}  seed {run.seed}"))
    render_run(run, out(), max_failures=1000)
