"""`evalh baseline set RUN_ID` and `evalh baseline show`."""

from __future__ import annotations

from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, RunsDirOpt

app = typer.Typer(
    name="baseline",
    help=(
        "The BASELINE marker: the run `evalh compare` and `evalh run --compare-baseline` "
        "compare against. A text file at the project root holding one run id; commit it."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("set")
@translate_errors
def set_(
    run: Annotated[str, typer.Argument(
        metavar="RUN_ID", help="Run id (see `evalh runs`) or path to a run document.")],
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
) -> None:
    """Make RUN_ID the baseline: write its id to BASELINE at the project root.

    The run must exist in the runs directory and be a valid run document. A run that is
    not complete can be the baseline, with a warning. Exit 0; 2 on a missing or unreadable run.

    Examples:

        evalh baseline set 20261129T201530123Z-3fa9c1 && git add BASELINE
    """
    from evalh.baseline import write_baseline
    from evalh.cli.project import open_project
    from evalh.console import err, warn

    root, store = open_project(config, runs_dir)
    loaded = store.load(run)
    if not store.path_for(loaded.run_id).is_file():
        warn(f"{run} is not in {store.runs_dir}: `evalh compare` will look for "
             f"{loaded.run_id} there")
    if loaded.status != "complete":
        warn(f"run {loaded.run_id} is {loaded.status}: comparisons against it say so")
    path = write_baseline(root, loaded.run_id)
    err().print(f"baseline: {loaded.run_id} (wrote {path})", markup=False, highlight=False)


@app.command("show")
@translate_errors
def show(
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Print the baseline run id (stdout); exit 2 when no baseline is set.

    Examples:

        evalh baseline show

        evalh show "$(evalh baseline show)"
    """
    import orjson

    from evalh.baseline import baseline_path, require_baseline
    from evalh.cli.project import open_project
    from evalh.console import out, warn
    from evalh.errors import RunNotFound

    root, store = open_project(config, runs_dir)
    run_id = require_baseline(root)
    try:
        exists = store.resolve(run_id) is not None
    except RunNotFound:
        exists = False
        warn(f"BASELINE names {run_id}, which is not in {store.runs_dir}")
    if json_out:
        doc = {"run_id": run_id, "path": str(baseline_path(root)), "run_exists": exists}
        out().file.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        out().file.write(run_id + "\n")
